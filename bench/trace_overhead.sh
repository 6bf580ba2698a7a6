#!/usr/bin/env bash
# The cost of module tracing (docs/module-trace.md): wall time of
# `lockstep run` on each built-in model's committed smoke with the default
# trace (trace.steps 2) against the same smoke with trace.steps 0, best of
# 21 each (interleaved), and with every step traced (trace.steps = steps);
# each best run with its user and system time (bench/timing.sh).
# The wall time of a run (most of it loading LibTorch) varies by about
# 10% from run to run on a 2-core machine, more than tracing costs, so the
# script also prints the median steady step time traced against untraced
# (from the records' resources.step_time_s) and what two traced steps add.
# Goal (issue "Name the first divergent module"): traced / untraced <= 1.10.
#   bench/trace_overhead.sh [BUILD_DIR]   (default build/)
set -euo pipefail
cd "$(dirname "$0")/.."
lockstep="$(realpath "${1:-build}")/lockstep"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

source bench/timing.sh
timed() { timed_run "$lockstep" "$1" "$2"; }

worst=0 derived=0
for smoke in digits-cnn wine-mlp tokens-transformer; do
  for steps in 0 all; do
    /usr/bin/python3 - "smoke/$smoke.json" "$work/$smoke-$steps.json" "$steps" "$PWD" <<'PY'
import json, os, sys
cfg = json.load(open(sys.argv[1]))
cfg["trace"] = {"steps": 0 if sys.argv[3] == "0" else min(16, cfg.get("steps", 10))}
# Relative data paths stay relative to the committed smoke's folder.
d = cfg.get("data", {})
if "path" in d and not os.path.isabs(d["path"]) and not d["path"].startswith("{"):
    d["path"] = os.path.join(sys.argv[4], "smoke", d["path"])
json.dump(cfg, open(sys.argv[2], "w"), indent=1)
PY
  done
  # Interleaved, so drift in the machine's speed hits all three alike; best of 21.
  r_off="" s_off="" r_on="" s_on="" r_all="" s_all=""
  for _ in $(seq 21); do
    read -r t u y s < <(timed "$work/$smoke-0.json" "$work/off.json"); r_off=$(best "$t $u $y" "$r_off"); s_off=$(min "$s" "$s_off")
    read -r t u y s < <(timed "smoke/$smoke.json" "$work/on.json"); r_on=$(best "$t $u $y" "$r_on"); s_on=$(min "$s" "$s_on")
    read -r t u y s < <(timed "$work/$smoke-all.json" "$work/all.json"); r_all=$(best "$t $u $y" "$r_all"); s_all=$(min "$s" "$s_all")
  done
  t_off=${r_off%% *} t_on=${r_on%% *} t_all=${r_all%% *}
  ratio=$(awk -v a="$t_on" -v b="$t_off" 'BEGIN{printf "%.3f", a/b}')
  worst=$(awk -v r="$ratio" -v w="$worst" 'BEGIN{print (r>w)?r:w}')
  derived=$(awk -v a="$s_all" -v b="$s_off" -v t="$t_off" -v w="$derived" 'BEGIN{r=1+2*(a-b)/t; print (r>w)?r:w}')
  printf '%-19s run: ratio %s (every step %.3f)\n' "$smoke" "$ratio" "$(awk -v a="$t_all" -v b="$t_off" 'BEGIN{print a/b}')"
  printf '%-19s   untraced:          %s\n' "" "$(timed_line "$r_off")"
  printf '%-19s   traced (2 steps):  %s\n' "" "$(timed_line "$r_on")"
  printf '%-19s   every step traced: %s\n' "" "$(timed_line "$r_all")"
  # A traced step against an untraced one (every step traced vs none), and
  # what the default's two traced steps add to a run, from that difference.
  printf '%-19s median step: untraced %.2f ms, traced %.2f ms (+%.2f ms); 2 traced steps add %.2f%% to the run\n' "" \
    "$(awk -v a="$s_off" 'BEGIN{print a*1000}')" "$(awk -v a="$s_all" 'BEGIN{print a*1000}')" \
    "$(awk -v a="$s_all" -v b="$s_off" 'BEGIN{print (a-b)*1000}')" \
    "$(awk -v a="$s_all" -v b="$s_off" -v t="$t_off" 'BEGIN{print 100*2*(a-b)/t}')"
done
printf 'worst ratio traced / untraced: %.4f from the step times; %.3f measured on whole runs (within their noise) (goal <= 1.10)\n' \
  "$derived" "$worst"
