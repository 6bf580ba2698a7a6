#!/usr/bin/env bash
# The CI template for other repositories (ci/templates/lockstep.gitlab-ci.yml)
# run for real by gitlab-ci-local's shell executor, in a scratch repository
# that is not lockstep's: `lockstep init`, a first bless, then
#   1. a merge-request pipeline: lockstep-check's two shards pass, each with
#      its own JUnit, and between them every smoke is checked once;
#   2. a commit that changes a smoke's learning rate: the shard holding it fails;
#   3. the manual lockstep-bless job: the new golden is its artifact;
#   4. a 2-rank smoke on two nodes (.lockstep-nodes, parallel: 2) passes;
#   5. two scheduled nights of lockstep-nightly: the ledger kept in the cache.
#   tests/ci/template_test.sh [BUILD_DIR]   (default build/; needs ci/gitlab-ci-local.sh's install)
set -euo pipefail
cd "$(dirname "$0")/../.."
repo="$PWD"
build="$(realpath "${1:-build}")"
glci="$repo/.cache/gitlab-ci-local/node_modules/.bin/gitlab-ci-local"
[ -x "$glci" ] || { echo "template_test: run ci/gitlab-ci-local.sh first (it installs gitlab-ci-local)" >&2; exit 3; }
export PATH="$build:$PATH"
work="$(mktemp -d)"
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
fail() { echo "template_test: $*" >&2; exit 1; }
now() { date +%s.%N; }
t0=$(now)

cd "$work"
git init -q -b main team && cd team
git remote add origin https://gitlab.example.com/ml/team.git
git config user.email ci@example.com && git config user.name "Template Test"
lockstep init >/dev/null
# A second smoke, so the two shards each get one.
sed -e 's/"example-mlp"/"example-mlp-wide"/' -e 's/"hidden": 32/"hidden": 48/' smoke/example-mlp.json >smoke/example-mlp-wide.json
git add -A && git commit -qm "lockstep init"
lockstep bless smoke/ --reason "first goldens" --out "$work/bless-out" >/dev/null
git add goldens && git commit -qm "first goldens"
t_setup=$(now)

run_jobs() {  # gitlab-ci-local as a merge-request pipeline; output in $work/glci.log
  "$glci" --force-shell-executor --variable CI_PIPELINE_SOURCE=merge_request_event \
    --ignore-predefined-vars CI_PIPELINE_SOURCE "$@" >"$work/glci.log" 2>&1
}

# 1. Both shards pass, each with its own JUnit; every smoke checked once.
run_jobs lockstep-check || { tail -n 40 "$work/glci.log" >&2; fail "lockstep-check should pass"; }
grep -q "PASS  lockstep-check: \[1/2\]" "$work/glci.log" || fail "no passing shard 1/2"
grep -q "PASS  lockstep-check: \[2/2\]" "$work/glci.log" || fail "no passing shard 2/2"
checked=$(grep -oE "check: shard [12]/2: 1 of 2 smokes \(example-mlp(-wide)?\)" "$work/glci.log" | sed 's/.*(\(.*\))/\1/' | sort | tr '\n' ' ')
[ "$checked" = "example-mlp example-mlp-wide " ] || { grep "check: shard" "$work/glci.log" >&2; fail "shards should check each smoke once, got: $checked"; }
junits=$(find .gitlab-ci-local/artifacts -path "*lockstep-check*" -name junit.xml | wc -l)
[ "$junits" -eq 2 ] || fail "expected a junit.xml per shard in the artifacts, found $junits"
t_check=$(now)

# 2. A changed learning rate fails the shard that holds the smoke.
sed -i 's/"lr": 0.01/"lr": 0.02/' smoke/example-mlp.json
git commit -qam "raise the learning rate"
if run_jobs lockstep-check; then fail "lockstep-check should fail after the lr change"; fi
grep -qE "FAIL  lockstep-check: \[[12]/2\]" "$work/glci.log" || { tail -n 40 "$work/glci.log" >&2; fail "no failing shard"; }
grep -q "first divergence: input changed: smoke config example-mlp" "$work/glci.log" || fail "the report should name the changed config"
grep -q "(reproduced 1 of 1)" "$work/glci.log" || fail "the template's --rerun-failing 1 should reproduce the failure"
t_fail=$(now)

