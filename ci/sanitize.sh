#!/usr/bin/env bash
# The sanitizer build of the pipeline's test stage: the LibTorch-free part
# (core, record, compare, the trainer's specs and their unit tests) with
# AddressSanitizer and UndefinedBehaviorSanitizer, into build-asan/. Any
# sanitizer report fails the test that triggers it. (LibTorch itself is not
# instrumented, so the torch layers are left to the fuzzer and the tests.)
set -euo pipefail
cd "$(dirname "$0")/.."
flags="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
bash ci/build.sh build-asan -DLOCKSTEP_WITH_TORCH=OFF -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
(cd build-asan && ctest -j 2 --output-on-failure)
echo "sanitize: unit tests clean under ASan and UBSan"
