#!/usr/bin/env bash
# The stack migration of docs/platforms.md ("Migrating to another stack"),
# run as written: the ```sh block between <!-- migration --> and
# <!-- /migration -->, its lines in order, in a scratch git repository
# holding the repository's wine-mlp smoke and its golden (blessed on Debian
# 12's LibTorch 1.13). A line ending in "# exit N" must exit N; every other
# line must exit 0. Then what each step must have said and left:
#   1. check under the label: compared with the unlabeled 1.13 golden in the
#      cross-stack lane, LibTorch's version named first, a note, and a
#      pending golden for the label;
#   2. review: the pending golden against that stand-in;
#   3. accept: goldens/wine-mlp/cpu-x86_64-avx2@torch2.json, under the label;
#   4. check under the label on its own golden (same stack); verify-goldens
#      names the stack left behind;
#   5. bless unlabeled on the new stack; verify-goldens refuses the label
#      left over; after git rm it passes.
# Runs in a root whose LibTorch is not 1.13 (ci/stack.sh trixie|sid).
#   tests/ci/migration_test.sh BUILD_DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
repo="$PWD"
build="$(realpath "${1:?usage: tests/ci/migration_test.sh BUILD_DIR}")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "migration_test: $*" >&2; exit 1; }

awk '/^<!-- migration -->$/ { n++; inside = 1; next }
     /^<!-- \/migration -->$/ { inside = 0; next }
     inside && /^```/ { fences++; next }
     inside && fences == 1 { print }
     END { exit !(n == 1 && fences == 2 && !inside) }' docs/platforms.md >"$work/migration.sh" ||
  fail "docs/platforms.md should hold one \`\`\`sh block between <!-- migration --> and <!-- /migration -->"

# The scratch repository: the smoke, its 1.13 golden, committed.
proj="$work/team"
mkdir -p "$proj/smoke" "$proj/goldens"
cp smoke/wine-mlp.json "$proj/smoke/"
cp -r goldens/wine-mlp "$proj/goldens/"
printf '/lockstep-out/\n' >"$proj/.gitignore"
export GIT_AUTHOR_NAME="Migration Test" GIT_AUTHOR_EMAIL=migration@example.com
export GIT_COMMITTER_NAME="Migration Test" GIT_COMMITTER_EMAIL=migration@example.com
git -C "$proj" init -q -b main
git -C "$proj" add -A
git -C "$proj" commit -qm "wine-mlp and its golden, blessed on LibTorch 1.13"
golden_torch=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["fingerprint"]["torch.version"]["value"])' \
  "$proj/goldens/wine-mlp/cpu-x86_64-avx2.json")
[ "$golden_torch" = 1.13.0 ] || fail "the wine-mlp golden should be LibTorch 1.13.0's, is $golden_torch's"

(
  cd "$proj"
  export PATH="$build:$PATH"
  unset CI LOCKSTEP_STACK LOCKSTEP_SEED
  mapfile -t lines <"$work/migration.sh"
  for i in "${!lines[@]}"; do
    line=${lines[$i]}
    [[ "$line" =~ ^[[:space:]]*(#|$) ]] && continue
    want=0
    [[ "$line" =~ \#\ exit\ ([0-9]+)$ ]] && want=${BASH_REMATCH[1]}
    echo "migration\$ $line"
    rc=0
    eval "$line" </dev/null || rc=$?
    [ "$rc" -eq "$want" ] || { echo "migration_test: line $((i + 1)) of the block exited $rc, expected $want: $line" >&2; exit 1; }
  done
) >"$work/migration.log" 2>&1 || { tail -n 60 "$work/migration.log" >&2; fail "the migration of docs/platforms.md failed (its log above)"; }

log="$work/migration.log"
expect() { grep -qF -- "$1" "$log" || { tail -n 80 "$log" >&2; fail "the log should say: $1"; }; }
labeled=goldens/wine-mlp/cpu-x86_64-avx2@torch2.json
expect "lane: cross-stack"
grep -m1 "lane: cross-stack" "$log" | grep -q "(torch.version 1.13.0 → " ||
  fail "the first check's lane should name LibTorch's version first: $(grep -m1 'lane: cross-stack' "$log")"
expect "no golden for stack torch2 (LOCKSTEP_STACK) on platform cpu-x86_64-avx2; compared against the unlabeled"
expect "pending golden: lockstep-out/wine-mlp/cpu-x86_64-avx2@torch2.golden.new"
expect "compared with the golden check uses until then: goldens/wine-mlp/cpu-x86_64-avx2.json"
expect "-> $labeled (content "
expect "lane: same-stack"
expect "verify-goldens: note: $labeled: migration in progress: stack label torch2 on LibTorch 2."
expect "the unlabeled goldens/wine-mlp/cpu-x86_64-avx2.json stays on the stack left behind, LibTorch 1.13.0"
expect "verify-goldens: $labeled: stack label torch2 holds a golden made on the unlabeled goldens/wine-mlp/cpu-x86_64-avx2.json's own stack"
expect "verify-goldens: 1 golden(s) for 1 smoke(s)"
git -C "$proj" ls-files goldens | grep -qx goldens/wine-mlp/cpu-x86_64-avx2.json || fail "the unlabeled golden should stay"
[ -z "$(git -C "$proj" ls-files "$labeled")" ] || fail "$labeled should be removed at the end"
python3 - "$proj/goldens/wine-mlp/cpu-x86_64-avx2.json" <<'EOF' || fail "the unlabeled golden should now be the new stack's"
import json, sys
g = json.load(open(sys.argv[1]))
assert g["fingerprint"]["torch.version"]["value"] != "1.13.0", g["fingerprint"]["torch.version"]
assert "stack" not in g
EOF
echo "migration_test: the migration of docs/platforms.md ran as written ($(grep -c '^migration\$' "$log") lines)"
