#!/usr/bin/env bash
# Runs what nothing else in the test command covers of the pipeline — its
# wiring and the blocking jobs build and smoke-cpu, as a merge-request
# pipeline — for real, with gitlab-ci-local (npm, pinned) and its shell
# executor, so .gitlab-ci.yml is tested, not only linted. unit-tests is
# ci/test.sh, which calls this script, and the sanitizers job's
# ci/sanitize.sh is one of its stages: both are left out here. The jobs
# share this machine's ccache (the pipeline's own CCACHE_DIR lies inside
# the job's copy of the checkout, cold every time).
#   ci/gitlab-ci-local.sh
#   ci/gitlab-ci-local.sh --install-only   # the tool alone (tests/ci/trainer_image_test.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
version=4.65.0
tool=.cache/gitlab-ci-local
# Install only what is missing: a machine whose Node.js comes from another
# repository (NodeSource's nodejs ships npm) must not get Debian's npm,
# which conflicts with it.
missing=()
for need in npm rsync git; do command -v "$need" >/dev/null || missing+=("$need"); done
if [ ${#missing[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || { echo "gitlab-ci-local: needs ${missing[*]} (run as root to install)" >&2; exit 3; }
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if [ ! -x "$tool/node_modules/.bin/gitlab-ci-local" ]; then
  npm install --silent --no-audit --no-fund --prefix "$tool" "gitlab-ci-local@$version" >/dev/null
fi
[ "${1:-}" != --install-only ] || exit 0
# gitlab-ci-local needs a git repository with a commit (a CI clone is one).
git rev-parse --verify -q HEAD >/dev/null || { echo "gitlab-ci-local: not a git checkout with a commit" >&2; exit 3; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
ccache_dir="${CCACHE_DIR:-$(ccache -k cache_dir 2>/dev/null || echo "$HOME/.cache/ccache")}"
if ! "$tool/node_modules/.bin/gitlab-ci-local" --force-shell-executor \
    --variable CI_PIPELINE_SOURCE=merge_request_event --ignore-predefined-vars CI_PIPELINE_SOURCE \
    --variable "CCACHE_DIR=$ccache_dir" \
    --state-dir .cache/gitlab-ci-local/state \
    build smoke-cpu >"$log" 2>&1; then
  tail -n 60 "$log" >&2
  echo "gitlab-ci-local: the CPU jobs failed (full log above)" >&2
  exit 1
fi
grep -E "PASS|FAIL|finished|passed|failed" "$log" | tail -n 12 || true
echo "gitlab-ci-local: build and smoke-cpu passed"
