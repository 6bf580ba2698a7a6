#!/usr/bin/env bash
# The Debian package, from a fresh prefix to a gated team repository:
#   1. `cpack -G DEB` in the build folder; every package its Depends names
#      (computed by dpkg-shlibdeps) is a Debian package installed here;
#   2. the README's quickstart (the ```sh block between <!-- quickstart -->
#      and <!-- /quickstart --> in README.md), its lines run as written and
#      in order, as a new user runs them: the package really installed with
#      apt (so this step needs root, or sudo without a password), a new
#      repository initialised, blessed and checked, then the hook uninstalled
#      and the package removed again;
#   3. the package unpacked into an empty root (dpkg-deb -x), nothing else
#      of lockstep's on PATH: `lockstep` (no LibTorch linked) and
#      `lockstep-torch` beside it, share/lockstep/ with the Python helper,
#      the CI template, the hook and the record schema;
#   4. a scratch team repository: `lockstep init`, a smoke reading a CSV
#      committed beside it, bless, a passing check;
#   5. the installed pre-push hook: a clean push passes, a push of a data
#      edit is blocked;
#   6. the team's own PyTorch trainer (examples/pytorch-trainer) checked with
#      the installed Python helper;
#   7. the installed CI template run by gitlab-ci-local (tests/ci/template_test.sh).
# Prints the wall time of each step.
#   tests/ci/package_test.sh [BUILD_DIR]   (default build/)
set -euo pipefail
cd "$(dirname "$0")/../.."
repo="$PWD"
build="$(realpath "${1:-build}")"
work="$(mktemp -d)"
fail() { echo "package_test: $*" >&2; exit 1; }

