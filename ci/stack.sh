#!/usr/bin/env bash
# Builds and tests lockstep on a newer stack, in a Debian root made from
# Debian's archive: trixie (Debian 13: LibTorch and python3-torch 2.6, g++ 14,
# Python 3.13) or sid (LibTorch 2.14, g++ 16, Python 3.14, C++20).
#
#   ci/stack.sh trixie        # what `ci/test.sh` runs
#   ci/stack.sh sid
#   ci/stack.sh sid --shell   # the same root, mounted, with a shell in it
#   ci/stack.sh trixie --run 'LOCKSTEP_BUILD_DIR=build-trixie bash bench/run_vs_bare_loop.sh 5'
#                             # one command in it, in the clone (/src)
#
# What it does, as root:
#   1. The root: `mmdebstrap --variant=apt` with the packages of
#      `LOCKSTEP_DEPS=stack ci/deps.sh --list`, written once as a tarball
#      under $LOCKSTEP_STACK_CACHE (default /var/cache/lockstep/stacks),
#      named after the suite and a hash of that list; unpacked afresh for
#      every run into a scratch folder, removed at the end.
#   2. proc, sys, dev, dev/pts and a tmpfs dev/shm (DataLoader workers need
#      it) mounted; this clone bind-mounted at /src, the host's ccache
#      folder for this suite and the smoke data cache beside it.
#   3. In the root: `ci/deps.sh` (all present), then only what LibTorch
#      changes, into build-<suite>/ of this clone: `lockstep`,
#      `lockstep-torch`, the torch-linked tests and the Python helper's
#      tests (ctest -L 'torch|python'), then `lockstep check smoke/`
#      against the committed goldens (LibTorch 1.13's: a stack change,
#      compared in the cross-stack lane under the smokes' tolerances), and
#      the same for examples/pytorch-trainer (the Python helper on this
#      stack's torch against a torch 1.13 golden), then the stack migration
#      of docs/platforms.md as written (tests/ci/migration_test.sh), and
#      the example trainer through torch.compile blessed and checked
#      (tests/ci/compiled_trainer_test.sh), and its per-op hashes
#      (tests/ci/op_trace_test.sh: the first op whose bits moved named on
#      torch >= 2.10, the reason there are none on 2.6); and when the host
#      made the relocatable bundle (build/lockstep-*-linux-*.tar.gz, the
#      test command's bundle stage), that bundle on this root's libraries
#      (tests/ci/bundle_test.sh --tarball), and the wheel beside it
#      pip-installed into a venv over this root's torch (--wheel).
# Every mount is undone on exit, whatever the outcome. Exit: 0 passed, 1 a
# test or the check failed, 2 usage, 3 the root could not be made.
set -euo pipefail
cd "$(dirname "$0")/.."

suite="${1:-}"
mode="${2:-}"
usage() { echo "usage: ci/stack.sh trixie|sid [--shell | --run 'COMMAND']" >&2; exit 2; }
case "$suite" in
  trixie|sid) ;;
  *) usage ;;
esac
# Checked before minutes are spent: an unknown mode is no build.
case "$mode" in
  "" | --shell) [ $# -le 2 ] || usage ;;
  --run) [ $# -eq 3 ] && [ -n "$3" ] || usage ;;  # one argument: quote the command
  *) usage ;;
esac
if [ "$(id -u)" -ne 0 ]; then
  echo "stack: needs root (mmdebstrap, chroot, mounts): sudo bash ci/stack.sh $suite" >&2
  exit 3
fi

cache="${LOCKSTEP_STACK_CACHE:-/var/cache/lockstep/stacks}"
mkdir -p "$cache"
t0=$(date +%s)
elapsed() { echo "$(( $(date +%s) - t0 )) s"; }

mirror=$(bash ci/debian-mirror.sh)
packages=$(LOCKSTEP_DEPS=stack bash ci/deps.sh --list | sort -u | paste -sd, -)
key=$(printf '%s\n%s\n' "$suite" "$packages" | sha256sum | cut -c1-12)
tarball="$cache/$suite-$key.tar"
exec 9>"$cache/.lock"
flock 9  # one root made at a time; a killed run's partial tarball is removed here
if [ ! -s "$tarball" ]; then
  rm -f "$cache/.$suite-"*.tar
  command -v mmdebstrap >/dev/null || {
    echo "stack: installing mmdebstrap"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mmdebstrap >/dev/null
  }
  echo "stack: making the $suite root ($mirror), once: $tarball"
  # sid's Release file may be older than its Valid-Until: accept it. The
  # output's .tar extension tells mmdebstrap to write a tarball.
  partial="$cache/.$suite-$key.$$.tar"
  if ! mmdebstrap --quiet --variant=apt --include="$packages" \
      --aptopt='Acquire::Check-Valid-Until "false"' \
      --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
      "$suite" "$partial" "$mirror"; then
    rm -f "$partial"
    echo "stack: could not make the $suite root" >&2
    exit 3
  fi
  mv "$partial" "$tarball"
  # Older roots of this suite (another package list) are of no more use.
  find "$cache" -maxdepth 1 -name "$suite-*.tar" ! -name "$suite-$key.tar" -delete
  echo "stack: root made ($(elapsed))"
fi
flock -u 9

