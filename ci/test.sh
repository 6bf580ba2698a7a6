#!/usr/bin/env bash
# The test suite, on a fresh Debian 12 machine: dependencies, data, the
# LibTorch build with every test (unit, torch, end-to-end CLI); the one
# sanitizer build of the torch-free layers (clang, ASan, UBSan, no
# LibTorch: ci/sanitize.sh), whose tests run sanitized, whose `lockstep`
# must compare without LibTorch and exit 3 for `run`, and whose fuzzers
# run (ci/fuzz.sh); the image recipes; the GitLab pipeline's wiring and
# smoke job through gitlab-ci-local; the Debian package in a scratch
# team repository with the CI template; the bundle and the wheel; then the
# LibTorch build and its torch tests again on Debian 13's LibTorch 2.6, in
# a root made from Debian's archive, and the bundle and wheel in a trixie
# trainer image (ci/stack.sh trixie). Every stage prints its wall time,
# and the total at the end, so a slow stage shows in the run that made it so.
#
#   LOCKSTEP_TEST_FROM=browser bash ci/test.sh   # again from a stage that failed:
#                                                # dependencies and build still run
#                                                # (both incremental), the others before it
#                                                # are skipped, said
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
timings=()
from="${LOCKSTEP_TEST_FROM:-}"
reached=$([ -z "$from" ] && echo yes || echo no)
# stage NAME COMMAND...: runs it, prints and keeps its wall time.
stage() {
  local name="$1" t0 t1
  shift
  [ "$name" = "$from" ] && reached=yes
  if [ "$reached" = no ] && [ "$name" != dependencies ] && [ "$name" != build ]; then
    echo "== test: $name: skipped (LOCKSTEP_TEST_FROM=$from)"
    return 0
  fi
  t0=$(date +%s)
  echo "== test: $name"
  "$@"
  t1=$(date +%s)
  timings+=("$(printf '%-26s %5d s' "$name" $((t1 - t0)))")
  echo "== test: $name: $((t1 - t0)) s"
}

libtorch_free_check() {
  # The front `lockstep` never loads LibTorch; `lockstep-torch` beside it does.
  if ldd build/lockstep | grep -q torch; then
    echo "test: build/lockstep links LibTorch (only lockstep-torch may)" >&2
    return 1
  fi
  if ldd build-san/lockstep | grep -q torch; then
    echo "test: build-san/lockstep links LibTorch" >&2
    return 1
  fi
  # The compare-only binary compares two records written by the full build.
  ./build/lockstep run smoke/digits-cnn.json --record build-san/a.json --quiet
  for g in goldens/digits-cnn/*.json; do
    ./build-san/lockstep compare build-san/a.json "$g" --config smoke/digits-cnn.json >/dev/null
  done
  local code=0
  ./build-san/lockstep run smoke/digits-cnn.json >/dev/null 2>&1 || code=$?
  [ "$code" -eq 3 ] || { echo "test: LibTorch-free run should exit 3, got $code" >&2; return 1; }
  echo "test: LibTorch-free build: compare works, run exits 3, no LibTorch linked"
}

image_recipes() {
  # No Docker engine here: the LibTorch fetch script the images call, the
  # package profile they use, and their pins.
  bash tests/ci/fetch_libtorch_test.sh
  LOCKSTEP_DEPS=image bash ci/deps.sh
  bash tests/ci/dockerfile_test.sh
}

# as_root COMMAND...: the command as root (ci/stack.sh mounts and chroots).
as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

stage "dependencies" bash ci/deps.sh
stage "datasets" bash ci/fetch-data.sh
stage "build" bash ci/build.sh build -DLOCKSTEP_BUILD_TESTS=ON
# The torch-linked, end-to-end and Python tests; the `unit` label (the
# torch-free layers) runs once, under ASan and UBSan, in the sanitizer
# stage below: the same tests, from the same sources.
stage "ctest" bash -c 'cd build && ctest -j 2 -LE unit --output-on-failure'
# The HTML pages (report, review, history) in headless Chromium.
stage "browser" bash tests/ci/browser_test.sh build
stage "sanitizer build + tests" bash ci/sanitize.sh
stage "LibTorch-free check" libtorch_free_check
# libFuzzer on the record/golden parser, the sidecar and the metric-log
# readers, bounded in time.
stage "fuzzers" env FUZZ_SECONDS="${FUZZ_SECONDS:-20}" bash ci/fuzz.sh
stage "image recipes" image_recipes
# The pipeline itself: its build and smoke-cpu jobs from .gitlab-ci.yml, run
# by gitlab-ci-local with the shell executor (its sanitizers job is the
# stage above).
stage "gitlab-ci-local" bash ci/gitlab-ci-local.sh
# The Debian package (cpack -G DEB) unpacked into an empty root, gating a
# scratch team repository: init, bless, check, the installed pre-push hook
# blocking a data edit, the example trainer with the installed Python
# helper, and the installed CI template run by gitlab-ci-local (two shards,
# a blocked change, the bless job).
stage "package and CI template" bash tests/ci/package_test.sh build
# The relocatable bundle of the torch-free lockstep (ci/bundle.sh) and its
# wheel (ci/wheel.sh), written to build/; the trixie stage tests them where
# a team puts them (tests/ci/bundle_test.sh, tests/ci/trainer_image_test.sh).
stage "bundle and wheel" bash -c 'bash ci/bundle.sh build && bash ci/wheel.sh build'
# LibTorch 2.6 (Debian 13) in a root made from Debian's archive, cached under
# /var/cache/lockstep/stacks: the LibTorch build, its tests, the Python
# helper's tests, check smoke/ and the example trainer against the 1.13
# goldens; then the bundle and the wheel made above in a second trixie root
# with only python3, python3-venv, python3-torch and python3-numpy (ldd into
# their lib/lockstep, a trainer gated with the shipped helper), and that
# root as a Docker image running the CI template's trainer jobs under
# gitlab-ci-local (ci/stack.sh; `ci/stack.sh sid` does the same for
# LibTorch 2.14).
stage "stack: trixie (LibTorch 2.6)" as_root bash ci/stack.sh trixie

if [ "$reached" = no ]; then
  echo "test: LOCKSTEP_TEST_FROM=$from names no stage (see the \"== test:\" lines above)" >&2
  exit 2
fi
echo "== test: stage times"
printf '   %s\n' "${timings[@]}"
echo "== test: all stages passed in $(( $(date +%s) - started )) s"
