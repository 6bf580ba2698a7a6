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
#   scikit-image's sample photos, from python3-skimage the same way, as an
#   image folder with one subfolder per class (smoke/photos-cnn.json):
#     photos/color/  astronaut, chelsea, coffee (RGB PNG), rocket (JPEG),
#                    logo (RGBA PNG), palette_color (palette PNG)
#     photos/gray/   camera, coins, moon, page (gray PNG), palette_gray
#                    (palette PNG), chessboard_GRAY_U16 (16-bit TIFF)
#     photos-bad/truncated/truncated.jpg   a truncated JPEG, for tests
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
skimage_pkg="python3-skimage=0.19.3-8"
skimage_data="usr/lib/python3/dist-packages/skimage/data"

# cache path -> SHA-256, and where each file comes from (package, file).
declare -A sha256=(
  [digits.csv.gz]=46abec6b12486ad9e51943373abcf22bbea1b5a51a1619b361570d8893f1464a
  [wine_data.csv]=10e8a802908b34f86e5da8ce962f3c806694bc98450a18f61851af59f324bede
  [breast_cancer.csv]=fed3eb72d0575ef6192293f5093c6e801b1476b577d0386bf4455504522172ed
  [photos/color/astronaut.png]=88431cd9653ccd539741b555fb0a46b61558b301d4110412b5bc28b5e3ea6cb5
  [photos/color/chelsea.png]=596aa1e7cb875eb79f437e310381d26b338a81c2da23439704a73c4651e8c4bb
  [photos/color/coffee.png]=cc02f8ca188b167c775a7101b5d767d1e71792cf762c33d6fa15a4599b5a8de7
  [photos/color/rocket.jpg]=c2dd0de7c538df8d111e479619b129464d0269d0ae5fd18ca91d33a7fdfea95c
  [photos/color/logo.png]=f2c57fe8af089f08b5ba523d95573c26e62904ac5967f4c8851b27d033690168
  [photos/color/palette_color.png]=c4e817035fb9f7730fe95cff1da3866dea01728efc72b6e703d78f7ab9717bdd
  [photos/gray/camera.png]=b0793d2adda0fa6ae899c03989482bff9a42d3d5690fc7e3648f2795d730c23a
  [photos/gray/coins.png]=f8d773fc9cfa6f4d8e5942dc34d0a0788fcaed2a4fefbbed0aef5398d7ef4cba
  [photos/gray/moon.png]=78739619d11f7eb9c165bb5d2efd4772cee557812ec847532dbb1d92ef71f577
  [photos/gray/page.png]=341a6f0a61557662b02734a9b6e56ec33a915b2c41886b97509dedf2a43b47a3
  [photos/gray/palette_gray.png]=bace7f73783bf3ab3b7fdaf701707e4fa09f0dbd0ea72cf5b12ddc73d50b02a9
  [photos/gray/chessboard_GRAY_U16.tif]=9fd3392c5b6cbc5f686d8ff83eb57ef91d038ee0852ac26817e5ac99df4c7f45
  [photos-bad/truncated/truncated.jpg]=4c226038acc78012d335efba29c6119a24444a886842182b7e18db378f4a557d
)
source_of() {  # cache path -> "package-glob path-in-package"
  case "$1" in
    photos*) echo "python3-skimage_*.deb $skimage_data/$(basename "$1")" ;;
    *) echo "python3-sklearn_*.deb $sklearn_data/$1" ;;
  esac
}

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
# The pinned versions are Debian 12's. Another release (Debian 13, sid)
# does not serve them through apt, and its own differ in their bytes (the
# goldens pin the files' hashes): there the same .debs come from the
# archive's pool, by URL, checked against their pinned SHA-256.
download() {
  (cd "$work" && apt-get download -q "$@" >/dev/null 2>&1)
}
declare -A pool=(
  [python3-sklearn]="pool/main/s/scikit-learn/python3-sklearn_1.2.1+dfsg-1_all.deb ca0c6be401d14871c7e93cfdd8d1f561595dc65e6e2ad2501d568aee7f7efc58"
  [python3-skimage]="pool/main/s/skimage/python3-skimage_0.19.3-8_all.deb 728d88c3e3440f1f3712de0805dc834d29248ff07e1eec8c0f3da07606f752f9"
)
from_pool() {
  local mirror name file sum
  mirror=$(bash "$(dirname "$0")/debian-mirror.sh")
  for name in python3-sklearn python3-skimage; do
    read -r file sum <<<"${pool[$name]}"
    curl -fsSL --retry 2 -o "$work/$(basename "$file")" "${mirror%/}/$file" || return 1
    echo "$sum  $work/$(basename "$file")" | sha256sum --check --status || {
      echo "fetch-data: ${mirror%/}/$file does not match its pinned SHA-256 $sum" >&2
      exit 2
    }
  done
}
download "$sklearn_pkg" "$skimage_pkg" || {
  # apt's package lists may be missing on a fresh machine.
  apt-get update -qq >/dev/null || true
  download "$sklearn_pkg" "$skimage_pkg" || from_pool || {
    echo "fetch-data: cannot download $sklearn_pkg and $skimage_pkg from Debian's archive" >&2
    exit 3
  }
}
dpkg-deb -x "$work"/python3-sklearn_*.deb "$work/x"
dpkg-deb -x "$work"/python3-skimage_*.deb "$work/x"

for f in "${!sha256[@]}"; do
  read -r _ inner <<<"$(source_of "$f")"
  src="$work/x/$inner"
  if ! echo "${sha256[$f]}  $src" | sha256sum --check --status; then
    echo "fetch-data: $f ($inner) does not match its pinned SHA-256 ${sha256[$f]}" >&2
    exit 2
  fi
  # Atomic: copy to a hidden temp name beside the target (image folders
  # skip dotfiles), then rename.
  dir=$(dirname "$data_dir/$f")
  mkdir -p "$dir"
  cp "$src" "$dir/.$(basename "$f").tmp"
  mv -f "$dir/.$(basename "$f").tmp" "$data_dir/$f"
done
echo "fetch-data: fetched ${!sha256[*]} into $data_dir"
