#!/usr/bin/env bash
# What `lockstep bisect` adds to the runs it makes: a scratch git repository
# of N commits around the wine-mlp smoke (commit N/2 changes the learning
# rate), bisected with --json; per step the wall time against the time of
# its runs (the rest: writing the commit's files, loading, comparing),
# summed over the steps, and the ratio (goal: the steps take <= 1.10 x their
# runs).
#   bench/bisect_overhead.sh [N]   (default 16; needs a build in build/)
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-16}"
lockstep="$PWD/build/lockstep"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/repo/smoke"
python3 - "$work/repo" "$n" <<'PY'
import json, subprocess, sys
repo, n = sys.argv[1], int(sys.argv[2])
cfg = json.load(open("smoke/wine-mlp.json"))
cfg.pop("resume_at", None); cfg.pop("platforms", None)
lr = cfg["optimizer"]["lr"]
git = ["git", "-C", repo, "-c", "user.name=bench", "-c", "user.email=bench@example.org"]
subprocess.run(git + ["init", "-q", "-b", "main"], check=True)
for k in range(n):
    if k == n // 2:
        cfg["optimizer"]["lr"] = lr * (1 + 1e-4)
    json.dump(cfg, open(repo + "/smoke/wine-mlp.json", "w"), indent=2)
    open(repo + "/log.txt", "w").write("commit %d\n" % k)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "commit %d" % k], check=True)
PY
(cd "$work/repo" && "$lockstep" bisect --good "HEAD~$((n - 1))" --bad HEAD --out "$work/out" --json "$work/b.json" >"$work/log" 2>&1) ||
  [ $? -eq 1 ] || { cat "$work/log" >&2; exit 1; }
python3 - "$work/b.json" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))
steps = b["steps"]
wall = sum(s["seconds"] for s in steps)
runs = sum(s["run_seconds"] for s in steps)
print("bisect over %d commits: %d steps (ends included), %d runs; first bad: %s" %
      (b["range"], len(steps), b["runs"], b["first_bad"]["subject"] if b["found"] else "(none)"))
print("steps %.2f s, of which their runs %.2f s: ratio %.3f (goal <= 1.10)" % (wall, runs, wall / runs))
PY
