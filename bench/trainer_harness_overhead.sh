#!/usr/bin/env bash
# The harness overhead of `lockstep check` on the example trainer
# (examples/pytorch-trainer) against running the trainer by hand: prints
# the wall time of two training runs by hand (what a developer would do to
# see whether two runs agree), of `check` without the resume check (two
# runs compared bit for bit and against a golden; the data-only pass is
# the golden's, docs/decisions.md entry 29), at -j 1 and the default -j,
# of the full `check` (with resume_at), and the ratios; best of 5
# (LOCKSTEP_BENCH_RUNS), user and system time beside each.
# Goal: check / by hand <= 1.10 at -j 1 and at the default -j.
#   bench/trainer_harness_overhead.sh [BUILD_DIR]   (default build/)
set -euo pipefail
cd "$(dirname "$0")/.."
lockstep="$(realpath "${1:-build}")/lockstep"
repo="$PWD"
py=/usr/bin/python3
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r examples/pytorch-trainer "$work/ex"
rm -rf "$work/ex/goldens"
"$py" - "$work/ex/smoke/pytorch-trainer.json" "$work/ex/smoke-noresume.json" <<'PY'
import json, sys
cfg = json.load(open(sys.argv[1]))
cfg.pop("resume_at")
json.dump(cfg, open(sys.argv[2], "w"), indent=1)
PY
mkdir -p "$work/ex/noresume" && mv "$work/ex/smoke-noresume.json" "$work/ex/noresume/pytorch-trainer.json"
"$lockstep" bless "$work/ex/smoke" --reason bench --out "$work/out" >/dev/null
"$lockstep" bless "$work/ex/noresume" --reason bench --out "$work/out" >/dev/null

source bench/timing.sh
by_hand() {
  for i in 1 2; do
    mkdir -p "$work/hand-$i"
    (cd "$work/ex" && LOCKSTEP_OUT="$work/hand-$i" LOCKSTEP_SEED=20261201 LOCKSTEP_STEPS=10 PYTHONPATH="$repo/python" \
       "$py" train.py --steps 10 >/dev/null 2>&1)
  done
}
runs=${LOCKSTEP_BENCH_RUNS:-5}
best_of "$runs" by_hand; hand=$BEST_WALL; hand_line=$(timing_line)
best_of "$runs" "$lockstep" check "$work/ex/noresume" -j 1 --out "$work/out"; serial=$BEST_WALL; serial_line=$(timing_line)
best_of "$runs" "$lockstep" check "$work/ex/noresume" --out "$work/out"; jobs=$BEST_WALL; jobs_line=$(timing_line)
best_of "$runs" "$lockstep" check "$work/ex/smoke" --out "$work/out"; full=$BEST_WALL; full_line=$(timing_line)
echo "best of $runs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "two training runs by hand:                        $hand_line"
awk -v h="$hand" -v s="$serial" -v c="$jobs" -v f="$full" -v sl="$serial_line" -v cl="$jobs_line" -v fl="$full_line" 'BEGIN {
  printf "lockstep check -j 1 (repeat 2, no resume):       %s   ratio %.2f (goal <= 1.10)\n", sl, s / h
  printf "lockstep check (default -j, no resume):          %s   ratio %.2f (goal <= 1.10)\n", cl, c / h
  printf "lockstep check (default -j, repeat 2 + resume):  %s   ratio %.2f (the resume check adds a stopped and a resumed run)\n", fl, f / h
}'
