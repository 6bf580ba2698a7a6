#!/usr/bin/env bash
# The CI template's trainer jobs in a team's own image, as a GitLab runner
# with the docker executor runs them: a Debian root with only python3,
# python3-venv, python3-torch and python3-numpy (and git and rsync, which
# gitlab-ci-local's helper container needs) imported into Docker as an
# image (`docker import`), and a team's pipeline run by gitlab-ci-local's
# docker executor, every job in that image but the first:
#   1. lockstep-wheel (shell): puts the wheel into dist/, the job's
#      artifacts (a team's job would fetch it from its package registry);
#   2. lockstep-trainer-bless (needs lockstep-wheel): installs the wheel
#      from those artifacts into .lockstep-venv over the image's torch and
#      blesses examples/pytorch-trainer; its goldens/ come back as artifacts
#      and are committed, as a reviewer would;
#   3. lockstep-trainer: PASS on that commit, with the wheel's lockstep
#      (a planted change failing the same check: tests/ci/bundle_test.sh).
# Needs root: starts dockerd when none answers (--bridge=none
# --iptables=false: the jobs use the host's network), and stops it again.
# Run by ci/stack.sh with its image root; gitlab-ci-local comes from
# ci/gitlab-ci-local.sh's install (.cache/gitlab-ci-local).
#   tests/ci/trainer_image_test.sh ROOT_TARBALL WHEEL
set -euo pipefail
cd "$(dirname "$0")/../.."
repo="$PWD"
fail() { echo "trainer_image_test: $*" >&2; exit 1; }
[ $# -eq 2 ] && [ -f "$1" ] && [ -f "$2" ] ||
  { echo "usage: tests/ci/trainer_image_test.sh ROOT_TARBALL WHEEL" >&2; exit 2; }
root_tarball="$(realpath "$1")"
wheel="$(realpath "$2")"
glci="$repo/.cache/gitlab-ci-local/node_modules/.bin/gitlab-ci-local"
[ -x "$glci" ] || bash ci/gitlab-ci-local.sh --install-only
command -v docker >/dev/null && command -v dockerd >/dev/null ||
  fail "docker is missing (apt-get install docker.io; ci/deps.sh installs it)"
unset CI LOCKSTEP_BIN LOCKSTEP_PYTHONPATH LOCKSTEP_SEED LOCKSTEP_STACK
work="$(mktemp -d)"
started_dockerd=""
cleanup() {
  if [ -n "$started_dockerd" ]; then
    kill "$started_dockerd" 2>/dev/null || true
    wait "$started_dockerd" 2>/dev/null || true
  fi
  [ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT

# A Docker daemon: the one running, or one started for this test.
if ! docker info >/dev/null 2>&1; then
  dockerd --iptables=false --bridge=none >"$work/dockerd.log" 2>&1 &
  started_dockerd=$!
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 0.5; done
  # A machine whose kernel cannot run containers (no overlay or cgroups: a
  # container CI job itself) skips this test loudly, exit 77, rather than
  # failing the suite; ci/stack.sh says SKIPPED with the reason.
  docker info >/dev/null 2>&1 || {
    tail -n 20 "$work/dockerd.log" >&2
    echo "trainer_image_test: SKIPPED: dockerd did not start on this machine (log above)" >&2
    exit 77
  }
fi

# The image, named after the root's tarball (made once per package list).
image="lockstep-stack/$(basename "$root_tarball" .tar | sed -E 's/-([0-9a-f]{12})$/:\1/')"
if ! docker image inspect "$image" >/dev/null 2>&1; then
  docker import "$root_tarball" "$image" >/dev/null || fail "docker import $root_tarball failed"
  echo "trainer_image_test: imported $image"
fi

# The team's repository: its trainer, no goldens yet, gated by lockstep.
team="$work/team"
cp -r "$repo/examples/pytorch-trainer" "$team"
cd "$team"
rm -rf goldens lockstep-out
sed -i '/"platforms"/d' smoke/pytorch-trainer.json   # this machine's platform, whatever it is
# The team's data, in its repository here (a team bakes it into the image
# or fetches it in a before_script): the jobs' {data} is data/.
data_dir="${LOCKSTEP_DATA_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lockstep/data}"
[ -f "$data_dir/digits.csv.gz" ] || fail "no $data_dir/digits.csv.gz (bash ci/fetch-data.sh)"
mkdir data && cp "$data_dir/digits.csv.gz" data/
git init -q -b main . && git config user.email dev@example.com && git config user.name "Image Test"
# init from the wheel's own lockstep (a venv on the host; its torch is not used).
python3 -m venv "$work/host-venv" >/dev/null
"$work/host-venv/bin/python" -m pip install --no-index --no-deps --no-cache-dir -q "$wheel" >"$work/pip.log" 2>&1 ||
  { cat "$work/pip.log" >&2; fail "pip install $wheel on the host failed"; }
"$work/host-venv/bin/lockstep" init --kind trainer >"$work/init.log" 2>&1 ||
  { cat "$work/init.log" >&2; fail "lockstep init --kind trainer failed"; }
# The team's own job that brings the wheel (here from a file on the host),
# and the template's trainer jobs taking it from that job's artifacts.
cat >>.gitlab-ci.yml <<'YML'

lockstep-wheel:
  stage: .pre
  script:
    - mkdir -p dist && cp "$WHEEL_FILE" dist/
  artifacts:
    paths: [dist/]
lockstep-trainer:
  needs: [lockstep-wheel]
  variables: {LOCKSTEP_DATA_DIR: $CI_PROJECT_DIR/data}
lockstep-trainer-bless:
  needs: [lockstep-wheel]
  variables: {LOCKSTEP_DATA_DIR: $CI_PROJECT_DIR/data}
YML
git add -A && git commit -qm "a trainer gated by lockstep"

# run_job JOB LOG [VARIABLE=VALUE...]: the job and the jobs it needs.
run_job() {
  local job=$1 log=$2 vars=()
  shift 2
  for v in "$@"; do vars+=(--variable "$v"); done
  "$glci" --needs --network host --helper-image "$image" --state-dir .gitlab-ci-local \
    --variable CI_PIPELINE_SOURCE=merge_request_event --ignore-predefined-vars CI_PIPELINE_SOURCE \
    --variable LOCKSTEP_TRAINER_IMAGE="$image" --variable WHEEL_FILE="$wheel" \
    --variable LOCKSTEP_WHEEL="dist/$(basename "$wheel")" --variable PIP_NO_INDEX=1 \
    "${vars[@]}" "$job" >"$log" 2>&1
}
run_job lockstep-trainer-bless "$work/bless.log" LOCKSTEP_BLESS_REASON="first golden, in the team's image" ||
  { tail -n 40 "$work/bless.log" >&2; fail "lockstep-trainer-bless should pass"; }
ls goldens/pytorch-trainer/*.json >/dev/null 2>&1 ||
  { tail -n 40 "$work/bless.log" >&2; fail "lockstep-trainer-bless left no golden in its artifacts"; }
torch_version=$(python3 -c 'import glob, json; g = json.load(open(sorted(glob.glob("goldens/pytorch-trainer/*.json"))[0])); print(g["fingerprint"]["python.torch"]["value"])')
git add goldens && git commit -qm "first golden, blessed in the team's image"
echo "trainer_image_test: lockstep-trainer-bless in $image blessed the trainer (torch $torch_version)"

run_job lockstep-trainer "$work/check.log" || { tail -n 40 "$work/check.log" >&2; fail "lockstep-trainer should pass"; }
grep -q "PASS  lockstep-trainer" "$work/check.log" || { tail -n 40 "$work/check.log" >&2; fail "lockstep-trainer should pass"; }
binary=$("$work/host-venv/bin/lockstep" --version)
grep -q "$binary" "$work/check.log" || { tail -n 40 "$work/check.log" >&2; fail "lockstep-trainer should run the wheel's $binary"; }
grep -q "starting $image" "$work/check.log" || fail "lockstep-trainer should run in $image"
echo "trainer_image_test: lockstep-trainer in $image installed the wheel from lockstep-wheel's artifacts and passed"
