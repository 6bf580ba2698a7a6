#!/usr/bin/env bash
# Configures and builds lockstep into build/ (or $1), with ccache and two
# jobs: a 2-core machine cannot afford more LibTorch translation units at once.
#   ci/build.sh                  # LibTorch build, tests included
#   ci/build.sh build-notorch -DLOCKSTEP_WITH_TORCH=OFF
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${1:-build}"
shift || true

# ccache: relative paths so a fresh clone in another folder still hits the
# cache; sloppiness needed for precompiled headers.
export CCACHE_BASEDIR="$PWD"
export CCACHE_SLOPPINESS="pch_defines,time_macros,include_file_mtime,include_file_ctime"
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-5G}"

cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$build_dir" -j 2
