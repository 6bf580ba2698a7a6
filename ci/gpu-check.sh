#!/usr/bin/env bash
# The GPU verification of the CUDA path as one command, for a machine with an NVIDIA
# GPU whose python3 has a CUDA torch (the `device` machine: torch 2.11 +
# CUDA 13). Results are printed and saved under ${OUT:-gpu-check-out}/.
#
#   bash ci/gpu-check.sh      # about 2 min for the probe; full build if deps allow
#
# 1. facts: nvidia-smi and Python torch's own view;
# 2. tests/gpu/cuda_probe.cpp built with g++ against that LibTorch (it needs
#    nothing else): strict contract read back, every CUDA fingerprint field,
#    the platform key, identical bits from a seeded GPU step run twice, and
#    the caching allocator's peak;
# 3. when the build's other dependencies are installed (ci/deps.sh's
#    packages), the whole lockstep against that LibTorch: `env --device cuda
#    --json`, then a CUDA copy of the tokens-transformer smoke (synthetic
#    data, no download) blessed and checked in a scratch project. The golden
#    lands in the output folder, ready to be committed as goldens/…/cuda-smXY.json.
# Exit status: 0 every step passed; 1 a probe check failed; 2 the probe or
# the full build could not be built (logs in the output folder); 3 CUDA is
# not usable here (the probe says why; nothing else runs); otherwise the
# exit status of the lockstep command that failed. GPU_CHECK_PROBE_ONLY=1
# stops after step 2.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-gpu-check-out}"
mkdir -p "$out"
jobs="$(nproc)"

echo "== facts"
nvidia-smi -L 2>&1 | tee "$out/nvidia-smi.txt"
python3 - <<'PY' 2>&1 | tee "$out/python-torch.txt"
import torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(),
      "nccl", torch.cuda.nccl.version() if torch.cuda.is_available() else None,
      "capability", torch.cuda.get_device_capability(0) if torch.cuda.is_available() else None,
      "cxx11_abi", torch.compiled_with_cxx11_abi())
print(torch.__config__.show())
PY

# TORCH_DIR (with include/ and lib/) and TORCH_CXX11_ABI override Python's torch.
torch_dir="${TORCH_DIR:-$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__))')}"
abi="${TORCH_CXX11_ABI:-$(python3 -c 'import torch; print(int(torch.compiled_with_cxx11_abi()))')}"
# cuda_runtime_api.h for c10/cuda/CUDACachingAllocator.h: the toolkit's, or the pip wheel's.
cuda_inc=""
for d in /usr/local/cuda/include $(python3 -c 'import site; print(" ".join(site.getsitepackages()))'); do
  f="$(find "$d" -name cuda_runtime_api.h -path '*include*' 2>/dev/null | head -n 1)"
  if [ -n "$f" ]; then cuda_inc="$(dirname "$f")"; break; fi
done
echo "LibTorch: $torch_dir (cxx11 abi $abi), CUDA headers: ${cuda_inc:-none found}"

echo "== cuda_probe"
sources=(tests/gpu/cuda_probe.cpp src/env/cuda_preflight.cpp src/machine/cuda_driver.cpp
         src/machine/cuda_libraries.cpp src/machine/cuda_usability.cpp src/machine/driver_version.cpp
         src/machine/torch_config_text.cpp src/determinism/contract.cpp src/core/error.cpp)
