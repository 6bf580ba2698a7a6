#!/usr/bin/env bash
# The relocatable bundle (ci/bundle.sh) or the wheel (ci/wheel.sh), as a
# team puts lockstep into its own image: the bundle extracted into a folder
# it was not built for (with a space in its path), or the wheel installed
# with pip into a fresh venv there (system site packages: the image's torch
# and numpy); nothing else of lockstep's on PATH, no Debian 12 library
# needed:
#   1. `ldd bin/lockstep` resolves every library into lib/lockstep/ (the
#      bundle's, or <venv>/lib/lockstep), but glibc, libstdc++ and libgcc_s
#      (the host's); none is missing;
#   2. its size (compressed) and the start-up of `lockstep --version`
#      (best of 20) are printed, with the oldest glibc it states; from the
#      wheel, `import lockstep` gives the helper of the binary's version;
#   3. the team's trainer (examples/pytorch-trainer, copied into a fresh git
#      repository): `lockstep init`, bless, check with the shipped Python
#      helper (exit 0), then a planted lr change committed: check exit 1,
#      naming train.py among the environment differences (the CI
#      template's jobs with the wheel: tests/ci/trainer_image_test.sh).
# Run by ci/stack.sh in a root with only python3, python3-venv,
# python3-torch and python3-numpy (Debian 13's or sid's libraries, not
# Debian 12's); the CI template's trainer jobs in that root as a Docker
# image are tests/ci/trainer_image_test.sh.
#   tests/ci/bundle_test.sh [BUILD_DIR]          makes the tarball from BUILD_DIR (default build/)
#   tests/ci/bundle_test.sh --tarball FILE       tests a tarball made elsewhere
#   tests/ci/bundle_test.sh --wheel FILE         tests a wheel (pip install into a venv)
set -euo pipefail
cd "$(dirname "$0")/../.."
repo="$PWD"
fail() { echo "bundle_test: $*" >&2; exit 1; }
# A team's shell, not this CI job: bless refuses to write goldens when CI is set.
unset CI LOCKSTEP_BIN LOCKSTEP_PYTHONPATH LOCKSTEP_SEED LOCKSTEP_STACK
work="$(mktemp -d)"
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
kind=bundle
if [ "${1:-}" = --tarball ] || [ "${1:-}" = --wheel ]; then
  [ $# -eq 2 ] && [ -f "$2" ] ||
    { echo "usage: tests/ci/bundle_test.sh [BUILD_DIR | --tarball FILE | --wheel FILE]" >&2; exit 2; }
  [ "$1" = --wheel ] && kind=wheel
  package="$(realpath "$2")"
else
  bash ci/bundle.sh "${1:-build}" "$work" >/dev/null
  package=$(ls "$work"/lockstep-*-linux-*.tar.gz)
fi

dest="$work/team image/opt"
mkdir -p "$dest"
if [ "$kind" = bundle ]; then
  # Extracted where no build put it.
  tar -C "$dest" -xzf "$package"
  top=$(ls "$dest")
  bundle="$dest/$top"
else
  # pip install into a venv that sees the image's own packages (torch,
  # numpy), from the file alone: no index, nothing downloaded.
  bundle="$dest/venv"
  # The image's Python: the python3 with numpy (the wheel's one dependency;
  # a pyenv or other python3 first on PATH may lack it).
  py=""
  for candidate in python3 /usr/bin/python3; do
    if "$candidate" -c 'import numpy' 2>/dev/null; then py=$candidate; break; fi
  done
  [ -n "$py" ] || fail "no python3 with numpy to make the venv from (apt-get install python3-numpy)"
  "$py" -m venv --system-site-packages "$bundle" >"$work/venv.log" 2>&1 ||
    { cat "$work/venv.log" >&2; fail "python3 -m venv failed (python3-venv installed?)"; }
  "$bundle/bin/python" -m pip install --no-index --no-cache-dir -q "$package" >"$work/pip.log" 2>&1 ||
    { cat "$work/pip.log" >&2; fail "pip install $package failed"; }
  helper=$("$bundle/bin/python" -c 'import lockstep; print(lockstep.__version__)') || fail "import lockstep failed"
  binary=$("$bundle/bin/lockstep" --version | awk '{print $2}')
  [ "$helper" = "$binary" ] || fail "import lockstep gives helper $helper, the binary is $binary"
  echo "bundle_test: wheel: pip installed lockstep $binary into a venv; import lockstep gives the helper $helper"
fi
[ -x "$bundle/bin/lockstep" ] || fail "$package has no bin/lockstep"
[ ! -e "$bundle/bin/lockstep-torch" ] || fail "the $kind should not hold lockstep-torch"

# 1. Every library from the bundle, but the host's C and C++ runtimes.
ldd_out=$(env -u LD_LIBRARY_PATH ldd "$bundle/bin/lockstep")
if grep -q "not found" <<<"$ldd_out"; then echo "$ldd_out" >&2; fail "a library of bin/lockstep is not found"; fi
host_ok='^(linux-vdso|/lib64/ld-linux|ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libresolv\.so|libutil\.so|libstdc\+\+\.so|libgcc_s\.so)'
bundled=0
lib_dir="$(realpath "$bundle/lib/lockstep")"
while IFS= read -r line; do
  lib=$(sed -E 's/^[[:space:]]*([^ ]+).*/\1/' <<<"$line")
  [ -n "$lib" ] || continue
  path=""   # "name => /path/with spaces/name (0x...)": what lies between "=> " and " (0x"
  [[ "$line" == *"=> /"* ]] && path=$(sed -E 's/.*=> (.*) \(0x[0-9a-f]+\)$/\1/' <<<"$line")
  if [ -n "$path" ] && [[ "$(realpath -m "$path")" == "$lib_dir/"* ]]; then
    bundled=$((bundled + 1))
  elif ! [[ "$lib" =~ $host_ok ]]; then
    echo "$ldd_out" >&2
    fail "$lib resolves to ${path:-?}, outside the bundle (only glibc, libstdc++ and libgcc_s may)"
  fi
done <<<"$ldd_out"
[ "$bundled" -gt 0 ] || fail "no library resolved into $bundle/lib/lockstep"
echo "bundle_test: ldd: $bundled libraries from the $kind's lib/lockstep, the rest glibc/libstdc++/libgcc_s"

# 2. The figures.
start_ms=$(python3 - "$bundle/bin/lockstep" <<'PY'
import subprocess, sys, time
best = float("inf")
for _ in range(20):
    t = time.perf_counter()
    subprocess.run([sys.argv[1], "--version"], check=True, stdout=subprocess.DEVNULL)
    best = min(best, time.perf_counter() - t)
print("%.1f" % (best * 1000))
PY
)
echo "bundle_test: $(basename "$package"): $(( $(stat -c %s "$package") / 1024 )) KiB; lockstep --version starts in $start_ms ms (best of 20); $(grep '^needs' "$bundle/share/lockstep/BUNDLE")"
"$bundle/bin/lockstep" --version | grep -q '^lockstep ' || fail "lockstep --version"

# 3. A team's trainer, with the bundle's lockstep and Python helper alone.
export PATH="$bundle/bin:/usr/local/bin:/usr/bin:/bin"
# In an empty folder, init writes no built-in smoke (it needs lockstep-torch)
# and says how to gate a trainer instead.
mkdir "$work/empty"
(cd "$work/empty" && lockstep init >"$work/init-empty.log" 2>&1) || { cat "$work/init-empty.log" >&2; fail "init in an empty folder"; }
grep -q "created smoke/, empty: this lockstep has no lockstep-torch beside it" "$work/init-empty.log" &&
  [ -d "$work/empty/smoke" ] && [ -z "$(ls "$work/empty/smoke")" ] ||
  { cat "$work/init-empty.log" >&2; fail "init without lockstep-torch should leave smoke/ empty and say why"; }
# A built-in smoke cannot run without lockstep-torch: exit 3 before any
# run, naming it and --kind trainer.
mkdir -p "$work/empty/builtin"
cp "$repo/smoke/wine-mlp.json" "$work/empty/builtin/"
status=0
(cd "$work/empty" && lockstep check builtin --out "$work/builtin-out") >"$work/builtin.log" 2>&1 || status=$?
[ "$status" -eq 3 ] && grep -q "builtin/wine-mlp.json: a built-in smoke (no trainer section), which run in lockstep-torch" "$work/builtin.log" &&
  grep -q "check --kind trainer" "$work/builtin.log" ||
  { cat "$work/builtin.log" >&2; fail "check of a built-in smoke without lockstep-torch should be exit 3 naming it, got $status"; }
team="$work/team"
cp -r "$repo/examples/pytorch-trainer" "$team"
cd "$team"
rm -rf goldens
sed -i '/"platforms"/d' smoke/pytorch-trainer.json   # this machine's platform, whatever it is
git init -q -b main . && git config user.email dev@example.com && git config user.name "Bundle Test"
lockstep init >"$work/init.log" 2>&1 || { cat "$work/init.log" >&2; fail "lockstep init failed"; }
git add -A && git commit -qm "a trainer gated by lockstep"
lockstep bless smoke/ --reason "first golden" --out "$work/bless-out" >"$work/bless.log" 2>&1 ||
  { tail -n 30 "$work/bless.log" >&2; fail "bless failed"; }
git add goldens && git commit -qm "first golden"
lockstep check smoke/ --out "$work/check-out" >"$work/check.log" 2>&1 ||
  { tail -n 30 "$work/check.log" >&2; fail "check of the freshly blessed trainer should pass"; }
grep -A2 '"trainer.env.PYTHONPATH"' "$work/check-out/pytorch-trainer/run-1.json" |
  grep -qF "\"value\": \"$bundle/share/lockstep/python\"" ||
  fail "the trainer should get the $kind's Python helper on PYTHONPATH"
sed -i 's/lr=0\.05 \*/lr=0.0501 */' train.py
grep -q 'lr=0.0501 \*' train.py || fail "train.py's lr was not found to plant a change"
git commit -qam "a planted lr change"
status=0
lockstep check smoke/ --out "$work/check-out" >"$work/planted.log" 2>&1 || status=$?
[ "$status" -eq 1 ] || { tail -n 30 "$work/planted.log" >&2; fail "the planted lr change should fail check with exit 1, got $status"; }
grep -q "trainer.script.train.py golden: " "$work/planted.log" ||
  { tail -n 30 "$work/planted.log" >&2; fail "the failing check should name the changed train.py among the environment differences"; }
echo "bundle_test: the $kind runs from $dest, gates a trainer with its own Python helper (PASS, then exit 1 on a planted lr change)"
