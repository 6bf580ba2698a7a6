#!/usr/bin/env bash
# The Debian package, from a fresh prefix to a gated team repository:
#   1. `cpack -G DEB` in the build folder; every package its Depends names
#      (computed by dpkg-shlibdeps) is a Debian package installed here;
#   2. the package unpacked into an empty root (dpkg-deb -x), nothing else
#      of lockstep's on PATH: `lockstep` (no LibTorch linked) and
#      `lockstep-torch` beside it, share/lockstep/ with the Python helper,
#      the CI template, the hook and the record schema;
#   3. a scratch team repository: `lockstep init`, a smoke reading a CSV
#      committed beside it, bless, a passing check;
#   4. the installed pre-push hook: a clean push passes, a push of a data
#      edit is blocked;
#   5. the team's own PyTorch trainer (examples/pytorch-trainer) checked with
#      the installed Python helper;
#   6. the installed CI template run by gitlab-ci-local (tests/ci/template_test.sh).
# Prints the wall time of each step.
#   tests/ci/package_test.sh [BUILD_DIR]   (default build/)
set -euo pipefail
cd "$(dirname "$0")/../.."
repo="$PWD"
build="$(realpath "${1:-build}")"
work="$(mktemp -d)"
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
fail() { echo "package_test: $*" >&2; exit 1; }
now() { date +%s.%N; }
times=()
step() { local t; t=$(now); times+=("$(awk -v a="$t_step" -v b="$t" -v n="$1" 'BEGIN { printf "%-50s %6.1f s", n, b - a }')"); t_step=$t; }
t_step=$(now)

# 1. The package and its dependencies.
rm -f "$build"/lockstep_*.deb
(cd "$build" && cpack -G DEB >/dev/null) || fail "cpack -G DEB failed"
deb=$(ls "$build"/lockstep_*_*.deb)
depends=$(dpkg-deb -f "$deb" Depends)
[ -n "$depends" ] || fail "$deb has no Depends"
for dep in $(printf '%s' "$depends" | tr ',' '\n' | sed 's/(.*)//; s/|.*//; s/ //g'); do
  dpkg-query -W -f='${Status}\n' "$dep" 2>/dev/null | grep -q "install ok installed" ||
    fail "Depends names $dep, which is not an installed Debian package"
done
echo "package_test: $(basename "$deb"): Depends: $depends"
step "cpack -G DEB + Depends installed"

# 2. Unpacked into an empty root.
root="$work/root"
dpkg-deb -x "$deb" "$root"
bin="$root/usr/bin"
for f in usr/bin/lockstep usr/bin/lockstep-torch usr/share/lockstep/python/lockstep/__init__.py \
         usr/share/lockstep/python/lockstep/contract.py usr/share/lockstep/python/lockstep/probes.py \
         usr/share/lockstep/python/lockstep/tracer.py usr/share/lockstep/python/lockstep/writers.py \
         usr/share/lockstep/ci/lockstep.gitlab-ci.yml usr/share/lockstep/hooks/pre-push \
         usr/share/lockstep/schema/record.schema.json usr/share/man/man1/lockstep.1; do
  [ -e "$root/$f" ] || fail "the package lacks /$f"
done
if ldd "$bin/lockstep" | grep -q torch; then fail "/usr/bin/lockstep links LibTorch"; fi
grep -q '^\.SS lockstep check$' "$root/usr/share/man/man1/lockstep.1" || fail "lockstep.1 lacks the check subcommand"
grep -q -- '--shard' "$root/usr/share/man/man1/lockstep.1" || fail "lockstep.1 lacks check's options"
export PATH="$bin:/usr/bin:/bin"
unset LOCKSTEP_PYTHONPATH LOCKSTEP_BIN CI
[ "$(command -v lockstep)" = "$bin/lockstep" ] || fail "lockstep on PATH is not the unpacked one"
lockstep --version >/dev/null
step "dpkg-deb -x into an empty root"