# What step 2 installs system-wide is removed again however the test ends:
# the hook in the quickstart's repository first (lockstep hook uninstall),
# then the package. `as_root` runs a command as root: directly when the test
# is root, else through sudo, never asking for a password.
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo -n "$@"; fi; }
user_path=/usr/sbin:/usr/bin:/sbin:/bin   # a user's PATH, without the build or the unpacked root
installed() { dpkg-query -W -f='${Status}' lockstep 2>/dev/null | grep -q "install ok installed"; }
quickstart_installed=""
remove_quickstart_package() {
  local qs_repo rc=0
  qs_repo=$(cat "$work/quickstart.cwd" 2>/dev/null || true)
  if [ -n "$qs_repo" ] && [ -x /usr/bin/lockstep ] && git -C "$qs_repo" rev-parse --git-dir >/dev/null 2>&1; then
    (cd "$qs_repo" && PATH="$user_path" lockstep hook uninstall) || rc=1
  fi
  as_root apt-get remove -y -qq -o DPkg::Lock::Timeout=300 lockstep >/dev/null || return 1
  quickstart_installed=""
  return "$rc"
}
cleanup() {
  if [ -n "$quickstart_installed" ] && installed; then
    remove_quickstart_package >>"$work/quickstart.log" 2>&1 ||
      echo "package_test: could not remove the lockstep package the quickstart installed: apt-get remove lockstep" >&2
  fi
  [ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM   # cleanup runs when the test is interrupted, too
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

# 2. The README's quickstart, as a new user runs it. The ```sh block between
# the markers is run line by line in one shell (so `cd` carries over), each
# line as written, with stdin closed (a prompt fails instead of waiting), and
# only these adaptations:
#  - it starts in $work/lockstep, a stand-in for the fresh clone: this
#    checkout's tracked files, with build/ a link to BUILD_DIR. So the lines
#    that build and install run against the package step 1 built:
#    LOCKSTEP_USE_BUILD=1 makes `ci/build.sh build ...` keep that build as it
#    is (with its tests) rather than configure it again, and cpack writes the
#    same .deb again. `cd ..` then leads into $work: the repository the block
#    creates is a scratch one in the temporary folder;
#  - `sudo` is a shell function: as root it runs its arguments (a Debian
#    machine as root may have no sudo), else it is `sudo -n`. The package is
#    really installed with apt, and removed at the end of the step (and by
#    cleanup, on any failure) after `lockstep hook uninstall` in the scratch
#    repository;
#  - git's identity comes from GIT_AUTHOR_*/GIT_COMMITTER_* variables.
# Otherwise the environment is a user's: PATH without /usr/local, the build or
# the unpacked root, and no CI or LOCKSTEP_* variable.
installed && fail "a lockstep package is installed on this machine; this step installs and removes its own (remove it first: lockstep hook uninstall in its repositories, then apt-get remove lockstep)"
lockstep_before=$(PATH="$user_path" command -v lockstep || true)
[ -z "$lockstep_before" ] && [ ! -e /usr/bin/lockstep ] ||
  fail "$lockstep_before is on a user's PATH before the quickstart installs lockstep (a lockstep outside the package?)"
[ "$(id -u)" -eq 0 ] || sudo -n true 2>/dev/null ||
  fail "the quickstart installs the package with sudo: run as root, or with sudo that needs no password"
awk '/^<!-- quickstart -->$/ { n++; inside = 1; next }
     /^<!-- \/quickstart -->$/ { inside = 0; next }
     inside && /^```/ { fences++; next }
     inside && fences == 1 { print }
     END { exit !(n == 1 && fences == 2 && !inside) }' "$repo/README.md" >"$work/quickstart.sh" ||
  fail "README.md should hold one \`\`\`sh block between <!-- quickstart --> and <!-- /quickstart -->"
grep -q '[^[:space:]]' "$work/quickstart.sh" || fail "README.md's quickstart block is empty"
qs="$work/lockstep"
mkdir "$qs"
tracked=()
while IFS= read -r -d '' f; do [ -e "$repo/$f" ] && tracked+=("$f"); done < <(git -C "$repo" ls-files -z)
[ ${#tracked[@]} -gt 0 ] || fail "$repo should be a git checkout (its tracked files make the stand-in clone)"
tar -C "$repo" -cf - "${tracked[@]}" | tar -C "$qs" -xf -
ln -s "$build" "$qs/build"
quickstart_installed=1   # from here on, cleanup removes what the block installs
(
  cd "$qs"
  trap 'pwd >"$work/quickstart.cwd"' EXIT
  export PATH="$user_path" LOCKSTEP_USE_BUILD=1
  export GIT_AUTHOR_NAME="Quickstart User" GIT_AUTHOR_EMAIL=quickstart@example.com
  export GIT_COMMITTER_NAME="Quickstart User" GIT_COMMITTER_EMAIL=quickstart@example.com
  unset CI LOCKSTEP_BIN LOCKSTEP_PYTHONPATH LOCKSTEP_SEED LOCKSTEP_DATA_DIR
  if [ "$(id -u)" -eq 0 ]; then sudo() { "$@"; }; else sudo() { command sudo -n "$@"; }; fi
  mapfile -t lines <"$work/quickstart.sh"
  for i in "${!lines[@]}"; do
    line=${lines[$i]}
    [[ "$line" =~ ^[[:space:]]*(#|$) ]] && continue
    echo "quickstart\$ $line"
    if ! eval "$line" </dev/null; then
      echo "package_test: README quickstart, line $((i + 1)) of the block, failed: $line" >&2
      exit 1
    fi
  done
) >"$work/quickstart.log" 2>&1 || { tail -n 40 "$work/quickstart.log" >&2; fail "the README's quickstart failed (its log above)"; }
qs_repo=$(cat "$work/quickstart.cwd")
[ "$(dirname "$qs_repo")" = "$work" ] || fail "the quickstart should end in its new repository in the temporary folder, not in $qs_repo"
installed || fail "the quickstart should install the lockstep package"
[ "$(PATH="$user_path" command -v lockstep)" = /usr/bin/lockstep ] || fail "the quickstart's lockstep should be the package's /usr/bin/lockstep"
grep -q "(runs /usr/share/lockstep/hooks/pre-push with /usr/bin/lockstep;" "$work/quickstart.log" ||
  fail "the quickstart's lockstep init should install the hook with the installed lockstep"
grep -Eq "^lockstep: [^ ]+: PASS \(exit 0\)$" "$work/quickstart.log" || fail "the quickstart's check should pass"
git -C "$qs_repo" ls-files goldens | grep -q '\.json$' || fail "the quickstart should commit goldens"
[ -z "$(git -C "$qs_repo" status --porcelain)" ] || fail "the quickstart should leave a clean work tree"
remove_quickstart_package >>"$work/quickstart.log" 2>&1 || { tail -n 20 "$work/quickstart.log" >&2; fail "hook uninstall + apt-get remove lockstep failed"; }
grep -q "^removed .*/\.git/hooks/pre-push (lockstep's pre-push check)" "$work/quickstart.log" || fail "lockstep hook uninstall should remove the quickstart's hook"
! installed && [ ! -e /usr/bin/lockstep ] || fail "apt-get remove should remove lockstep"
step "README quickstart (apt install, init, bless, check)"

# 3. Unpacked into an empty root.
root="$work/root"
dpkg-deb -x "$deb" "$root"
bin="$root/usr/bin"
for f in usr/bin/lockstep usr/bin/lockstep-torch usr/share/lockstep/python/lockstep/__init__.py \
         usr/share/lockstep/python/lockstep/contract.py usr/share/lockstep/python/lockstep/probes.py \
         usr/share/lockstep/python/lockstep/tracer.py usr/share/lockstep/python/lockstep/writers.py usr/share/lockstep/python/lockstep/digests.py \
         usr/share/lockstep/python/lockstep/data_perturb.py usr/share/lockstep/python/lockstep/batch_sweep.py \
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

# 4. A team repository: init, a smoke reading its own CSV, bless, check.
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

# 5. The installed hook: a clean push passes, a data edit is blocked.
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

# 6. The team's own PyTorch trainer, with the installed Python helper.
cp -r "$repo/examples/pytorch-trainer" "$work/trainer"
lockstep check "$work/trainer/smoke" --out "$work/trainer-out" >"$work/trainer.log" 2>&1 ||
  { tail -n 30 "$work/trainer.log" >&2; fail "check of the example trainer should pass"; }
grep -A2 '"trainer.env.PYTHONPATH"' "$work/trainer-out/pytorch-trainer/run-1.json" |
  grep -q "\"value\": \"$root/usr/share/lockstep/python\"" ||
  fail "the trainer should get the installed helper on PYTHONPATH"
step "lockstep check examples/pytorch-trainer"

# 7. The installed CI template, by gitlab-ci-local.
cd "$repo"
bash tests/ci/template_test.sh "$bin" | tail -n 2
step "CI template (gitlab-ci-local, installed lockstep)"

printf '  %s\n' "${times[@]}"
echo "package_test: the package installs, gates a team repository, blocks a data edit on push, and runs its CI template"
