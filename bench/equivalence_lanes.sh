#!/usr/bin/env bash
# What equivalence lanes cost (docs/equivalence.md): `lockstep check
# --repeat 1` of a smoke with two lanes against the same check without
# them (one run compared with its golden), at -j 1 and -j 2, for the
# example trainer (lanes accum2 and workers0) and the built-in wine-mlp
# (lanes threads2 and workers0). Best of 5 (LOCKSTEP_BENCH_RUNS), user and
# system time beside each.
# Goal: each lane costs at most one extra run: with two lanes <= 3.1x the
# check without them at -j 1, <= 2x at -j 2.
#   bench/equivalence_lanes.sh [BUILD_DIR]   (default build/)
set -euo pipefail
cd "$(dirname "$0")/.."
lockstep="$(realpath "${1:-build}")/lockstep"
py=/usr/bin/python3
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r examples/pytorch-trainer "$work/ex"
mkdir -p "$work/builtin" && cp -r smoke goldens "$work/builtin/"
# The smokes without resume_at (the resume check is not what is measured)
# in <folder>/base/, with two lanes in <folder>/lanes/; one golden serves both.
"$py" - "$work" <<'PY'
import json, os, sys
work = sys.argv[1]
cases = {
    "ex": ("smoke/pytorch-trainer.json", {"accum2": {"args": ["--accum", "2"], "rule": {"rtol": 1e-6}},
                                          "workers0": {"args": ["--num-workers", "0"]}}),
    "builtin": ("smoke/wine-mlp.json", {"threads2": {"set": {"determinism": {"intra_op_threads": 2}}, "rule": {"ulp": 4}},
                                        "workers0": {"set": {"data": {"workers": 0}}}}),
}
for folder, (rel, lanes) in cases.items():
    cfg = json.load(open(os.path.join(work, folder, rel)))
    cfg.pop("resume_at", None)
    cfg.pop("equivalence", None)  # a committed lane is not the base
    for kind in ("base", "lanes"):
        os.makedirs(os.path.join(work, folder, kind), exist_ok=True)
        if kind == "lanes":
            cfg["equivalence"] = lanes
        # base/ and lanes/ sit beside smoke/: goldens/ next to them serves both.
        json.dump(cfg, open(os.path.join(work, folder, kind, os.path.basename(rel)), "w"), indent=1)
PY

source bench/timing.sh
runs=${LOCKSTEP_BENCH_RUNS:-5}
echo "best of $runs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
for case in ex/base/pytorch-trainer.json builtin/base/wine-mlp.json; do
  base="$work/$case"
  lanes="${base/\/base\//\/lanes\/}"
  for j in 1 2; do
    best_of "$runs" "$lockstep" check "$base" --repeat 1 -j "$j" --out "$work/out"; b=$BEST_WALL; bl=$(timing_line)
    best_of "$runs" "$lockstep" check "$lanes" --repeat 1 -j "$j" --out "$work/out"; l=$BEST_WALL; ll=$(timing_line)
    goal=$([[ $j == 1 ]] && echo 3.1 || echo 2.0)
    awk -v b="$b" -v l="$l" -v bl="$bl" -v ll="$ll" -v c="$(basename "$case" .json)" -v j="$j" -v g="$goal" 'BEGIN {
      printf "%-16s -j %s  no lanes: %s\n", c, j, bl
      printf "%-16s -j %s  2 lanes:  %s   ratio %.2f (goal <= %s)\n", c, j, ll, l / b, g
    }'
  done
done
