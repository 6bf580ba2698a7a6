#!/usr/bin/env bash
# No Docker engine runs in CI, so the Dockerfiles are held to what can be
# checked without one: exact base tags, the LibTorch pin, the contract's
# environment, a non-root user, and only scripts that CI itself runs.
set -euo pipefail
cd "$(dirname "$0")/../.."
fail() { echo "dockerfile_test: $*" >&2; exit 1; }
for f in Dockerfile Dockerfile.cpu; do
  from=$(grep -E '^FROM ' "$f" | awk '{print $2}')
  [[ "$from" == *:* && "$from" != *:latest ]] || fail "$f: base '$from' is not pinned to an exact tag"
  grep -q 'CUBLAS_WORKSPACE_CONFIG=:4096:8' "$f" || fail "$f: CUBLAS_WORKSPACE_CONFIG not set"
  grep -q 'TZ=UTC' "$f" && grep -q 'LANG=C.UTF-8' "$f" || fail "$f: TZ/LANG not set"
  grep -q 'LD_LIBRARY_PATH= PYTHONPATH=' "$f" || fail "$f: LD_LIBRARY_PATH/PYTHONPATH not cleared"
  grep -qE '^USER [a-z]' "$f" || fail "$f: no non-root USER"
  # A GitLab `image:` runs the job's shell: an ENTRYPOINT would have to be overridden.
  if grep -q '^ENTRYPOINT' "$f"; then fail "$f: has an ENTRYPOINT (a GitLab job would have to override it)"; fi
  grep -q 'cmake --install build --prefix /usr/local' "$f" || fail "$f: lockstep is not installed with cmake --install"
  grep -q 'LOCKSTEP_BUILD_TESTS=OFF' "$f" || fail "$f: the image builds the test binaries"
  for s in $(grep -oE 'ci/[a-z-]+\.sh' "$f" | sort -u); do
    [ -f "$s" ] || fail "$f calls $s, which does not exist"
    grep -rqF "$s" ci/test.sh ci/smoke.sh tests/ci/*.sh || fail "$f calls $s, which CI never runs"
  done
done
grep -q 'cudnn-devel' Dockerfile || fail "Dockerfile: base is not a CUDA + cuDNN development image"
pin=$(grep -E '^ARG LIBTORCH_SHA256=' Dockerfile | cut -d= -f2)
[[ "$pin" =~ ^[0-9a-f]{64}$ ]] || fail "Dockerfile: LIBTORCH_SHA256 is not a SHA-256"
grep -q "$pin" ci/fetch-libtorch.sh || fail "Dockerfile and ci/fetch-libtorch.sh pin different archives"
# The GPU jobs build on the same CUDA base and the same pinned LibTorch
# (ci/fetch-libtorch.sh's default) as the image.
gpu_image=$(grep -E '^ +image: nvidia/cuda' .gitlab-ci.yml | awk '{print $2}')
[ "$gpu_image" = "$(grep -E '^FROM ' Dockerfile | awk '{print $2}')" ] ||
  fail ".gitlab-ci.yml's GPU image '$gpu_image' is not the Dockerfile's base"
grep -q 'bash ci/fetch-libtorch.sh /opt/libtorch$' .gitlab-ci.yml || fail ".gitlab-ci.yml's GPU jobs do not fetch the pinned LibTorch"
echo "dockerfile_test: Dockerfile and Dockerfile.cpu pinned and calling tested scripts only"
