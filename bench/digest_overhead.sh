#!/usr/bin/env bash
# The cost of per-step digests (docs/module-trace.md, "Per-step digests"):
# `lockstep run` on each built-in model's committed smoke (trace.digests on,
# the default) against the same smoke with "trace": {"digests": false},
# best of N each, interleaved; each best run with its user and system time
# (bench/timing.sh). A whole run varies by several percent from run to run
# on a 2-core machine (most of it loading LibTorch), more than the digests
# cost, so the script also prints the median steady step time with and
# without them (the records' resources.step_time_s, which include the
# hashing) and what they add to a run from that difference.
# Goal (issue "Equivalence lanes ...", per-step digests): <= 3 % of a run.
#   bench/digest_overhead.sh [BUILD_DIR] [N]   (default build/, 15)
set -euo pipefail
cd "$(dirname "$0")/.."
lockstep="$(realpath "${1:-build}")/lockstep"
n="${2:-15}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

source bench/timing.sh
timed() { timed_run "$lockstep" "$1" "$2"; }

worst_run=0 worst_steps=0
for smoke in digits-cnn wine-mlp tokens-transformer; do
  /usr/bin/python3 - "smoke/$smoke.json" "$work/$smoke-off.json" "$PWD" <<'PY'
import json, os, sys
cfg = json.load(open(sys.argv[1]))
cfg.setdefault("trace", {})["digests"] = False
d = cfg.get("data", {})  # relative data paths stay relative to the committed smoke's folder
if "path" in d and not os.path.isabs(d["path"]) and not d["path"].startswith("{"):
    d["path"] = os.path.join(sys.argv[3], "smoke", d["path"])
json.dump(cfg, open(sys.argv[2], "w"), indent=1)
PY
  steps=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["steps"])' "smoke/$smoke.json")
  r_off="" s_off="" r_on="" s_on=""
  for _ in $(seq "$n"); do
    read -r t u y s < <(timed "$work/$smoke-off.json" "$work/off.json"); r_off=$(best "$t $u $y" "$r_off"); s_off=$(min "$s" "$s_off")
    read -r t u y s < <(timed "smoke/$smoke.json" "$work/on.json"); r_on=$(best "$t $u $y" "$r_on"); s_on=$(min "$s" "$s_on")
  done
  t_off=${r_off%% *} t_on=${r_on%% *}
  ratio=$(awk -v a="$t_on" -v b="$t_off" 'BEGIN{printf "%.3f", a/b}')
  share=$(awk -v a="$s_on" -v b="$s_off" -v k="$steps" -v t="$t_off" 'BEGIN{d=(a-b)*k/t; printf "%.4f", 1+(d>0?d:0)}')
  worst_run=$(awk -v r="$ratio" -v w="$worst_run" 'BEGIN{print (r>w)?r:w}')
  worst_steps=$(awk -v r="$share" -v w="$worst_steps" 'BEGIN{print (r>w)?r:w}')
  printf '%-19s run: with / without digests %s\n' "$smoke" "$ratio"
  printf '%-19s   without: %s\n' "" "$(timed_line "$r_off")"
  printf '%-19s   with:    %s\n' "" "$(timed_line "$r_on")"
  printf '%-19s median step: %.3f ms without, %.3f ms with; %d steps of digests add %.2f%% to the run\n' "" \
    "$(awk -v a="$s_off" 'BEGIN{print a*1000}')" "$(awk -v a="$s_on" 'BEGIN{print a*1000}')" "$steps" \
    "$(awk -v r="$share" 'BEGIN{print 100*(r-1)}')"
done
printf 'worst ratio with / without digests: %.4f from the step times; %.3f measured on whole runs (within their noise) (goal <= 1.03)\n' \
  "$worst_steps" "$worst_run"
