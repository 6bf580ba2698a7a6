#!/usr/bin/env bash
# The cost of a multi-rank smoke: wall time of `lockstep run` on the
# committed 2-rank smoke (smoke/digits-cnn-2rank.json) at world size 2
# against the same smoke at world size 1 (one rank, same data, same
# per-rank batch), and against it with no "distributed" section (one
# process, no c10d), best of 5 each with its user and system time
# (bench/timing.sh); then the share of rank 0's training
# steps spent in collectives (buffer broadcast, loss all-gather, gradient
# all-reduce with its bucket copies, parameter-hash all-gather), from the
# note each rank writes to <rendezvous>/rank-0.stdout.log.
# Goal (issue "Multi-rank smokes"): 2 ranks / 1 rank <= 1.5 on 2 cores.
#   bench/distributed_overhead.sh [BUILD_DIR]   (default build/)
set -euo pipefail
cd "$(dirname "$0")/.."
lockstep="$(realpath "${1:-build}")/lockstep"
smoke="$PWD/smoke/digits-cnn-2rank.json"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 - "$smoke" "$work/single.json" <<'PY'
import json, sys
cfg = json.load(open(sys.argv[1]))
cfg.pop("distributed")
cfg["name"] = "digits-cnn-single"
json.dump(cfg, open(sys.argv[2], "w"), indent=1)
PY

source bench/timing.sh
best_of 5 "$lockstep" run "$work/single.json" --record "$work/single.run.json"
t_single=$BEST_WALL; l_single=$(timing_line)
best_of 5 "$lockstep" run "$smoke" --world-size 1 --record "$work/w1.run.json"
t_w1=$BEST_WALL; l_w1=$(timing_line)
best_of 5 "$lockstep" run "$smoke" --world-size 2 --record "$work/w2.run.json"
t_w2=$BEST_WALL; l_w2=$(timing_line)
echo "single process (no c10d):  $l_single"
echo "1 rank  (c10d Gloo):       $l_w1"
echo "2 ranks (c10d Gloo):       $l_w2"
awk -v a="$t_w2" -v b="$t_w1" 'BEGIN{printf "ratio 2 ranks / 1 rank: %.2f (goal <= 1.5)\n", a/b}'
awk -v a="$t_w2" -v b="$t_single" 'BEGIN{printf "ratio 2 ranks / single process: %.2f\n", a/b}'
echo "collectives, rank 0 of 2: $(sed -n 's/^note: rank 0: //p' "$work/w2.run.json.ranks/rank-0.stdout.log")"
