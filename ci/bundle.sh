#!/usr/bin/env bash
# Makes the relocatable bundle of the torch-free `lockstep` (docs/install.md):
# a tarball that runs wherever it is extracted, in an image without Debian
# 12's libraries (a team's PyTorch image, Ubuntu 24.04, a venv image).
#
#   ci/bundle.sh [BUILD_DIR] [OUT_DIR]
#     -> OUT_DIR/lockstep-<version>-linux-x86_64.tar.gz  (default: BUILD_DIR)
#
# It holds `cmake --install --strip` of BUILD_DIR (bin/lockstep, the Python
# helper, CI template, hook, schema, docs, man page) without lockstep-torch
# (built-in LibTorch smokes stay a Debian package and an image), plus the
# `bundle` component: every shared library bin/lockstep needs but glibc,
# libstdc++ and libgcc_s, in lib/lockstep/, found through the executable's
# RPATH ($ORIGIN/../lib/lockstep, CMakeLists.txt). The oldest glibc and
# libstdc++ the host must have are read from the symbol versions the binary
# and the bundled libraries ask for and written to share/lockstep/BUNDLE.
# Exit: 0 made, 1 a step failed, 2 usage.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -le 2 ] || { echo "usage: ci/bundle.sh [BUILD_DIR] [OUT_DIR]" >&2; exit 2; }
build="$(realpath "${1:-build}")"
out="$(realpath "${2:-$build}")"
[ -x "$build/lockstep" ] || { echo "bundle: $build/lockstep: not built (bash ci/build.sh $build)" >&2; exit 2; }
version=$("$build/lockstep" --version | awk '{print $2}')
name="lockstep-$version-linux-$(uname -m)"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
root="$stage/lockstep-$version"

cmake --install "$build" --prefix "$root" --strip >/dev/null
cmake --install "$build" --prefix "$root" --component bundle >/dev/null
rm -f "$root/bin/lockstep-torch"
[ -d "$root/lib/lockstep" ] || { echo "bundle: no lib/lockstep/ was installed (CMake's bundle component)" >&2; exit 1; }
# Debian's libraries carry their debug symbols apart already; strip what is left.
strip --strip-unneeded "$root"/lib/lockstep/*.so* 2>/dev/null || true

# The oldest host runtime that runs it: the newest symbol version asked for.
newest() {  # newest() PREFIX FILES... : the highest PREFIX_x.y[.z] version in their dynamic symbols
  local prefix=$1
  shift
  objdump -T "$@" 2>/dev/null | grep -o "${prefix}_[0-9][0-9.]*" | sed "s/^${prefix}_//" | sort -V | tail -n 1
}
glibc=$(newest GLIBC "$root/bin/lockstep" "$root"/lib/lockstep/*.so*)
glibcxx=$(newest GLIBCXX "$root/bin/lockstep" "$root"/lib/lockstep/*.so*)
cat > "$root/share/lockstep/BUNDLE" <<EOF
lockstep $version, relocatable bundle for linux-$(uname -m)
built on: $(. /etc/os-release; echo "$PRETTY_NAME")
needs from the host: glibc >= $glibc, libstdc++ with GLIBCXX_$glibcxx (g++ >= the one that provides it), libgcc_s
bundled (lib/lockstep/): $(cd "$root/lib/lockstep" && ls | tr '\n' ' ')
not bundled: lockstep-torch (built-in LibTorch smokes: the Debian package or the image)
EOF

mkdir -p "$out"
tar -C "$stage" --owner=0 --group=0 --numeric-owner --sort=name -czf "$out/$name.tar.gz.part" "lockstep-$version"
mv "$out/$name.tar.gz.part" "$out/$name.tar.gz"
echo "bundle: $out/$name.tar.gz ($(du -k "$out/$name.tar.gz" | cut -f1) KiB; needs glibc >= $glibc, GLIBCXX_$glibcxx)"
