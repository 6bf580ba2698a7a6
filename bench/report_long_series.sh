#!/usr/bin/env bash
# The reports of long curves: two JSONL logs of STEPS x 8 metrics (default
# 1,000,000 steps; one value moved by 0.1 % at 60 % of the run) imported
# into records, then `lockstep compare --html --json --markdown` of them.
# Prints the import and compare wall times (with user and system time,
# bench/timing.sh), the report sizes and the peak
# RSS (goals for 1,000,000 x 8: HTML <= 5 MB, compare with reports <= 2 s).
# Uses build/lockstep (LOCKSTEP_BIN names another).
#   bench/report_long_series.sh [STEPS]
set -euo pipefail
cd "$(dirname "$0")/.."
steps="${1:-1000000}"
bin="${LOCKSTEP_BIN:-build/lockstep}"
dir=$(mktemp -d "${TMPDIR:-/tmp}/lockstep-report-bench.XXXXXX")
trap 'rm -rf "$dir"' EXIT
python3 - "$dir" "$steps" <<'PY'
import math, sys
d, n = sys.argv[1], int(sys.argv[2])
names = ["loss", "grad_norm", "lr", "param_norm", "m4", "m5", "m6", "m7"]
with open(d + "/a.jsonl", "w") as fa, open(d + "/b.jsonl", "w") as fb:
    for s in range(n):
        vals = [math.exp(-s / (0.3 * n)) + 0.01 * math.sin(s / 1000 + k) for k in range(8)]
        fa.write('{"step": %d, %s}\n' % (s, ", ".join('"%s": %r' % kv for kv in zip(names, vals))))
        if s == int(0.6 * n):
            vals[0] *= 1.001
        fb.write('{"step": %d, %s}\n' % (s, ", ".join('"%s": %r' % kv for kv in zip(names, vals))))
PY
series=""
for m in loss grad_norm lr param_norm m4 m5 m6 m7; do series="$series --series $m"; done
source bench/timing.sh
import_a=$(run_timed "$bin" import jsonl "$dir/a.jsonl" $series --record "$dir/a.json")
import_b=$(run_timed "$bin" import jsonl "$dir/b.jsonl" $series --record "$dir/b.json")
code=0
/usr/bin/time -f "%e %U %S %M" -o "$dir/time" "$bin" compare "$dir/b.json" "$dir/a.json" --html "$dir/r.html" \
  --json "$dir/r.json" --markdown "$dir/r.md" >/dev/null || code=$?
[ "$code" -eq 1 ] || { echo "report_long_series: compare should find the moved value (exit 1), got $code" >&2; exit 1; }
read -r wall user sys rss_kb < <(tail -n 1 "$dir/time")  # after "Command exited with non-zero status 1"
echo "steps x metrics:     $steps x 8"
echo "import (2 logs):     $(timed_line "$import_a") and $(timed_line "$import_b")"
echo "compare + reports:   $(timed_line "$wall $user $sys") (peak RSS $((rss_kb / 1024)) MB)"
echo "report.html:         $(stat -c %s "$dir/r.html") bytes"
echo "report.json:         $(stat -c %s "$dir/r.json") bytes"
echo "report.md:           $(stat -c %s "$dir/r.md") bytes"
