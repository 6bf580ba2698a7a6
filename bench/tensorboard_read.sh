#!/usr/bin/env bash
# TensorBoard ingest speed (bench/tensorboard_read.cpp): writes a folder of
# STEPS x 8 scalar events (default 1,000,000 steps, about 440 MB) into a
# temporary folder, then prints read_metrics' time, libprotobuf's parse-only
# time over the same records, their ratio (goal >= 0.5) and read + compare
# (goal <= 2 s on 2 cores). Builds without LibTorch into build-bench/
# (LOCKSTEP_BENCH_BUILD names another build folder).
#   bench/tensorboard_read.sh [STEPS]
set -euo pipefail
cd "$(dirname "$0")/.."
steps="${1:-1000000}"
build="${LOCKSTEP_BENCH_BUILD:-build-bench}"
cmake -S . -B "$build" -G Ninja -DLOCKSTEP_WITH_TORCH=OFF -DLOCKSTEP_BUILD_BENCH=ON >/dev/null
ninja -C "$build" -j2 tensorboard_read >/dev/null
dir=$(mktemp -d "${TMPDIR:-/tmp}/lockstep-tb-bench.XXXXXX")
trap 'rm -rf "$dir"' EXIT
"$build/bench/tensorboard_read" generate "$dir" "$steps" 8 >/dev/null
"$build/bench/tensorboard_read" time "$dir" 8 3
