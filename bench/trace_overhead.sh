#!/usr/bin/env bash
# The cost of module tracing (docs/module-trace.md): wall time of
# `lockstep run` on each built-in model's committed smoke with the default
# trace (trace.steps 2) against the same smoke with trace.steps 0, best of
# 7 each, and with every step traced (trace.steps = steps) for scale.
# Goal (issue "Name the first divergent module"): traced / untraced <= 1.10.
#   bench/trace_overhead.sh [BUILD_DIR]   (default build/)
set -euo pipefail
cd "$(dirname "$0")/.."
lockstep="$(realpath "${1:-build}")/lockstep"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

now() { date +%s.%N; }
best() {  # best of 7 wall times of "$@"
  local b=""
  for _ in 1 2 3 4 5 6 7; do
    local t0 t1; t0=$(now); "$@" >/dev/null 2>&1 || { echo "bench: $* failed" >&2; exit 1; }; t1=$(now)
    b=$(awk -v t="$(awk -v a="$t0" -v c="$t1" 'BEGIN{print c-a}')" -v b="$b" 'BEGIN{print (b==""||t<b)?t:b}')
  done
  echo "$b"
}

worst=0
for smoke in digits-cnn wine-mlp tokens-transformer; do
  for steps in 0 all; do
    /usr/bin/python3 - "smoke/$smoke.json" "$work/$smoke-$steps.json" "$steps" "$PWD" <<'PY'
import json, os, sys
cfg = json.load(open(sys.argv[1]))
cfg["trace"] = {"steps": 0 if sys.argv[3] == "0" else min(16, cfg.get("steps", 10))}
# Relative data paths stay relative to the committed smoke's folder.
d = cfg.get("data", {})
if "path" in d and not os.path.isabs(d["path"]):
    d["path"] = os.path.join(sys.argv[4], "smoke", d["path"])
json.dump(cfg, open(sys.argv[2], "w"), indent=1)
PY
  done
  t_off=$(best "$lockstep" run "$work/$smoke-0.json" --out "$work/off.json")
  t_on=$(best "$lockstep" run "smoke/$smoke.json" --out "$work/on.json")
  t_all=$(best "$lockstep" run "$work/$smoke-all.json" --out "$work/all.json")
  ratio=$(awk -v a="$t_on" -v b="$t_off" 'BEGIN{printf "%.3f", a/b}')
  worst=$(awk -v r="$ratio" -v w="$worst" 'BEGIN{print (r>w)?r:w}')
  printf '%-20s untraced %.3f s, traced (2 steps) %.3f s, every step %.3f s: ratio %s (every step %.3f)\n' \
    "$smoke" "$t_off" "$t_on" "$t_all" "$ratio" "$(awk -v a="$t_all" -v b="$t_off" 'BEGIN{print a/b}')"
done
echo "worst ratio traced / untraced: $worst (goal <= 1.10)"
