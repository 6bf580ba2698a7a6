#!/usr/bin/env bash
# Configures and builds lockstep into build/ (or $1), with ccache and two
# jobs: a 2-core machine cannot afford more LibTorch translation units at once.
#   ci/build.sh                  # LibTorch build, tests included
#   ci/build.sh build-san -DLOCKSTEP_WITH_TORCH=OFF ...   (ci/sanitize.sh: the torch-free sanitizer build)
#   LOCKSTEP_USE_BUILD=1 ci/build.sh   # keep an existing build/ (a CI artifact)
#   LOCKSTEP_TARGETS="lockstep lockstep-torch" ci/build.sh build-sid   # only those targets (ci/stack.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${1:-build}"
shift || true

# A pipeline job that `needs` the build job runs on its artifact (binaries,
# no object files): LOCKSTEP_USE_BUILD=1 uses it as it is instead of
# rebuilding from scratch.
if [ "${LOCKSTEP_USE_BUILD:-0}" = 1 ] && [ -x "$build_dir/lockstep" ]; then
  echo "build: using the prebuilt $build_dir/ (LOCKSTEP_USE_BUILD=1)"
  exit 0
fi

# ccache: relative paths so a fresh clone in another folder still hits the
# cache (CCACHE_BASEDIR, and no build-folder path in the hash: with -g ccache
# would otherwise hash the folder, and every clone would miss);
# sloppiness needed for precompiled headers.
export CCACHE_BASEDIR="$PWD"
export CCACHE_NOHASHDIR=1
export CCACHE_SLOPPINESS="pch_defines,time_macros,include_file_mtime,include_file_ctime"
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-5G}"

cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$build_dir" -j 2 ${LOCKSTEP_TARGETS:+--target $LOCKSTEP_TARGETS}
