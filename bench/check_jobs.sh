#!/usr/bin/env bash
# `lockstep check -j N`: the wall time of the smoke suite checked one child
# run at a time (-j 1) and with N jobs (default 2), alternately, median of
# R rounds each (default 3); prints both, with the user and system time
# of each (bench/timing.sh), and the
# ratio (goal on 2 cores: -j 2 <= 0.6 x -j 1). The verdicts must not
# change with N: the script also fails if the two junit files differ.
# A multi-rank smoke of N ranks or more holds every slot at any -j: its
# check alone at -j 1 (timed in each round too) runs no faster at -j N,
# so the script also prints the lowest ratio the suite allows, that part
# serial and the rest packed perfectly on N cores.
#   bench/check_jobs.sh [R] [N] [SMOKES]     (default 3 2 smoke/; needs a build in build/)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-3}"
jobs="${2:-2}"
smokes="${3:-smoke/}"
lockstep="$PWD/build/lockstep"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

source bench/timing.sh
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
one() {  # one check with -j $1: appends "wall user sys" to $work/j$1
  TIMED_LOG="$work/log-$1" run_timed "$lockstep" check $smokes -j "$1" --out "$work/out-$1" >>"$work/j$1"
}
# The multi-rank smokes with at least N ranks (distributed.world_size).
wide=()
while IFS= read -r f; do
  ws=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("distributed", {}).get("world_size", 1))' "$f" 2>/dev/null || echo 1)
  [ "$ws" -ge "$jobs" ] && wide+=("$f")
done < <(find $smokes -maxdepth 1 -name '*.json' 2>/dev/null | sort)
"$lockstep" check $smokes -j 1 --out "$work/warm" >/dev/null 2>&1 || true   # page cache, file-hash cache
for _ in $(seq "$rounds"); do
  one 1
  one "$jobs"
  if [ "${#wide[@]}" -gt 0 ]; then
    t0=$(date +%s.%N)
    "$lockstep" check "${wide[@]}" -j 1 --out "$work/out-wide" >/dev/null 2>&1 || true
    t1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}' >>"$work/wide"
  fi
done
s1=$(median_line "$work/j1" | cut -d' ' -f1)
sn=$(median_line "$work/j$jobs" | cut -d' ' -f1)
printf 'check %s -j 1:  %s   median of %d\n' "$smokes" "$(timed_line "$(median_line "$work/j1")")" "$rounds"
printf 'check %s -j %d:  %s   median of %d\n' "$smokes" "$jobs" "$(timed_line "$(median_line "$work/j$jobs")")" "$rounds"
awk -v a="$s1" -v b="$sn" -v j="$jobs" 'BEGIN {printf "ratio -j %d / -j 1: %.2f (goal <= 0.60 on 2 cores)\n", j, b / a}'
if [ -s "$work/wide" ]; then
  m=$(median <"$work/wide")
  awk -v m="$m" -v a="$s1" -v j="$jobs" -v n="${#wide[@]}" 'BEGIN {
    printf "the %d smoke(s) of >= %d ranks alone at -j 1: %.2f s (%.0f %% of -j 1), as long at any -j\n", n, j, m, 100 * m / a
    printf "lowest ratio this suite allows on %d cores: %.2f (those serial, the rest packed perfectly)\n", j, (m + (a - m) / j) / a }'
fi
# Same verdicts: the junit files, times aside.
strip() { sed -E 's/ time="[^"]*"//g; s#'"$work"'/out-[0-9]+#OUT#g' "$1"; }
if ! diff <(strip "$work/out-1/junit.xml") <(strip "$work/out-$jobs/junit.xml") >/dev/null; then
  echo "the verdicts differ between -j 1 and -j $jobs" >&2
  exit 1
fi
echo "verdicts (junit) identical"