# 3. A team repository: init, a smoke reading its own CSV, bless, check.
git init -q -b main "$work/team"
cd "$work/team"
git config user.email dev@example.com && git config user.name "Package Test"
lockstep init >"$work/init.log"
cmp -s ci/templates/lockstep.gitlab-ci.yml "$root/usr/share/lockstep/ci/lockstep.gitlab-ci.yml" ||
  fail "init should copy the installed CI template"
mkdir -p smoke/data
data_dir="${LOCKSTEP_DATA_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lockstep/data}"
cp "$data_dir/wine_data.csv" smoke/data/wine.csv
sed -e 's|"{data}/wine_data.csv"|"data/wine.csv"|' -e '/"platforms"/d' "$repo/smoke/wine-mlp.json" >smoke/wine-mlp.json
git add -A && git commit -qm "lockstep init, a wine smoke"
step "lockstep init"
lockstep bless smoke/ --reason "first goldens" --out "$work/bless-out" >"$work/bless.log" 2>&1 ||
  { cat "$work/bless.log" >&2; fail "bless failed"; }
git add goldens && git commit -qm "first goldens"
step "lockstep bless (2 smokes)"
lockstep check smoke/ --out "$work/check-out" >"$work/check.log" 2>&1 || { tail -n 30 "$work/check.log" >&2; fail "check should pass"; }
grep -q "check: 2 smokes: 2 PASS; exit 0" "$work/check.log" || fail "check should report 2 PASS"
step "lockstep check (2 smokes)"

# 4. The installed hook: a clean push passes, a data edit is blocked.
git init -q --bare "$work/remote.git" && git remote add origin "$work/remote.git"
mkdir -p "$work/tmp" && export TMPDIR="$work/tmp"   # the hook's worktrees and a blocked push's reports
lockstep hook install >"$work/hook.log"
grep -q "runs $root/usr/share/lockstep/hooks/pre-push with $bin/lockstep" "$work/hook.log" ||
  { cat "$work/hook.log" >&2; fail "hook install should run the installed script with the installed lockstep"; }
git push -q origin main 2>"$work/push1.log" || { cat "$work/push1.log" >&2; fail "a clean push should pass"; }
step "git push (hook: check passes)"
sed -i '2s/^14.23,/14.2300001,/' smoke/data/wine.csv
git commit -qam "edit one data value"
if git push -q origin main 2>"$work/push2.log"; then fail "a push of a data edit should be blocked"; fi
grep -q "because smoke/data/wine.csv changed" "$work/push2.log" || { cat "$work/push2.log" >&2; fail "the hook should name the data file"; }
grep -q "input changed: data file data/wine.csv" "$work/push2.log" || fail "the check should name the changed input"
grep -q "push blocked (exit 1)" "$work/push2.log" || fail "the push should be blocked with exit 1"
step "git push of a data edit (hook: blocked)"

# 5. The team's own PyTorch trainer, with the installed Python helper.
cp -r "$repo/examples/pytorch-trainer" "$work/trainer"
lockstep check "$work/trainer/smoke" --out "$work/trainer-out" >"$work/trainer.log" 2>&1 ||
  { tail -n 30 "$work/trainer.log" >&2; fail "check of the example trainer should pass"; }
grep -A2 '"trainer.env.PYTHONPATH"' "$work/trainer-out/pytorch-trainer/run-1.json" |
  grep -q "\"value\": \"$root/usr/share/lockstep/python\"" ||
  fail "the trainer should get the installed helper on PYTHONPATH"
step "lockstep check examples/pytorch-trainer"

# 6. The installed CI template, by gitlab-ci-local.
cd "$repo"
bash tests/ci/template_test.sh "$bin" | tail -n 2
step "CI template (gitlab-ci-local, installed lockstep)"

printf '  %s\n' "${times[@]}"
echo "package_test: the package installs, gates a team repository, blocks a data edit on push, and runs its CI template"
