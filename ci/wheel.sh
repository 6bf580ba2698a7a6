#!/usr/bin/env bash
# Makes the wheel of the torch-free `lockstep` (docs/install.md): the
# relocatable bundle (ci/bundle.sh) laid out as a platform wheel, so that
# `pip install lockstep-*.whl` in any venv or image puts `lockstep` on PATH
# and `import lockstep` (the Python helper) on sys.path.
#
#   ci/wheel.sh [BUILD_DIR] [OUT_DIR]
#     -> OUT_DIR/lockstep-<version>-py3-none-manylinux_<glibc>_<arch>.whl  (default: BUILD_DIR)
#
# Where pip puts each part (the bundle's layout under the install prefix,
# so the executable's RPATH, $ORIGIN/../lib/lockstep, and its shipped files,
# <exe>/../share/lockstep, hold as in the bundle):
#   lockstep-<v>.data/scripts/lockstep       -> <prefix>/bin/lockstep
#   lockstep-<v>.data/data/lib/lockstep/     -> <prefix>/lib/lockstep/ (the libraries, by soname)
#   lockstep-<v>.data/data/share/            -> <prefix>/share/lockstep/, share/doc/lockstep/
#   lockstep/                                -> site-packages/lockstep (the helper: import lockstep)
# The platform tag is manylinux_<x>_<y> for the newest glibc the binary
# and its libraries ask for (share/lockstep/BUNDLE); it needs libstdc++ as
# BUNDLE says too. Packed with python3-wheel (`python3 -m wheel pack`),
# which writes RECORD. Exit: 0 made, 1 a step failed, 2 usage.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -le 2 ] || { echo "usage: ci/wheel.sh [BUILD_DIR] [OUT_DIR]" >&2; exit 2; }
build="$(realpath "${1:-build}")"
out="$(realpath "${2:-$build}")"
# The python3 with python3-wheel (Debian's, where a pyenv or venv python3
# comes first on PATH without it).
py=""
for candidate in python3 /usr/bin/python3; do
  if "$candidate" -c 'import wheel' 2>/dev/null; then py=$candidate; break; fi
done
[ -n "$py" ] || { echo "wheel: python3-wheel is missing (apt-get install python3-wheel; ci/deps.sh installs it)" >&2; exit 1; }
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT

bash ci/bundle.sh "$build" "$stage" >/dev/null
tar -C "$stage" -xzf "$stage"/lockstep-*-linux-*.tar.gz
bundle=$(ls -d "$stage"/lockstep-*/)
bundle=${bundle%/}
version=$("$bundle/bin/lockstep" --version | awk '{print $2}')
glibc=$(sed -n 's/^needs from the host: glibc >= \([0-9]*\)\.\([0-9]*\).*/\1_\2/p' "$bundle/share/lockstep/BUNDLE")
[ -n "$glibc" ] || { echo "wheel: $bundle/share/lockstep/BUNDLE names no glibc" >&2; exit 1; }
tag="py3-none-manylinux_${glibc}_$(uname -m)"

root="$stage/wheel/lockstep-$version"
data="$root/lockstep-$version.data"
mkdir -p "$data/scripts" "$data/data/lib/lockstep"
install -m 755 "$bundle/bin/lockstep" "$data/scripts/lockstep"
# A zip holds no links: each library once, under the name the loader asks
# for (the soname, which the bundle's links carry).
for f in "$bundle"/lib/lockstep/*; do
  if [ -L "$f" ]; then
    cp "$(realpath "$f")" "$data/data/lib/lockstep/$(basename "$f")"
  elif ! find "$bundle/lib/lockstep" -maxdepth 1 -type l -lname "$(basename "$f")" | grep -q .; then
    cp "$f" "$data/data/lib/lockstep/"
  fi
done
cp -r "$bundle/share" "$data/data/share"
cp -r "$bundle/share/lockstep/python/lockstep" "$root/lockstep"
find "$root" -name __pycache__ -prune -exec rm -rf {} +

dist="$root/lockstep-$version.dist-info"
mkdir -p "$dist"
cat > "$dist/METADATA" <<META
Metadata-Version: 2.1
Name: lockstep
Version: $version
Summary: Catches determinism regressions in deep-learning training: fixed-seed smokes checked against goldens
License: see share/doc/lockstep
Requires-Python: >=3.9
Requires-Dist: numpy
Description-Content-Type: text/markdown

The \`lockstep\` command (torch-free: it gates a team's own trainer) and its
Python helper (\`import lockstep\`), with the native libraries it needs in
<prefix>/lib/lockstep. $(grep '^needs' "$bundle/share/lockstep/BUNDLE").
Built-in LibTorch smokes need lockstep-torch (the Debian package or image).
META
cat > "$dist/WHEEL" <<WHL
Wheel-Version: 1.0
Generator: lockstep ci/wheel.sh
Root-Is-Purelib: false
Tag: $tag
WHL

mkdir -p "$out" "$stage/dist"
"$py" -m wheel pack "$root" -d "$stage/dist" >/dev/null
whl=$(ls "$stage"/dist/*.whl)
mv "$whl" "$out/"
echo "wheel: $out/$(basename "$whl") ($(du -k "$out/$(basename "$whl")" | cut -f1) KiB, $tag)"
