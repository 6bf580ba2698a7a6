#!/usr/bin/env bash
# End-to-end comparison speed: `lockstep compare` on two JSON records of
# STEPS steps x 8 metrics, against pytest-regressions' num_regression
# (Debian python3-pytest-regressions) checking the same curves from CSV in
# the same run. Each tool reads its own storage: lockstep's records with the
# series in a binary sidecar, as `lockstep run` writes long records
# (record/series_file.h), and for reference the same records with the series
# inline in the JSON. Prints the times and ratios (goal: lockstep >= 20x).
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
import array, ctypes, json, math, os, sys
work, steps = sys.argv[1], int(sys.argv[2])

# XXH3-128 from the libxxhash lockstep links (canonical hex: high64, low64).
class XXH128(ctypes.Structure):
    _fields_ = [("low64", ctypes.c_uint64), ("high64", ctypes.c_uint64)]
xxh = ctypes.CDLL("libxxhash.so.0")
xxh.XXH3_128bits.restype = XXH128
xxh.XXH3_128bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
def xxh3_128(data):
    h = xxh.XXH3_128bits(data, len(data))
    return f"{h.high64:016x}{h.low64:016x}"

def record(jitter):
    series = {f"metric{m}": {"dtype": "float64",
              "values": [math.exp(-1e-6 * i) * (m + 1) * (1 + jitter) for i in range(steps)]}
              for m in range(8)}
    return {"schema": "lockstep.run/1", "smoke": "bench", "config_hash": "0" * 16,
            "seed": {"base": 1, "overridden": False}, "device": "cpu", "platform": "cpu-x86_64-avx2",
            "steps": steps, "contract": {}, "fingerprint": {"torch.version": {"value": "1.13.0" if jitter == 0 else "2.11.0", "relevant": True}},
            "series": series, "hashes": {}, "probes": [], "train_probes": []}

def with_sidecar(rec, name):
    """The same record with its series in a sidecar (record/series_file.h)."""
    blob = bytearray()
    out = dict(rec, series={})
    for key, s in rec["series"].items():
        out["series"][key] = {"dtype": s["dtype"], "values": {"offset": len(blob), "count": len(s["values"])}}
        blob += array.array("d", s["values"]).tobytes()  # little-endian hosts only, like lockstep
    digest = xxh3_128(bytes(blob))
    sidecar = f"{name}.{digest[:16]}.series"
    open(f"{work}/{sidecar}", "wb").write(blob)
    out["series_data"] = {"file": sidecar, "bytes": len(blob), "xxh3_128": digest}
    return out

for name, jitter in (("golden", 0.0), ("run", 1e-9)):
    rec = record(jitter)
    json.dump(rec, open(f"{work}/{name}.json", "w"))
    json.dump(with_sidecar(rec, f"{name}-sidecar"), open(f"{work}/{name}-sidecar.json", "w"))
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

source bench/timing.sh
inline=$(run_timed ./build-notorch/lockstep compare "$work/run.json" "$work/golden.json")
sidecar=$(run_timed ./build-notorch/lockstep compare "$work/run-sidecar.json" "$work/golden-sidecar.json")
cd "$work"
pytest=$(CURVES=run.csv TIMED_LOG="$work/pytest.log" run_timed /usr/bin/python3 -m pytest -q -p no:cacheprovider test_numreg.py)
/usr/bin/python3 - "$inline" "$sidecar" "$pytest" "$steps" <<'PY'
import sys
(iw, iu, isy), (sw, su, ss), (pw, pu, ps) = (map(float, a.split()) for a in sys.argv[1:4])
steps = int(sys.argv[4])
line = lambda w, u, s: f"{w:.3f} s wall ({u:.2f} user + {s:.2f} sys)"
print(f"{steps} steps x 8 metrics: pytest-regressions num_regression (CSV) {line(pw, pu, ps)}")
own = "sidecar" if steps > 10000 else "inline"  # record/series_file.h: kInlineSeriesSteps
print(f"  lockstep compare, series in a sidecar: {line(sw, su, ss)}, ratio {pw / sw:.1f}x (goal >= 20x)")
print(f"  lockstep compare, series inline:       {line(iw, iu, isy)}, ratio {pw / iw:.1f}x")
print(f"  (lockstep writes records of this length with the series {own})")
PY
