#!/usr/bin/env bash
# The cost of module tracing (docs/module-trace.md): wall time of
# `lockstep run` on each built-in model's committed smoke with the default
# trace (trace.steps 2) against the same smoke with trace.steps 0, best of
# 21 each (interleaved), and with every step traced (trace.steps = steps).
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

now() { date +%s.%N; }
steps_s() {  # median seconds of the record's steady training steps (resources.step_time_s, step 0 left out)
  /usr/bin/python3 -c 'import json,statistics,sys; print(statistics.median(json.load(open(sys.argv[1]))["resources"]["step_time_s"][1:]))' "$1"
}
min() { awk -v t="$1" -v b="$2" 'BEGIN{print (b==""||t<b)?t:b}'; }
# One timed run of `lockstep run CONFIG --record RECORD`: "<wall s> <training steps s>".
timed() {
  local t0 t1; t0=$(now); "$lockstep" run "$1" --record "$2" >/dev/null 2>&1 || { echo "bench: $lockstep run $1 failed" >&2; exit 1; }
  t1=$(now)
  echo "$(awk -v a="$t0" -v c="$t1" 'BEGIN{print c-a}') $(steps_s "$2")"
}

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
  t_off="" s_off="" t_on="" s_on="" t_all="" s_all=""
  for _ in $(seq 21); do
    read -r t s < <(timed "$work/$smoke-0.json" "$work/off.json"); t_off=$(min "$t" "$t_off"); s_off=$(min "$s" "$s_off")
    read -r t s < <(timed "smoke/$smoke.json" "$work/on.json"); t_on=$(min "$t" "$t_on"); s_on=$(min "$s" "$s_on")
    read -r t s < <(timed "$work/$smoke-all.json" "$work/all.json"); t_all=$(min "$t" "$t_all"); s_all=$(min "$s" "$s_all")
  done
  ratio=$(awk -v a="$t_on" -v b="$t_off" 'BEGIN{printf "%.3f", a/b}')
  worst=$(awk -v r="$ratio" -v w="$worst" 'BEGIN{print (r>w)?r:w}')
  derived=$(awk -v a="$s_all" -v b="$s_off" -v t="$t_off" -v w="$derived" 'BEGIN{r=1+2*(a-b)/t; print (r>w)?r:w}')
  printf '%-19s run: untraced %.3f s, traced (2 steps) %.3f s, every step %.3f s: ratio %s (every step %.3f)\n' \
    "$smoke" "$t_off" "$t_on" "$t_all" "$ratio" "$(awk -v a="$t_all" -v b="$t_off" 'BEGIN{print a/b}')"
  # A traced step against an untraced one (every step traced vs none), and
  # what the default's two traced steps add to a run, from that difference.
  printf '%-19s median step: untraced %.2f ms, traced %.2f ms (+%.2f ms); 2 traced steps add %.2f%% to the run\n' "" \
    "$(awk -v a="$s_off" 'BEGIN{print a*1000}')" "$(awk -v a="$s_all" 'BEGIN{print a*1000}')" \
    "$(awk -v a="$s_all" -v b="$s_off" 'BEGIN{print (a-b)*1000}')" \
    "$(awk -v a="$s_all" -v b="$s_off" -v t="$t_off" 'BEGIN{print 100*2*(a-b)/t}')"
done
printf 'worst ratio traced / untraced: %.4f from the step times; %.3f measured on whole runs (within their noise) (goal <= 1.10)\n' \
  "$derived" "$worst"
