#!/usr/bin/env bash
# End-to-end comparison speed: `lockstep compare` on two JSON records of
# STEPS steps x 8 metrics, against pytest-regressions' num_regression
# (Debian python3-pytest-regressions) checking the same curves from CSV in
# the same run. Prints both times and the ratio (goal: lockstep >= 20x faster).
#   bench/compare_vs_pytest_regressions.sh [STEPS]     (default 1000000)
set -euo pipefail
cd "$(dirname "$0")/.."
steps="${1:-1000000}"
/usr/bin/python3 -c "import pytest_regressions, pandas" 2>/dev/null ||
  apt-get install -y -qq --no-install-recommends python3-pytest-regressions python3-pandas >/dev/null
# The LibTorch-free build: `compare` needs no LibTorch, and loading it costs ~0.7 s.
[ -x build-notorch/lockstep ] || bash ci/build.sh build-notorch -DLOCKSTEP_WITH_TORCH=OFF
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

/usr/bin/python3 - "$work" "$steps" <<'PY'
import json, math, sys
work, steps = sys.argv[1], int(sys.argv[2])
def record(jitter):
    series = {f"metric{m}": {"dtype": "float64",
              "values": [math.exp(-1e-6 * i) * (m + 1) * (1 + jitter) for i in range(steps)]}
              for m in range(8)}
    return {"schema": "lockstep.run/1", "smoke": "bench", "config_hash": "0" * 16,
            "seed": {"base": 1, "overridden": False}, "device": "cpu", "platform": "cpu-x86_64-avx2",
            "steps": steps, "contract": {}, "fingerprint": {"torch.version": {"value": "1.13.0" if jitter == 0 else "2.11.0", "relevant": True}},
            "series": series, "hashes": {}, "probes": [], "train_probes": []}
for name, jitter in (("golden", 0.0), ("run", 1e-9)):
    rec = record(jitter)
    json.dump(rec, open(f"{work}/{name}.json", "w"))
    with open(f"{work}/{name}.csv", "w") as f:
        f.write(",".join(rec["series"]) + "\n")
        cols = [s["values"] for s in rec["series"].values()]
        for row in zip(*cols):
            f.write(",".join(repr(v) for v in row) + "\n")
PY

cat > "$work/test_numreg.py" <<'PY'
import os, pandas as pd
def test_curves(num_regression, datadir):
    run = pd.read_csv(os.path.join(os.path.dirname(__file__), os.environ["CURVES"]))
    num_regression.check({c: run[c].to_numpy() for c in run.columns},
                         basename="golden", default_tolerance=dict(atol=1e-6, rtol=1e-4))
PY
# num_regression writes its own golden (its CSV layout has an index column).
(cd "$work" && CURVES=golden.csv /usr/bin/python3 -m pytest -q -p no:cacheprovider --force-regen test_numreg.py >/dev/null 2>&1) || true
[ -f "$work/test_numreg/golden.csv" ] || { echo "bench: num_regression wrote no golden" >&2; exit 1; }

t0=$(date +%s.%N)
./build-notorch/lockstep compare "$work/run.json" "$work/golden.json" >/dev/null
t1=$(date +%s.%N)
(cd "$work" && CURVES=run.csv /usr/bin/python3 -m pytest -q -p no:cacheprovider test_numreg.py >"$work/pytest.log" 2>&1) || { tail -20 "$work/pytest.log"; exit 1; }
t2=$(date +%s.%N)
/usr/bin/python3 - "$t0" "$t1" "$t2" "$steps" <<'PY'
import sys
t0, t1, t2, steps = map(float, sys.argv[1:])
l, p = t1 - t0, t2 - t1
print(f"{int(steps)} steps x 8 metrics: lockstep compare {l:.3f} s, pytest-regressions num_regression {p:.3f} s, ratio {p / l:.1f}x")
PY
