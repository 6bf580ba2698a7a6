#!/usr/bin/env bash
# The harness overhead of `lockstep check` on the example trainer
# (examples/pytorch-trainer) against running the trainer by hand: prints
# the wall time of two training runs by hand (what a developer would do to
# see whether two runs agree), of `check` without the resume check (two
# runs, each with its data-only pass beside it, compared bit for bit and
# against a golden), of the full `check` (with resume_at), and the ratios.
# Goal (issue "Gate the team's own trainer"): check / by hand <= 1.10.
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

now() { date +%s.%N; }
by_hand() {
  for i in 1 2; do
    mkdir -p "$work/hand-$i"
    (cd "$work/ex" && LOCKSTEP_OUT="$work/hand-$i" LOCKSTEP_SEED=20261201 LOCKSTEP_STEPS=10 PYTHONPATH="$repo/python" \
       "$py" train.py --steps 10 >/dev/null 2>&1)
  done
}
best() {  # best of 3 wall times of "$@"
  local b=""
  for _ in 1 2 3; do
    local t0 t1; t0=$(now); "$@" >/dev/null 2>&1 || { echo "bench: $* failed" >&2; exit 1; }; t1=$(now)
    b=$(echo "$t0 $t1 ${b:-1e9}" | awk '{d=$2-$1; print (d<$3)?d:$3}')
  done
  echo "$b"
}
hand=$(best by_hand)
check_serial=$(best "$lockstep" check "$work/ex/noresume" -j 1 --out "$work/out")
check_noresume=$(best "$lockstep" check "$work/ex/noresume" --out "$work/out")
check_full=$(best "$lockstep" check "$work/ex/smoke" --out "$work/out")
awk -v h="$hand" -v s="$check_serial" -v c="$check_noresume" -v f="$check_full" 'BEGIN {
  printf "two training runs by hand:                   %6.2f s\n", h
  printf "lockstep check -j 1 (repeat 2, no resume):   %6.2f s   ratio %.2f (goal <= 1.10)\n", s, s / h
  printf "lockstep check (default -j, no resume):      %6.2f s   ratio %.2f\n", c, c / h
  printf "lockstep check (default -j, repeat 2 + resume): %6.2f s   ratio %.2f (the resume check adds a stopped and a resumed run)\n", f, f / h
}'
