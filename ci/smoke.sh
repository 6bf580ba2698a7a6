#!/usr/bin/env bash
# The main job, on a fresh Debian 12 machine: install dependencies, fetch the
# real data, build, verify the golden set, and run `lockstep check` on the
# smoke suite (CPU).
# Exit code is lockstep's: 0 pass, 1 regression, 2 bad input, 3 environment,
# 4 nondeterministic.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/deps.sh
bash ci/fetch-data.sh
# Only what this job runs: the two executables, no test or bench binaries.
bash ci/build.sh build -DLOCKSTEP_BUILD_TESTS=OFF -DLOCKSTEP_BUILD_BENCH=OFF
./build/lockstep verify-goldens goldens
exec ./build/lockstep check smoke/ "$@"