objects=()
for s in "${sources[@]}"; do
  o="$out/obj/$(basename "$s" .cpp).o"
  objects+=("$o")
  mkdir -p "$out/obj"
  g++ -std=c++17 -O1 -D_GLIBCXX_USE_CXX11_ABI="$abi" -Isrc -isystem "$torch_dir/include" \
      -isystem "$torch_dir/include/torch/csrc/api/include" ${cuda_inc:+-isystem "$cuda_inc"} \
      -c "$s" -o "$o" 2>"$o.log" &
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
done
wait
cat "$out"/obj/*.log > "$out/probe-build.txt"
# libtorch_cuda must stay linked although nothing names its symbols
# (docs/libtorch.md §0, "Linking the CUDA backend").
cuda_libs=()
[ -e "$torch_dir/lib/libtorch_cuda.so" ] && cuda_libs=(-Wl,--no-as-needed -ltorch_cuda -lc10_cuda -Wl,--as-needed)
g++ "${objects[@]}" -o "$out/cuda_probe" -L"$torch_dir/lib" -Wl,-rpath,"$torch_dir/lib" \
    "${cuda_libs[@]}" -ltorch -ltorch_cpu -lc10 -ldl 2>>"$out/probe-build.txt"
rm -rf "$out/obj"
if [ ! -x "$out/cuda_probe" ]; then
  head -n 40 "$out/probe-build.txt"
  echo "gpu-check: cuda_probe could not be built (all messages: $out/probe-build.txt)"
  exit 2
fi
"$out/cuda_probe" 2>&1 | tee "$out/cuda_probe.txt"
probe_rc="${PIPESTATUS[0]}"
echo "cuda_probe exit $probe_rc"
if [ "$probe_rc" = 3 ]; then
  echo "gpu-check: CUDA is not usable here (reason above); nothing else to run"
  exit 3
fi

echo "== full build"
[ "${GPU_CHECK_PROBE_ONLY:-0}" = 1 ] && exit "$probe_rc"
missing=()
for h in nlohmann/json.hpp simdjson.h xxhash.h git2.h CLI/CLI.hpp gtest/gtest.h opencv4/opencv2/core.hpp zlib.h; do
  [ -e "/usr/include/$h" ] || [ -e "/usr/local/include/$h" ] || missing+=("$h")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "skipped: headers missing here: ${missing[*]} (install ci/deps.sh's packages)" | tee "$out/full-build.txt"
  exit "$probe_rc"
fi
if [ -n "${TORCH_DIR:-}" ]; then
  prefix="$TORCH_DIR/share/cmake"
else
  prefix="$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')"
fi
cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_PREFIX_PATH="$prefix" \
  >"$out/cmake.txt" 2>&1 && cmake --build build-cuda -j "$jobs" --target lockstep >>"$out/cmake.txt" 2>&1 \
  || { tail -n 40 "$out/cmake.txt"; echo "gpu-check: the full build failed (log: $out/cmake.txt)"; exit 2; }
set -o pipefail
./build-cuda/lockstep env --device cuda --format json | tee "$out/env-cuda.json" || exit

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/smoke"
python3 - "$scratch/smoke/tokens-transformer-cuda.json" <<'PY'
import json, sys
cfg = json.load(open("smoke/tokens-transformer.json"))
cfg["name"] = "tokens-transformer-cuda"
cfg["device"] = "cuda"
cfg.pop("platforms", None)
json.dump(cfg, open(sys.argv[1], "w"), indent=2)
PY
(cd "$scratch" && git init -q && git add -A && git -c user.name=gpu-check -c user.email=gpu-check@localhost commit -qm smoke) || exit 2
lockstep="$PWD/build-cuda/lockstep"
(cd "$scratch" && env -u CI "$lockstep" bless smoke/tokens-transformer-cuda.json \
   --reason "first CUDA golden, from ci/gpu-check.sh") 2>&1 | tee "$out/bless.txt" || exit
(cd "$scratch" && "$lockstep" check smoke/tokens-transformer-cuda.json) 2>&1 | tee "$out/check.txt" || exit
cp "$scratch"/goldens/tokens-transformer-cuda/*.json "$out/"

# Informational: does the index_put_ self-test make CUDA runs differ in
# default mode (as on CPU)? CUDA's accumulate kernel may sort, and so be
# deterministic; exit 4 means the self-test works on CUDA too.
python3 - "$scratch/smoke/tokens-transformer-cuda.json" <<'PY'
import json, sys
cfg = json.load(open(sys.argv[1]))
cfg["inject_nondeterminism"] = "index_put_accumulate"
cfg["determinism"] = {"mode": "default", "intra_op_threads": 2, "inter_op_threads": 1}
cfg.pop("resume_at", None)
json.dump(cfg, open(sys.argv[1].replace(".json", "-inject.json"), "w"), indent=2)
PY
inject_rc=0
(cd "$scratch" && "$lockstep" run smoke/tokens-transformer-cuda-inject.json --repeat 3 --record inject.json) \
  >"$out/inject.txt" 2>&1 || inject_rc=$?
echo "index_put_ self-test on CUDA: exit $inject_rc (4: the runs differ, as on CPU)" | tee -a "$out/inject.txt"
echo "gpu-check: probe exit $probe_rc, full build, env, bless and check passed"
exit "$probe_rc"
