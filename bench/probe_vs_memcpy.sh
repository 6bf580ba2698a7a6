#!/usr/bin/env bash
# Probe throughput over a 64 MiB float32 batch as a ratio of memcpy of the
# same buffer in the same run (goal >= 0.5), and the photos pipeline's
# batches per second with 2 workers (bench/probe_bench.cpp).
#   bench/probe_vs_memcpy.sh          (needs ci/fetch-data.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/build.sh build -DLOCKSTEP_BUILD_BENCH=ON >/dev/null
ninja -C build -j2 probe_bench >/dev/null
data="${LOCKSTEP_DATA_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lockstep/data}"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
LOCKSTEP_PHOTOS="$data/photos" ./build/bench/probe_bench --benchmark_format=json \
  --benchmark_repetitions=5 --benchmark_report_aggregates_only=true >"$out" 2>/dev/null
python3 - "$out" <<'PY'
import json, sys
rows = {b["name"]: b for b in json.load(open(sys.argv[1]))["benchmarks"]}
mem = rows["BM_Memcpy_median"]["bytes_per_second"]
probe = rows["BM_ProbeFloats_median"]["bytes_per_second"]
print(f"memcpy 64 MiB:        {mem / 2**30:.2f} GiB/s")
print(f"probe 64 MiB:         {probe / 2**30:.2f} GiB/s")
print(f"ratio probe/memcpy:   {probe / mem:.2f}   (goal >= 0.5)")
portable = rows["BM_ProbeFloatsPortable_median"]["bytes_per_second"]
print(f"portable kernel:      {portable / mem:.2f} of memcpy (CPUs without AVX2)")
img = rows.get("BM_ImagePipeline/real_time_median")
if img:
    print(f"photos pipeline:      {img['batches_per_s']:.0f} batches/s (batch 4, 2 workers)")
PY
