#!/usr/bin/env bash
# Fuzzes the record/golden parser and the comparator with libFuzzer for a
# bounded time (default 60 s; FUZZ_SECONDS overrides; the test command
# gives 20), then the series sidecar reader for half that, then each
# metric-log reader (TensorBoard, JSONL with batch probes, MLLOG, CSV) and
# other tools' goldens for a quarter of it (5 s at least; a FUZZ_SECONDS
# above 60, a nightly run, gives each of them all of it). The committed
# corpora are replayed in full first, whatever the time. Zero crashes, leaks
# or sanitizer reports, or this fails. The fuzzers are those of the one
# sanitizer build (ci/sanitize.sh: clang, ASan, UBSan, no LibTorch,
# build-san/), built there if they are not yet.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/sanitize.sh --build-only >/dev/null
corpus=build-san/corpus
mkdir -p "$corpus"
./build-san/tests/fuzz/record_fuzz -max_total_time="${FUZZ_SECONDS:-60}" -max_len=16384 \
  -print_final_stats=1 "$corpus" tests/fuzz/corpus 2>&1 | grep -E "^(Done|stat::|==|SUMMARY|ERROR)" | head -n 20
# The series sidecar reader (tests/fuzz/sidecar_fuzz.cpp): file I/O per
# input, so fewer runs; half the time.
sidecar_corpus=build-san/sidecar-corpus
mkdir -p "$sidecar_corpus"
./build-san/tests/fuzz/sidecar_fuzz -max_total_time="$(( (${FUZZ_SECONDS:-60} + 1) / 2 ))" -max_len=4096 \
  -print_final_stats=1 "$sidecar_corpus" 2>&1 | grep -E "^(Done|stat::|==|SUMMARY|ERROR)" | head -n 20
# The metric-log readers (src/ingest/), one after another: a quarter of
# FUZZ_SECONDS each (5 s at least) so the whole script stays bounded; a
# FUZZ_SECONDS above 60 (a nightly run) gives each of them all of it.
fuzz_total="${FUZZ_SECONDS:-60}"
ingest_seconds=$(( fuzz_total > 60 ? fuzz_total : (fuzz_total / 4 < 5 ? 5 : fuzz_total / 4) ))
for reader in tensorboard jsonl mllog metrics_csv peer_goldens mlflow; do
  reader_corpus="build-san/corpus-$reader"
  mkdir -p "$reader_corpus"
  ./build-san/tests/fuzz/${reader}_fuzz -max_total_time="$ingest_seconds" -max_len=8192 -print_final_stats=1 \
    "$reader_corpus" "tests/fuzz/corpus-$reader" 2>&1 | grep -E "^(Done|stat::|==|SUMMARY|ERROR)" | head -n 20
done
echo "fuzz: no crash in ${FUZZ_SECONDS:-60} s (records) + $(( (${FUZZ_SECONDS:-60} + 1) / 2 )) s (sidecars)" \
  "+ 6 x $ingest_seconds s (metric logs, other tools' goldens and histories)"
