#!/usr/bin/env bash
# Compiles and links lockstep's CUDA code paths against Debian's CUDA
# LibTorch (contrib: libtorch-cuda-dev 2.6, with the CUDA toolkit from
# non-free), in a Debian 13 root made by ci/stack.sh, on a machine without
# a GPU:
#   sudo bash ci/stack.sh trixie --run 'bash ci/cuda-build.sh'
#
# Not part of the test command: it downloads about 4 GB of CUDA packages
# into the root (gone with it). What it holds:
#   1. CMake finds the CUDA LibTorch (TORCH_CUDA_LIBRARIES), so lockstep_torch
#      is compiled with LOCKSTEP_TORCH_HAS_CUDA=1, and torch_compat.h finds
#      the caching allocator's headers (else it stops with #error);
#   2. lockstep, lockstep-torch and cuda_probe link, and lockstep-torch's
#      dynamic section names libtorch_cuda.so and libc10_cuda.so;
#   3. with no GPU, a smoke on `device: "cuda"` is exit 3 naming what is
#      missing, and `check` on the CPU still passes the smoke;
#   4. the torch-linked tests (ctest -L torch) pass on the CPU against it.
#
# cuDNN is stood in for. Debian's nvidia-cudnn (libtorch-cuda-2.6 depends
# on it) is an installer that downloads cuDNN from NVIDIA's site, which no
# machine here reaches. A stand-in package of that name satisfies apt; the
# link ignores libtorch_cuda.so's cuDNN symbols
# (--unresolved-symbols=ignore-in-shared-libs, this build only), and step 3
# runs with a stand-in libcudnn.so.9: every function libtorch_cuda.so names,
# none doing anything (lockstep never calls cuDNN without a GPU).
#
# Exit: 0 every step held, 1 one did not, 2 not run in a Debian 13 chroot
# (it rewrites apt's sources and replaces libtorch-dev: never on a host).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! ischroot || [ "$(. /etc/os-release; echo "${VERSION_CODENAME:-}")" != trixie ]; then
  echo "cuda-build: run it in a Debian 13 root: sudo bash ci/stack.sh trixie --run 'bash ci/cuda-build.sh'" >&2
  exit 2
