#!/usr/bin/env bash
# Trainer overhead and suite wall time:
#   1. `lockstep run smoke/digits-cnn.json` against bench/bare_train_loop
#      (the same 10 steps on the same batches, no probes, metrics,
#      fingerprint or record), whole processes, median of N each; prints
#      both, with user and system time (bench/timing.sh), and the ratio
#      (goal <= 1.05);
#   2. the wall time of `lockstep check smoke/` after the build (goal < 30 s
#      on 2 cores).
#   bench/run_vs_bare_loop.sh [N]     (default 7; needs ci/fetch-data.sh)
#   LOCKSTEP_BUILD_DIR=build-trixie bench/run_vs_bare_loop.sh   (another build
#   folder: in a stack root, ci/stack.sh trixie --run '...')
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-7}"
build_dir="${LOCKSTEP_BUILD_DIR:-build}"
bash ci/build.sh "$build_dir" -DLOCKSTEP_BUILD_BENCH=ON >/dev/null
ninja -C "$build_dir" -j2 bare_train_loop >/dev/null
data="${LOCKSTEP_DATA_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lockstep/data}/digits.csv.gz"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

source bench/timing.sh
for _ in $(seq "$n"); do
  run_timed "./$build_dir/lockstep" run smoke/digits-cnn.json --record "$work/r.json" --quiet >>"$work/lockstep"
  run_timed "./$build_dir/bench/bare_train_loop" "$data" >>"$work/bare"
done
l=$(median_line "$work/lockstep"); b=$(median_line "$work/bare")
echo "lockstep run (process):  $(timed_line "$l")   median of $n"
echo "bare LibTorch loop:      $(timed_line "$b")"
printf 'ratio:                   %.2f   (goal <= 1.05)\n' "$(awk -v a="${l%% *}" -v b="${b%% *}" 'BEGIN {print a / b}')"
s=$(run_timed "./$build_dir/lockstep" check smoke/ --out "$work/check")
echo "check smoke/ ($(ls smoke/*.json | wc -l) smokes): $(timed_line "$s")   (goal < 30 s)"
