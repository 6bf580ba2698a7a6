#!/usr/bin/env bash
# Installs everything lockstep needs to build and test, from Debian's
# packages: Debian 12 (LibTorch 1.13), Debian 13 (2.6) or sid (2.14). No
# package name is pinned to one release (the fuzz build's libFuzzer runtime
# is the default clang's). Idempotent: packages already present are
# skipped, so a warm machine pays only for one dpkg query. Nothing is
# vendored and nothing is downloaded from outside Debian's archive.
#   ci/deps.sh                          # build + test, Debian's LibTorch
#   LOCKSTEP_DEPS=stack ci/deps.sh      # a stack root (ci/stack.sh): the LibTorch
#                                       # build, its tests and the Python helper's
#   LOCKSTEP_DEPS=image ci/deps.sh      # build only, LibTorch from ci/fetch-libtorch.sh
#                                       # (the CUDA Dockerfile; also Ubuntu 22.04 names)
#   ci/deps.sh --list                   # print the profile's package names, install nothing
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
torch_packages=(
  libtorch-dev            # Debian's LibTorch (CPU): 1.13 on 12, 2.6 on 13, 2.14 on sid
  libgloo-dev             # gloo/*.h for c10d::ProcessGroupGloo (libtorch-dev does not pull them in)
  libgtest-dev libgmock-dev libbenchmark-dev
  python3-torch python3-numpy python3-xxhash  # python/lockstep, the trainer helper: tests/python, examples/pytorch-trainer
  python3-wheel python3-venv  # the wheel (ci/wheel.sh) and its test: pip install into a venv (tests/ci/bundle_test.sh)
)
case "$profile" in
  full)
    packages+=("${torch_packages[@]}"
      clang clang-rt           # libFuzzer (ci/fuzz.sh); clang-rt: see clang_rt_package
      chromium-headless-shell  # the HTML pages opened in a real browser (tests/ci/browser_test.sh)
      docker.io docker-client  # the CI template's trainer jobs in a trainer image (tests/ci/trainer_image_test.sh); docker-client: see docker_client_package
      file                     # CPack's DEB generator reads shared-library dependencies with it (not in every base image)
    ) ;;
  stack) packages+=("${torch_packages[@]}"
      python3-dev python3-setuptools  # torch.compile: Inductor builds its C++ kernels with them (tests/ci/compiled_trainer_test.sh)
    ) ;;
  image) ;;
  *) echo "deps: LOCKSTEP_DEPS must be full, stack or image, got '$profile'" >&2; exit 2 ;;
esac

# clang_rt_package: the libFuzzer/sanitizer runtime of the default clang.
# Debian 13 and sid have the unversioned libclang-rt-dev; Debian 12 only
# libclang-rt-<major>-dev, <major> being what its `clang` depends on.
clang_rt_package() {
  if apt-cache show libclang-rt-dev >/dev/null 2>&1; then
    echo libclang-rt-dev
    return
  fi
  local major
  major=$( (apt-cache depends clang 2>/dev/null || true) | sed -n 's/^ *Depends: clang-\([0-9][0-9]*\)$/\1/p' | head -n 1)
  # No package lists to ask (before apt-get update): the unversioned name,
  # which Debian 12 (bookworm-updates), 13 and sid all have.
  if [ -z "$major" ]; then echo libclang-rt-dev; else echo "libclang-rt-${major}-dev"; fi
}

# docker_client_package: the docker command. Debian 13 and sid ship it in
# docker-cli, which docker.io only recommends; Debian 12's docker.io has it
# (no docker-cli there): nothing to add.
docker_client_package() {
  if apt-cache show docker-cli >/dev/null 2>&1; then echo docker-cli; fi
}

# resolved NAME: the package for one of the names above (clang-rt and
# docker-client stand for a release's own); "" for none.
resolved() {
  case "$1" in
    clang-rt) clang_rt_package ;;
    docker-client) docker_client_package ;;
    *) echo "$1" ;;
  esac
}

if [ "${1:-}" = --list ]; then
  for p in "${packages[@]}"; do
    p=$(resolved "$p")
    [ -z "$p" ] || echo "$p"
  done
  exit 0
fi

installed() { dpkg-query -W -f='${Status}\n' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing=()
for p in "${packages[@]}"; do
  if [ "$p" = clang-rt ]; then
    # Any libclang-rt*-dev of the installed clang's major version counts.
    major=$( (clang --version 2>/dev/null || true) | sed -n 's/.*clang version \([0-9][0-9]*\).*/\1/p' | head -n 1)
    { [ -n "$major" ] && { installed "libclang-rt-${major}-dev" || installed libclang-rt-dev; }; } || missing+=("$p")
    continue
  fi
  if [ "$p" = docker-client ]; then
    command -v docker >/dev/null || missing+=("$p")
    continue
  fi
  installed "$p" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
names=()
for p in "${missing[@]}"; do
  p=$(resolved "$p")
  [ -z "$p" ] || names+=("$p")
done
missing=("${names[@]}")
echo "deps: installing ${missing[*]}"
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "deps: done"
