#!/usr/bin/env bash
# Installs everything lockstep needs to build and test, from Debian 12 packages.
# Idempotent: packages already present are skipped, so a warm machine pays
# only for one dpkg query. Nothing is vendored and nothing is downloaded from
# outside Debian's archive.
#   ci/deps.sh                          # build + test, Debian's LibTorch 1.13
#   LOCKSTEP_DEPS=image ci/deps.sh      # build only, LibTorch from ci/fetch-libtorch.sh
#                                       # (the CUDA Dockerfile; also Ubuntu 22.04 names)
set -euo pipefail

profile="${LOCKSTEP_DEPS:-full}"
packages=(
  build-essential cmake ninja-build ccache pkg-config git ca-certificates
  curl unzip              # ci/fetch-libtorch.sh
  nlohmann-json3-dev      # JSON
  libsimdjson-dev         # fast JSON parsing of long records
  libeigen3-dev           # vectorised comparisons
  libxxhash-dev           # XXH3-64/128
  libgit2-dev             # git state in provenance
  libcli11-dev            # command line
  libfmt-dev libspdlog-dev
  zlib1g-dev              # gzip CSV
  libopencv-core-dev libopencv-imgproc-dev libopencv-imgcodecs-dev  # image source
  dpkg-dev                # dpkg-deb, used by ci/fetch-data.sh
  libprotobuf-dev protobuf-compiler  # TensorBoard event files (src/ingest/tensorboard.proto)
  libisal-dev             # CRC-32C of TFRecord framing (ISA-L)
  libsqlite3-dev          # MLflow tracking databases (src/ingest/mlflow.cpp)
)
if [ "$profile" = full ]; then
  packages+=(
    libtorch-dev            # LibTorch 1.13 (CPU)
    libgloo-dev             # gloo/*.h for c10d::ProcessGroupGloo (libtorch-dev does not pull them in)
    libgtest-dev libgmock-dev libbenchmark-dev
    clang libclang-rt-14-dev  # libFuzzer (ci/fuzz.sh)
    python3-torch python3-numpy python3-xxhash  # python/lockstep, the trainer helper: tests/python, examples/pytorch-trainer
    chromium-headless-shell  # the HTML pages opened in a real browser (tests/ci/browser_test.sh)
  )
elif [ "$profile" != image ]; then
  echo "deps: LOCKSTEP_DEPS must be full or image, got '$profile'" >&2
  exit 2
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "deps: done"
