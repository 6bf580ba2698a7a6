#!/usr/bin/env bash
# The cost of the batch-invariance sweep (docs/equivalence.md,
# "Batch-invariance sweep"): `lockstep probe SMOKE --batch-sweep` on each
# built-in model's committed smoke, with the hidden --batch-sweep-timing,
# which times at each piece size the plain forwards of the pieces (nothing
# kept) and the sweep's own pass (outputs kept and held to the whole
# batch's), each the best of 25 passes. Prints, per smoke and size, the
# ratio sweep / plain forwards, the median of R runs; and the worst.
# Goal (issue "Equivalence lanes ...", batch sweep): <= 2x one forward per size.
#   bench/batch_sweep.sh [BUILD_DIR] [R]   (default build/, 3)
set -euo pipefail
cd "$(dirname "$0")/.."
lockstep="$(realpath "${1:-build}")/lockstep"
runs="${2:-3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

for smoke in wine-mlp digits-cnn photos-cnn tokens-transformer; do
  for ((r = 1; r <= runs; r++)); do
    # Exit 1 is a verdict (a module that is not batch-invariant), not a failure.
    "$lockstep" probe "smoke/$smoke.json" --batch-sweep --batch-sweep-timing --json "$work/$smoke-$r.json" \
      >/dev/null || [ $? -eq 1 ] || { echo "bench: the sweep of $smoke failed" >&2; exit 1; }
  done
done
/usr/bin/python3 - "$work" "$runs" <<'PY'
import json, statistics, sys
work, runs = sys.argv[1], int(sys.argv[2])
worst = (0.0, "")
print(f"{'smoke':20} {'size':>5} {'plain forwards':>15} {'sweep':>12} {'ratio':>6}")
for smoke in ("wine-mlp", "digits-cnn", "photos-cnn", "tokens-transformer"):
    docs = [json.load(open(f"{work}/{smoke}-{r}.json")) for r in range(1, runs + 1)]
    for k, cell in enumerate(docs[0]["modules"][0]["cells"]):
        plain = statistics.median(d["modules"][0]["cells"][k]["plain_seconds"] for d in docs)
        sweep = statistics.median(d["modules"][0]["cells"][k]["seconds"] for d in docs)
        ratio = statistics.median(d["modules"][0]["cells"][k]["seconds"] / d["modules"][0]["cells"][k]["plain_seconds"]
                                  for d in docs)
        worst = max(worst, (ratio, f"{smoke} at {cell['size']}"))
        print(f"{smoke:20} {cell['size']:>5} {plain * 1e3:>12.3f} ms {sweep * 1e3:>9.3f} ms {ratio:>6.2f}")
print(f"worst: {worst[0]:.2f}x ({worst[1]}); goal <= 2x one forward per size")
PY