# 3. The manual bless job: the new golden is an artifact, not a push.
before=$(git rev-parse HEAD)
run_jobs lockstep-bless --variable LOCKSTEP_BLESS_REASON="lr 0.02 approved" || { tail -n 40 "$work/glci.log" >&2; fail "lockstep-bless should pass"; }
grep -q "PASS  lockstep-bless" "$work/glci.log" || { tail -n 40 "$work/glci.log" >&2; fail "lockstep-bless should pass"; }
blessed=$(find .gitlab-ci-local/artifacts -path "*lockstep-bless*" -path "*goldens/example-mlp/*" -name "*.json")
[ -n "$blessed" ] && grep -q '"reason": "lr 0.02 approved"' $blessed ||
  fail "lockstep-bless should leave the new goldens/example-mlp/ golden, with its reason, in its artifacts"
[ "$(git rev-parse HEAD)" = "$before" ] || fail "lockstep-bless must not commit"
t_bless=$(now)

# 4. A 2-rank smoke spread over two "machines": .lockstep-nodes with
#    parallel: 2, both jobs started together on this host (127.0.0.1);
#    node 0's merged record passes against the golden blessed on one machine.
sed -e 's/"example-mlp"/"example-mlp-2rank"/' -e 's/"resume_at": 5,/"distributed": {"world_size": 2, "timeout_s": 120},/' \
  smoke/example-mlp.json >smoke/example-mlp-2rank.json
echo ".gitlab-ci-local/" >>.git/info/exclude   # the earlier pipelines' state
git add smoke && git commit -qm "a 2-rank smoke"
lockstep bless smoke/example-mlp-2rank.json --reason "2-rank smoke" --out "$work/bless-2rank" >/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
printf '\nlockstep-2-nodes:\n  extends: .lockstep-nodes\n  parallel: 2\n  variables:\n    LOCKSTEP_NODE_SMOKE: smoke/example-mlp-2rank.json\n    MASTER_ADDR: "127.0.0.1"\n    MASTER_PORT: "%s"\n' "$port" >>.gitlab-ci.yml
git add -A && git commit -qm "its golden, and the 2-node job"
run_jobs lockstep-2-nodes || { tail -n 40 "$work/glci.log" >&2; fail "lockstep-2-nodes should pass"; }
{ grep -q "PASS  lockstep-2-nodes: \[1/2\]" "$work/glci.log" && grep -q "PASS  lockstep-2-nodes: \[2/2\]" "$work/glci.log"; } ||
  { tail -n 40 "$work/glci.log" >&2; fail "both node jobs should pass"; }
grep -q "2 ranks (gloo, on 2 machines through 127.0.0.1:$port)" "$work/glci.log" ||
  { tail -n 40 "$work/glci.log" >&2; fail "node 0 should merge both ranks' records"; }
grep -q "node 1 of 2: rank 1 finished; node 0 writes the record" "$work/glci.log" || fail "node 1 should hand its record to node 0"
grep -q "example-mlp-2rank: PASS (exit 0)" "$work/glci.log" ||
  { grep -i "example-mlp-2rank" "$work/glci.log" | tail -n 5 >&2; fail "node 0 should compare the record with the golden and pass"; }
t_nodes=$(now)

# 5. Two scheduled nights: the ledger survives in the CI cache, and the
#    second night's history page and JSON hold both nights.
lockstep bless smoke/example-mlp.json --reason "lr 0.02 approved" --out "$work/bless-lr" >/dev/null
git add -A && git commit -qm "the approved golden"
for night in 1 2; do
  "$glci" --force-shell-executor --variable CI_PIPELINE_SOURCE=schedule --ignore-predefined-vars CI_PIPELINE_SOURCE \
    lockstep-nightly >"$work/glci.log" 2>&1 || { tail -n 40 "$work/glci.log" >&2; fail "lockstep-nightly night $night should pass"; }
done
grep -q "history: example-mlp: 2 nights" "$work/glci.log" || { tail -n 40 "$work/glci.log" >&2; fail "the second night should read both nights from the cache"; }
page=$(find .gitlab-ci-local/artifacts -path "*lockstep-nightly*" -name history.html | head -n 1)
[ -n "$page" ] && grep -q "<svg class=\"trend\"" "$page" || fail "lockstep-nightly should leave the history page in its artifacts"
t_nightly=$(now)

awk -v a="$t0" -v b="$t_setup" -v c="$t_check" -v d="$t_fail" -v e="$t_bless" -v f="$t_nodes" -v g="$t_nightly" 'BEGIN {
  printf "template_test: init + bless %.1f s; lockstep-check (2 shards) pass %.1f s; fail %.1f s; lockstep-bless %.1f s; lockstep-2-nodes %.1f s; lockstep-nightly x2 %.1f s\n", b-a, c-b, d-c, e-d, f-e, g-f }'
echo "template_test: the CI template passes, blocks a changed smoke, blesses into an artifact, gates a smoke on two nodes, and keeps the nightly history"
