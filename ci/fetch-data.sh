#!/usr/bin/env bash
# Fetches the real datasets the smoke suite trains on, from Debian's archive,
# into lockstep's data cache. Nothing here is committed to the repository.
#
#   scikit-learn's bundled datasets, from python3-sklearn (not installed:
#   the .deb is downloaded with `apt-get download` and unpacked with
#   `dpkg-deb -x`):
#     digits.csv.gz      1797 rows: 64 pixel values 0-16, then the class label
#     wine_data.csv      header row, 178 rows: 13 features, then the class
#     breast_cancer.csv  header row, 569 rows: 30 features, then the class
#
# Every file is checked against the SHA-256 pinned below; a mismatch is an
# error (exit 2), never a silent re-download. Idempotent: files already in
# the cache with the right hash are kept.
#
# Cache folder: $LOCKSTEP_DATA_DIR, else ${XDG_CACHE_HOME:-~/.cache}/lockstep/data
# (the same rule the lockstep binary uses to resolve a smoke's data path).
set -euo pipefail

data_dir="${LOCKSTEP_DATA_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lockstep/data}"
sklearn_pkg="python3-sklearn=1.2.1+dfsg-1"
sklearn_data="usr/lib/python3/dist-packages/sklearn/datasets/data"

declare -A sha256=(
  [digits.csv.gz]=46abec6b12486ad9e51943373abcf22bbea1b5a51a1619b361570d8893f1464a
  [wine_data.csv]=10e8a802908b34f86e5da8ce962f3c806694bc98450a18f61851af59f324bede
  [breast_cancer.csv]=fed3eb72d0575ef6192293f5093c6e801b1476b577d0386bf4455504522172ed
)

have_all() {
  for f in "${!sha256[@]}"; do
    [ -f "$data_dir/$f" ] || return 1
    echo "${sha256[$f]}  $data_dir/$f" | sha256sum --check --status || return 1
  done
}

mkdir -p "$data_dir"
if have_all; then
  echo "fetch-data: ${#sha256[@]} files present in $data_dir"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get download -q "$sklearn_pkg" >/dev/null 2>&1) || {
  # apt's package lists may be missing on a fresh machine.
  apt-get update -qq >/dev/null
  (cd "$work" && apt-get download -q "$sklearn_pkg" >/dev/null 2>&1)
}
dpkg-deb -x "$work"/python3-sklearn_*.deb "$work/x"

for f in "${!sha256[@]}"; do
  src="$work/x/$sklearn_data/$f"
  if ! echo "${sha256[$f]}  $src" | sha256sum --check --status; then
    echo "fetch-data: $f from $sklearn_pkg does not match its pinned SHA-256 ${sha256[$f]}" >&2
    exit 2
  fi
  # Atomic: copy to a temp name in the cache, then rename.
  cp "$src" "$data_dir/.$f.tmp"
  mv -f "$data_dir/.$f.tmp" "$data_dir/$f"
done
echo "fetch-data: fetched ${!sha256[*]} into $data_dir"
