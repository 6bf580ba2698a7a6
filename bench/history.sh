#!/usr/bin/env bash
# Nightly history speed (docs/history.md): a ledger folder of NIGHTS nights x
# SMOKES smokes x 8 series of 1,000 steps (default 365 x 10; each entry keeps
# 256 points of a series, as check --history writes them), then `lockstep
# history` as text (goal <= 1 s), with --html (goal <= 3 s, page <= 5 MB),
# best of 3; and what --history adds to a check: `check --history` against
# `check` of wine-mlp, alternately, median of 5 (goal <= 1.02).
# Builds without LibTorch into build-bench/ for the history part; the check
# part uses build/ (LOCKSTEP_BUILD names another).
#   bench/history.sh [NIGHTS] [SMOKES]
set -euo pipefail
cd "$(dirname "$0")/.."
nights="${1:-365}"
smokes="${2:-10}"
build="${LOCKSTEP_BENCH_BUILD:-build-bench}"
cmake -S . -B "$build" -G Ninja -DLOCKSTEP_WITH_TORCH=OFF -DLOCKSTEP_BUILD_BENCH=ON >/dev/null
ninja -C "$build" -j2 lockstep >/dev/null
work=$(mktemp -d "${TMPDIR:-/tmp}/lockstep-history-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

/usr/bin/python3 - "$work/history" "$nights" "$smokes" <<'PY'
import hashlib, json, math, os, sys
out, nights, smokes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(out)
names = ["loss", "grad_norm", "lr", "param_norm", "loss_scale", "accuracy", "tokens_per_s", "weight_decay"]
steps = [round(k * 999 / 255) for k in range(256)]
for s in range(smokes):
    smoke = f"smoke-{s}"
    with open(f"{out}/{smoke}.jsonl", "w") as f:
        for n in range(nights):
            drift = max(0, n - nights + 40) * 1e-6
            series = {}
            for i, name in enumerate(names):
                values = [(i + 1) * (1 + 1 / (1 + t)) * (1 + drift) for t in steps]
                series[name] = {"steps": steps, "values": values, "count": 1000,
                                "xxh3": hashlib.md5(repr((name, drift, n % 2)).encode()).hexdigest(),
                                "use": min(5.0, drift * 2e4 + 0.01 * (n % 3)), "rule": "|a-g| <= 1e-06 + 0.0001*|g|"}
            day = f"{2026 + (n // 365)}-{1 + (n % 365) // 31 % 12:02d}-{1 + n % 28:02d}"
            entry = {"schema": "lockstep.history/1", "run_id": hashlib.md5(f"{smoke}/{n}".encode()).hexdigest(),
                     "time": f"{day}T02:{n % 60:02d}:00Z", "smoke": smoke, "platform": "cpu-x86_64-avx2",
                     "commit": hashlib.sha1(str(n).encode()).hexdigest(), "branch": "main",
                     "ci": {"pipeline": str(1000 + n), "job": str(5000 + n), "job_url": f"https://gitlab.example/j/{5000 + n}",
                            "runner": f"runner-{n % 3}", "report_url": ""},
                     "verdict": "pass", "exit": 0, "lane": "cross-stack", "golden": "0" * 32,
                     "fingerprint": {"torch.version": "1.13.1", "cpu.capability": ["AVX2", "DEFAULT"][n % 2]},
                     "series": series, "probes": [hashlib.md5(f"{b}".encode()).hexdigest() for b in range(20)],
                     "step_time_median_s": 0.01, "peak_rss_bytes": 300000000}
            f.write(json.dumps(entry, separators=(",", ":")) + "\n")
PY
ledger_mb=$(du -sm "$work/history" | cut -f1)

source bench/timing.sh
best_of 3 "$build/lockstep" history "$work/history"; text_line=$(timing_line)
best_of 3 "$build/lockstep" history "$work/history" --html "$work/history.html"; html_line=$(timing_line)
html_mb=$(/usr/bin/python3 -c "import os, sys; print('%.2f' % (os.path.getsize(sys.argv[1]) / 1e6))" "$work/history.html")
echo "history: $nights nights x $smokes smokes x 8 series of 1000 steps ($ledger_mb MB of ledgers)"
echo "  text: $text_line   (goal <= 1 s)"
echo "  html: $html_line, $html_mb MB   (goals <= 3 s, <= 5 MB)"

# check --history against check, alternately, median of 5 (needs build/ with LibTorch).
full="${LOCKSTEP_BUILD:-build}"
if [ -x "$full/lockstep" ]; then
  /usr/bin/python3 - "$full/lockstep" "$work" <<'PY'
import resource, subprocess, sys, time
lockstep, work = sys.argv[1], sys.argv[2]
plain, kept = [], []
for i in range(5):
    for times, extra in ((plain, []), (kept, ["--history", f"{work}/check-history"])):
        r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
        subprocess.run([lockstep, "check", "smoke/wine-mlp.json", "--out", f"{work}/check-out"] + extra,
                       check=True, stdout=subprocess.DEVNULL)
        r1, t1 = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
        times.append((t1 - t0, r1.ru_utime - r0.ru_utime, r1.ru_stime - r0.ru_stime))
median = lambda runs: sorted(runs)[(len(runs) - 1) // 2]  # by wall time, with that run's user and sys
line = lambda r: f"{r[0]:.3f} s wall ({r[1]:.2f} user + {r[2]:.2f} sys)"
a, b = median(plain), median(kept)
print(f"check --history: {line(b)} against check {line(a)} (wine-mlp, median of 5): ratio {b[0] / a[0]:.3f}   (goal <= 1.02)")
PY
fi