root=$(mktemp -d "${TMPDIR:-/var/tmp}/lockstep-stack-$suite.XXXXXX")
mounts=()
cleanup() {
  local i
  for (( i=${#mounts[@]}-1; i>=0; i-- )); do umount -l "${mounts[$i]}" 2>/dev/null || true; done
  # Only once nothing is mounted below it.
  if ! grep -q " $root/" /proc/mounts; then rm -rf "$root"; fi
}
trap cleanup EXIT
tar -C "$root" -xf "$tarball"
echo "stack: $suite root unpacked ($(elapsed))"

ccache_dir="$cache/ccache-$suite"
data_dir="${LOCKSTEP_DATA_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lockstep/data}"
mkdir -p "$ccache_dir" "$data_dir" "$root/src" "$root/ccache" "$root/data"
# Every mount is private: on a host whose mounts propagate (systemd makes /
# shared), devpts and tmpfs mounted over the root's /dev bind would
# otherwise show on the host's /dev/pts and /dev/shm too.
bind() { mount --bind "$1" "$2"; mount --make-private "$2"; mounts+=("$2"); }
mount -t proc proc "$root/proc"; mounts+=("$root/proc")
mount -t sysfs sys "$root/sys"; mounts+=("$root/sys")
bind /dev "$root/dev"
mount -t devpts -o newinstance,ptmxmode=0666 devpts "$root/dev/pts"; mounts+=("$root/dev/pts")
mount -t tmpfs -o mode=1777 shm "$root/dev/shm"; mounts+=("$root/dev/shm")
bind "$PWD" "$root/src"
bind "$ccache_dir" "$root/ccache"
bind "$data_dir" "$root/data"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true

in_root() {
  chroot "$root" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/root LANG=C.UTF-8 \
    CCACHE_DIR=/ccache LOCKSTEP_DATA_DIR=/data CI="${CI:-}" bash -c "$1"
}

if [ "$mode" = --shell ]; then
  in_root "cd /src && exec bash -i" || true
  exit 0
fi
if [ "$mode" = --run ]; then
  status=0
  in_root "cd /src && $3" || status=$?
  exit "$status"
fi

build="build-$suite"
status=0
in_root "
  set -euo pipefail
  cd /src
  LOCKSTEP_DEPS=stack bash ci/deps.sh
  echo \"stack: \$(. /etc/os-release; echo \$PRETTY_NAME), g++ \$(g++ -dumpfullversion), \$(cmake --version | head -n 1), \$(python3 --version), torch \$(python3 -c 'import torch; print(torch.__version__)')\"
  LOCKSTEP_TARGETS=\"lockstep lockstep-torch lockstep_torch_tests tensor_stats_tool cuda_probe\" bash ci/build.sh $build -DLOCKSTEP_BUILD_TESTS=ON
" || status=$?
if [ "$status" -ne 0 ]; then
  echo "stack: $suite: the build failed ($(elapsed))" >&2
  exit 1
fi
echo "stack: $suite: built ($(elapsed))"
# step NAME COMMAND: COMMAND in the root, in /src; a failure fails the run
# and the next steps still run. Each step says its wall time, so a slow
# one shows in the run that made it so.
step() {
  local name="$1" s0 rc=0
  s0=$(date +%s)
  in_root "cd /src && $2" || rc=$?
  [ "$rc" -eq 0 ] || status=1
  echo "stack: $suite: $name: $([ "$rc" -eq 0 ] && echo ok || echo "FAILED (exit $rc)") ($(( $(date +%s) - s0 )) s)"
}
step "torch and python tests" "cd $build && ctest -j 2 -L 'torch|python' --output-on-failure"
step "check smoke/" "./$build/lockstep check smoke/ --out $build/lockstep-out"
# The Python helper under this stack's torch, against the example trainer's
# golden made on Debian 12's torch 1.13.
step "example trainer" \
  "cd examples/pytorch-trainer && ../../$build/lockstep check smoke/ --out ../../$build/lockstep-out-trainer"
# The stack migration of docs/platforms.md, as written: the 1.13 golden
# checked under a stack label, reviewed, accepted, left behind, retired.
step "migration" "bash tests/ci/migration_test.sh $build"
# The example trainer through torch.compile: Inductor under the strict
# contract, its repeat and resume checks bit for bit.
step "compiled trainer" "bash tests/ci/compiled_trainer_test.sh $build"
# Per-op hashes under torch's DebugMode (torch >= 2.10; an older torch says
# why there are none).
step "op trace" "bash tests/ci/op_trace_test.sh $build"
# The host's relocatable bundle (Debian 12's libraries inside it) on this
# root's glibc and Python, none of Debian 12's libraries around it.
for tarball in build/lockstep-*-linux-*.tar.gz; do
  [ -f "$tarball" ] || continue
  step "bundle" "bash tests/ci/bundle_test.sh --tarball $tarball"
done
# The host's wheel, pip-installed into a venv over this root's torch.
for whl in build/lockstep-*.whl; do
  [ -f "$whl" ] || continue
  step "wheel" "bash tests/ci/bundle_test.sh --wheel $whl"
done
echo "stack: $suite: $([ "$status" -eq 0 ] && echo passed || echo FAILED) ($(elapsed))"
exit "$status"