fi
t0=$(date +%s)
elapsed() { echo "$(( $(date +%s) - t0 )) s"; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# contrib (the CUDA LibTorch) and non-free (CUDA itself) beside main.
sed -i 's/^\(deb .* trixie\) main$/\1 main contrib non-free/' /etc/apt/sources.list
grep -q 'contrib non-free' /etc/apt/sources.list || {
  echo "cuda-build: /etc/apt/sources.list has no 'deb ... trixie main' line to extend" >&2
  exit 2
}

# The stand-in for nvidia-cudnn (>= 9.0.0.312~, libtorch-cuda-2.6's
# dependency): an empty package of that name.
mkdir -p "$work/cudnn/DEBIAN"
cat >"$work/cudnn/DEBIAN/control" <<'EOF'
Package: nvidia-cudnn
Version: 9.99.0~lockstep-stand-in
Architecture: amd64
Maintainer: lockstep <lockstep@localhost>
Description: stand-in for the cuDNN downloader (ci/cuda-build.sh)
EOF
dpkg-deb --build "$work/cudnn" "$work/nvidia-cudnn.deb" >/dev/null
dpkg -i "$work/nvidia-cudnn.deb" >/dev/null

apt-get update -qq
echo "cuda-build: installing libtorch-cuda-dev, nvidia-cuda-toolkit ($(elapsed))"
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  libtorch-cuda-dev nvidia-cuda-toolkit nvidia-cuda-dev >/dev/null
echo "cuda-build: $(dpkg-query -W -f '${Package} ${Version}' libtorch-cuda-dev), nvcc $(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p') ($(elapsed))"

status=0
held() { echo "cuda-build: $1: ok"; }
failed() { echo "cuda-build: $1: FAILED" >&2; status=1; }

# The stand-in cuDNN: the version node libtorch_cuda.so binds to and every
# cuDNN function it names (the loader resolves those whose address LibTorch
# takes when it loads), each returning 0 but cudnnGetVersion (9.1.0).
torch_cuda=$(ls /usr/lib/x86_64-linux-gnu/libtorch_cuda.so.* | head -n 1)
printf 'libcudnn.so.9 { global: *; };\n' >"$work/cudnn.map"
{
  echo '#include <stddef.h>'
  echo 'size_t cudnnGetVersion(void) { return 90100; }'
  nm -D --undefined-only "$torch_cuda" | awk '{print $NF}' | sed -n 's/@libcudnn\.so\.9$//p' |
    grep -vx cudnnGetVersion | sort -u | sed 's/.*/int &(void) { return 0; }/'
} >"$work/cudnn.c"
echo "cuda-build: stand-in libcudnn.so.9: $(grep -c '^int ' "$work/cudnn.c") functions that $torch_cuda names"
gcc -shared -fPIC -Wl,-soname,libcudnn.so.9 -Wl,--version-script,"$work/cudnn.map" -o "$work/libcudnn.so.9" \
  "$work/cudnn.c"
# Before the build: it runs the test programs to list their tests.
export LD_LIBRARY_PATH="$work"

build=build-cuda
LOCKSTEP_TARGETS="lockstep lockstep-torch cuda_probe lockstep_torch_tests tensor_stats_tool" bash ci/build.sh "$build" \
  -DLOCKSTEP_BUILD_TESTS=ON -DCMAKE_EXE_LINKER_FLAGS="-Wl,--unresolved-symbols=ignore-in-shared-libs"
echo "cuda-build: built ($(elapsed))"

# 1. Compiled as a CUDA build.
if grep -q 'LOCKSTEP_TORCH_HAS_CUDA=1' "$build/build.ninja"; then
  held "lockstep_torch compiled with LOCKSTEP_TORCH_HAS_CUDA=1 (torch_compat.h found the caching allocator)"
else
  failed "CMake did not see a CUDA LibTorch (no LOCKSTEP_TORCH_HAS_CUDA=1 in $build/build.ninja)"
fi
# 2. Linked against LibTorch's CUDA libraries.
for lib in libtorch_cuda.so libc10_cuda.so; do
  if readelf -d "$build/lockstep-torch" | grep -q "NEEDED.*\[$lib"; then
    held "lockstep-torch needs $lib"
  else
    failed "lockstep-torch does not need $lib (readelf -d)"
  fi
done
# 3. Run without a GPU: a smoke on device cuda is exit 3, naming what is
# missing; on the CPU the smoke still passes against its golden.
python3 -c "import json, sys; c = json.load(open('smoke/wine-mlp.json')); c['device'] = 'cuda'
c.pop('platforms', None); json.dump(c, open(sys.argv[1], 'w'))" "$work/wine-mlp-cuda.json"
rc=0
"$build/lockstep" run "$work/wine-mlp-cuda.json" --record "$work/cuda.json" >"$work/cuda.log" 2>&1 || rc=$?
sed 's/^/  | /' "$work/cuda.log" | tail -n 8
if [ "$rc" -eq 3 ]; then
  held "run on device cuda without a GPU: exit 3"
else
  failed "run on device cuda without a GPU: exit $rc, not 3"
fi
rc=0
"$build/lockstep" check smoke/wine-mlp.json --out "$work/out-cpu" -q >"$work/cpu.log" 2>&1 || rc=$?
tail -n 3 "$work/cpu.log" | sed 's/^/  | /'
if [ "$rc" -eq 0 ]; then held "check on the CPU, CUDA build"; else failed "check on the CPU, CUDA build: exit $rc"; fi
# 4. The torch-linked tests, on the CPU, against the CUDA LibTorch.
if (cd "$build" && ctest -j 2 -L torch --output-on-failure >"$work/ctest.log" 2>&1); then
  held "ctest -L torch: $(grep -o '[0-9]*% tests passed.*' "$work/ctest.log" | head -n 1)"
else
  grep -E 'tests passed|Failed|\*\*\*' "$work/ctest.log" | sed 's/^/  | /' | tail -n 20
  failed "ctest -L torch in the CUDA build"
fi
echo "cuda-build: $([ "$status" -eq 0 ] && echo passed || echo FAILED) ($(elapsed))"
exit "$status"
