#!/usr/bin/env bash
# What equivalence lanes cost (docs/equivalence.md): `lockstep check
# --repeat 1` of a smoke with two lanes against the same check without
# them (one run compared with its golden), at -j 1 and -j 2, for the
# example trainer (lanes accum2 and workers0) and the built-in wine-mlp
# (lanes threads2 and workers0).
# The two checks alternate, round after round (LOCKSTEP_BENCH_RUNS, default
# 9), so drift in the machine's speed hits both alike; each figure is the
# median round, with its user and system time, and the ratio is the median
# of the rounds' own ratios. Not a best-of: the check without lanes is one
# run, the check with them three, and the fastest of K single runs is
# luckier than the fastest of K triples, which biases a ratio of bests
# upwards by the run-to-run spread (about 10 % on a 2-core VM).
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
runs=${LOCKSTEP_BENCH_RUNS:-9}
echo "median of $runs interleaved rounds; load average $(cut -d' ' -f1-3 /proc/loadavg)"
for case in ex/base/pytorch-trainer.json builtin/base/wine-mlp.json; do
  base="$work/$case"
  lanes="${base/\/base\//\/lanes\/}"
  for j in 1 2; do
    : >"$work/b" && : >"$work/l" && : >"$work/r"
    for ((i = 0; i < runs; i++)); do
      b=$(run_timed "$lockstep" check "$base" --repeat 1 -j "$j" --out "$work/out")
      l=$(run_timed "$lockstep" check "$lanes" --repeat 1 -j "$j" --out "$work/out")
      echo "$b" >>"$work/b" && echo "$l" >>"$work/l"
      awk -v b="${b%% *}" -v l="${l%% *}" 'BEGIN { print l / b }' >>"$work/r"
    done
    goal=$([[ $j == 1 ]] && echo 3.1 || echo 2.0)
    ratio=$(sort -g "$work/r" | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')
    spread=$(sort -g "$work/r" | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%.2f-%.2f", lo, hi}')
    c=$(basename "$case" .json)
    printf '%-16s -j %s  no lanes: %s\n' "$c" "$j" "$(timed_line "$(median_line "$work/b")")"
    printf '%-16s -j %s  2 lanes:  %s   ratio %.2f (rounds %s; goal <= %s)\n' "$c" "$j" \
      "$(timed_line "$(median_line "$work/l")")" "$ratio" "$spread" "$goal"
  done
done
