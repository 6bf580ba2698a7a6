#!/usr/bin/env bash
# The one sanitizer build of the torch-free layers (build-san/): clang with
# AddressSanitizer and UndefinedBehaviorSanitizer, LibTorch off, the unit
# tests and the libFuzzer targets in one configuration. It serves the
# LibTorch-free check (ci/test.sh), the sanitizers (its ctest, below) and
# the fuzzers (ci/fuzz.sh): the torch-free layers are built once, not
# three times. Any sanitizer report fails the test that triggers it. (The
# Python helper's tests run in the main build; LibTorch itself is not
# instrumented, so the torch layers are left to the fuzzer and the tests.)
#   ci/sanitize.sh               # build and run the tests
#   ci/sanitize.sh --build-only  # build (ci/fuzz.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/build.sh build-san -DCMAKE_CXX_COMPILER=clang++ -DLOCKSTEP_WITH_TORCH=OFF -DLOCKSTEP_BUILD_FUZZ=ON \
  -DLOCKSTEP_BUILD_TESTS=ON
[ "${1:-}" = "--build-only" ] && exit 0
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS="suppressions=$PWD/ci/lsan.supp:print_suppressions=0"
(cd build-san && ctest -j 2 -LE python --output-on-failure)
echo "sanitize: the torch-free tests are clean under ASan and UBSan (build-san/)"
