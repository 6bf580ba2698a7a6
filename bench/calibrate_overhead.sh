#!/usr/bin/env bash
# `lockstep calibrate`'s own cost: digits-cnn over 4 axis points x 2
# repeats (threads=1,2 x capability=default,avx2; no detection search),
# its wall time against the ideal of its runs on this machine's cores:
#   runs x one run's wall time (at its point, median of R) / cores,
# and the ratio (goal: <= 1.2, the harness adds at most 20 % to the runs).
# The ideal counting the second core a 2-thread run can use is printed too;
# each time with its user and system time (bench/timing.sh).
#   bench/calibrate_overhead.sh [R] [SMOKE]   (default 3 smoke/digits-cnn.json; needs a build in build/)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-3}"
smoke="${2:-smoke/digits-cnn.json}"
lockstep="$PWD/build/lockstep"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cores=$(nproc)

source bench/timing.sh
export TIMED_LOG="$work/log"
wall() { median_line "$1" | cut -d' ' -f1; }  # the median wall time of a file of run_timed lines
"$lockstep" run "$smoke" --quiet --record "$work/warm.json"   # page cache, file-hash cache
for _ in $(seq "$rounds"); do
  for t in 1 2; do
    for cap in default avx2; do
      run_timed env ATEN_CPU_CAPABILITY=$cap "$lockstep" run "$smoke" --intra-op-threads $t --quiet --record "$work/one.json" >>"$work/t$t-$cap"
    done
  done
  run_timed "$lockstep" calibrate "$smoke" --axis threads=1,2 --axis capability=default,avx2 --repeat 2 --no-detect \
    --out "$work/out" >>"$work/cal"
done
busy=0
flat=0
for t in 1 2; do
  for cap in default avx2; do
    one=$(wall "$work/t$t-$cap")
    printf 'one run at threads=%s capability=%s: %s\n' "$t" "$cap" "$(timed_line "$(median_line "$work/t$t-$cap")")"
    busy=$(awk -v b="$busy" -v o="$one" -v t="$t" 'BEGIN {print b + 2 * o * t}')
    flat=$(awk -v b="$flat" -v o="$one" 'BEGIN {print b + 2 * o}')
  done
done
cal=$(wall "$work/cal")
printf 'calibrate, 4 points x 2 repeats = 8 runs on %d cores: %s (median of %d)\n' "$cores" \
  "$(timed_line "$(median_line "$work/cal")")" "$rounds"
awk -v c="$cal" -v b="$busy" -v f="$flat" -v k="$cores" 'BEGIN {
  printf "ideal (runs x one run / cores): %.2f s; ratio %.2f (goal <= 1.20)\n", f / k, c * k / f
  printf "ideal counting a core per intra-op thread: %.2f s; ratio %.2f\n", b / k, c * k / b }'
