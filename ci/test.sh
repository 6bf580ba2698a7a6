#!/usr/bin/env bash
# The test suite, on a fresh Debian 12 machine: dependencies, data, the
# LibTorch build with every test (unit, torch, end-to-end CLI), then the
# build without LibTorch, whose `lockstep compare` and torch-free tests must
# work and whose binary must not link LibTorch; the fuzzer; the image
# recipes; the GitLab pipeline's CPU jobs through gitlab-ci-local; and the
# Debian package in a scratch team repository with the CI template.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/deps.sh
bash ci/fetch-data.sh

bash ci/build.sh build -DLOCKSTEP_BUILD_TESTS=ON
(cd build && ctest -j 2 --output-on-failure)
# The front `lockstep` never loads LibTorch; `lockstep-torch` beside it does.
if ldd build/lockstep | grep -q torch; then
  echo "test: build/lockstep links LibTorch (only lockstep-torch may)" >&2
  exit 1
fi

bash ci/build.sh build-notorch -DLOCKSTEP_WITH_TORCH=OFF
(cd build-notorch && ctest -j 2 --output-on-failure)
if ldd build-notorch/lockstep | grep -q torch; then
  echo "test: build-notorch/lockstep links LibTorch" >&2
  exit 1
fi
# The compare-only binary compares two records written by the full build.
./build/lockstep run smoke/digits-cnn.json --out build-notorch/a.json --quiet
for g in goldens/digits-cnn/*.json; do
  ./build-notorch/lockstep compare build-notorch/a.json "$g" --config smoke/digits-cnn.json >/dev/null
done
code=0; ./build-notorch/lockstep run smoke/digits-cnn.json >/dev/null 2>&1 || code=$?
[ "$code" -eq 3 ] || { echo "test: LibTorch-free run should exit 3, got $code" >&2; exit 1; }
echo "test: LibTorch-free build: compare works, run exits 3, no LibTorch linked"

# libFuzzer on the record/golden parser and the comparator, bounded in time.
FUZZ_SECONDS="${FUZZ_SECONDS:-60}" bash ci/fuzz.sh

# The image recipes (no Docker engine here): the LibTorch fetch script they
# call, the package profile they use, and their pins.
bash tests/ci/fetch_libtorch_test.sh
LOCKSTEP_DEPS=image bash ci/deps.sh
bash tests/ci/dockerfile_test.sh

# The pipeline itself: build, sanitizers (ASan + UBSan) and smoke-cpu from
# .gitlab-ci.yml, run by gitlab-ci-local with the shell executor.
bash ci/gitlab-ci-local.sh
# The Debian package (cpack -G DEB) unpacked into an empty root, gating a
# scratch team repository: init, bless, check, the installed pre-push hook
# blocking a data edit, the example trainer with the installed Python
# helper, and the installed CI template run by gitlab-ci-local (two shards,
# a blocked change, the bless job).
bash tests/ci/package_test.sh build
