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
#   ci/stack.sh sid --image   # only step 4: the host's bundle and wheel in
#                             # the suite's trainer image (no build root)
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
#      torch >= 2.10, the reason there are none on 2.6).
#   4. When the host made the relocatable bundle and the wheel
#      (build/lockstep-*-linux-*.tar.gz, build/lockstep-*.whl: the test
#      command's bundle stage), a second root, the team's trainer image:
#      `mmdebstrap --variant=minbase` with only python3, python3-venv,
#      python3-torch, python3-numpy, git and rsync (cached as
#      <suite>-image-<hash>.tar), where the bundle and the wheel gate a
#      trainer (tests/ci/bundle_test.sh --tarball, --wheel); then that root
#      as a Docker image running the CI template's trainer jobs under
#      gitlab-ci-local's docker executor (tests/ci/trainer_image_test.sh).
# Every mount is undone on exit, whatever the outcome. Exit: 0 passed, 1 a
# test or the check failed, 2 usage, 3 the root could not be made.
set -euo pipefail
cd "$(dirname "$0")/.."

suite="${1:-}"
mode="${2:-}"
usage() { echo "usage: ci/stack.sh trixie|sid [--shell | --run 'COMMAND' | --image]" >&2; exit 2; }
case "$suite" in
  trixie|sid) ;;
  *) usage ;;
esac
# Checked before minutes are spent: an unknown mode is no build.
case "$mode" in
  "" | --shell | --image) [ $# -le 2 ] || usage ;;
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
# The packages of a team's own trainer image, nothing of lockstep's build:
# the bundle, the wheel and the CI template's trainer jobs are tested there
# (git and rsync are the tests' tools: the team repository, gitlab-ci-local's
# helper container).
image_packages="python3,python3-venv,python3-torch,python3-numpy,git,rsync"

# need_tool COMMAND PACKAGE: installs PACKAGE when COMMAND is missing. A
# minimal Debian 13 root (where the test command itself may run) has neither
# mmdebstrap nor mount; Debian 12 and 13 hosts usually have mount.
need_tool() {
  command -v "$1" >/dev/null && return 0
  echo "stack: installing $2 (for $1)" >&2
  local install=(env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$2")
  "${install[@]}" >/dev/null 2>&1 || { apt-get update -qq && "${install[@]}" >/dev/null; } || {
    echo "stack: could not install $2, which gives $1" >&2
    exit 3
  }
}
need_tool mount mount

# make_root NAME VARIANT PACKAGES: the tarball of a root of $suite with
# mmdebstrap --variant=VARIANT --include=PACKAGES, made once under $cache as
# NAME-<hash of the suite, the variant and the list>.tar (printed); an older
# NAME-*.tar (another list) is removed. Exit 3 when it cannot be made.
make_root() {
  local name=$1 variant=$2 packages=$3 key tarball partial
  if [ "$variant" = apt ]; then  # the build root's key, as it always was: its tarball stays valid
    key=$(printf '%s\n%s\n' "$suite" "$packages" | sha256sum | cut -c1-12)
  else
    key=$(printf '%s\n%s\n%s\n' "$suite" "$variant" "$packages" | sha256sum | cut -c1-12)
  fi
  tarball="$cache/$name-$key.tar"
  exec 9>"$cache/.lock"
  flock 9  # one root made at a time; a killed run's partial tarball is removed here
  if [ ! -s "$tarball" ]; then
    rm -f "$cache/.$name-"????????????.*.tar
    need_tool mmdebstrap mmdebstrap
    echo "stack: making the $name root ($mirror, $variant), once: $tarball" >&2
    # sid's Release file may be older than its Valid-Until: accept it. The
    # output's .tar extension tells mmdebstrap to write a tarball.
    partial="$cache/.$name-$key.$$.tar"
    if ! mmdebstrap --quiet --variant="$variant" --include="$packages" \
        --aptopt='Acquire::Check-Valid-Until "false"' \
        --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
        "$suite" "$partial" "$mirror" >&2; then
      rm -f "$partial"
      echo "stack: could not make the $name root" >&2
      exit 3
    fi
    mv "$partial" "$tarball"
    # Older roots of this name (another package list) are of no more use.
    find "$cache" -maxdepth 1 -name "$name-????????????.tar" ! -name "$name-$key.tar" -delete
    echo "stack: root made ($(elapsed))" >&2
  fi
  flock -u 9
  echo "$tarball"
}
roots=()
mounts=()
cleanup() {
  local i r
  for (( i=${#mounts[@]}-1; i>=0; i-- )); do umount -l "${mounts[$i]}" 2>/dev/null || true; done
  # Only once nothing is mounted below it.
  for r in "${roots[@]}"; do
    if ! grep -q " $r/" /proc/mounts; then rm -rf "$r"; fi
  done
}
trap cleanup EXIT
# Every mount is private: on a host whose mounts propagate (systemd makes /
# shared), devpts and tmpfs mounted over the root's /dev bind would
# otherwise show on the host's /dev/pts and /dev/shm too.
bind() { mount --bind "$1" "$2"; mount --make-private "$2"; mounts+=("$2"); }

# unpack_root TARBALL NAME: the tarball unpacked afresh into a scratch folder
# (named by $unpacked), with proc, sys, dev, dev/pts, a tmpfs dev/shm
# (DataLoader workers need it), this clone at /src and the smoke data cache
# at /data mounted.
data_dir="${LOCKSTEP_DATA_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lockstep/data}"
unpack_root() {
  local r
  r=$(mktemp -d "${TMPDIR:-/var/tmp}/lockstep-stack-$2.XXXXXX")
  roots+=("$r")
  tar -C "$r" -xf "$1"
  # The root is a mount point of its own: mmdebstrap, when the test command
  # runs in a root and makes a root itself, remounts / private, and a plain
  # folder as / is refused ("mount: /: not mount point").
  bind "$r" "$r"
  mkdir -p "$r/src"
  mount -t proc proc "$r/proc"; mounts+=("$r/proc")
  mount -t sysfs sys "$r/sys"; mounts+=("$r/sys")
  bind /dev "$r/dev"
  mount -t devpts -o newinstance,ptmxmode=0666 devpts "$r/dev/pts"; mounts+=("$r/dev/pts")
  mount -t tmpfs -o mode=1777 shm "$r/dev/shm"; mounts+=("$r/dev/shm")
  bind "$PWD" "$r/src"
  mkdir -p "$data_dir" "$r/data"
  bind "$data_dir" "$r/data"
  cp /etc/resolv.conf "$r/etc/resolv.conf" 2>/dev/null || true
  unpacked=$r
}

# in_root COMMAND [ROOT]: COMMAND by bash in ROOT (default: the build root),
# with a clean environment.
in_root() {
  chroot "${2:-$root}" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
    CCACHE_DIR=/ccache LOCKSTEP_DATA_DIR=/data CI="${CI:-}" bash -c "$1"
}

status=0
# step NAME COMMAND: COMMAND in the root, in /src; a failure fails the run
# and the next steps still run. Each step says its wall time, so a slow
# one shows in the run that made it so.
step() {
  local name="$1" s0 rc=0
  s0=$(date +%s)
  in_root "cd /src && $2" "${3:-$root}" || rc=$?
  [ "$rc" -eq 0 ] || status=1
  echo "stack: $suite: $name: $([ "$rc" -eq 0 ] && echo ok || echo "FAILED (exit $rc)") ($(( $(date +%s) - s0 )) s)"
}
# host_step NAME COMMAND: the same for a command on the host, in this
# clone; exit 77 is a test that cannot run on this machine: SKIPPED, said.
host_step() {
  local name="$1" s0 rc=0 said
  s0=$(date +%s)
  bash -c "$2" || rc=$?
  case "$rc" in
    0) said=ok ;;
    77) said="SKIPPED (it cannot run on this machine: see above)" ;;
    *) said="FAILED (exit $rc)"; status=1 ;;
  esac
  echo "stack: $suite: $name: $said ($(( $(date +%s) - s0 )) s)"
}
# The build root: lockstep built on this stack and its tests (--image: none
# of it, only the trainer image below).
if [ "$mode" != --image ]; then
tarball=$(make_root "$suite" apt "$(LOCKSTEP_DEPS=stack bash ci/deps.sh --list | sort -u | paste -sd, -)")
unpack_root "$tarball" "$suite"
root=$unpacked
echo "stack: $suite root unpacked ($(elapsed))"
# The build root also gets the host's ccache folder for this suite.
ccache_dir="$cache/ccache-$suite"
mkdir -p "$ccache_dir" "$root/ccache"
bind "$ccache_dir" "$root/ccache"

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
fi

# The host's relocatable bundle and wheel (Debian 12's libraries inside
# them) where a team puts them: a root of this suite with only python3,
# python3-venv, python3-torch and python3-numpy (the image root), none of
# lockstep's build dependencies around them.
bundles=(build/lockstep-*-linux-*.tar.gz)
wheels=(build/lockstep-*.whl)
if [ "$mode" = --image ] && { [ ! -f "${bundles[0]}" ] || [ ! -f "${wheels[0]}" ]; }; then
  echo "stack: --image tests build/lockstep-*-linux-*.tar.gz and build/lockstep-*.whl: make them first" \
    "(bash ci/bundle.sh build && bash ci/wheel.sh build)" >&2
  exit 2
fi
if [ -f "${bundles[0]}" ] || [ -f "${wheels[0]}" ]; then
  image_tarball=$(make_root "$suite-image" minbase "$image_packages")
  unpack_root "$image_tarball" "$suite-image"
  image_root=$unpacked
  echo "stack: $suite: image root unpacked ($(elapsed))"
  for tarball in "${bundles[@]}"; do
    [ -f "$tarball" ] || continue
    step "bundle" "bash tests/ci/bundle_test.sh --tarball $tarball" "$image_root"
  done
  # The wheel pip-installed into a venv over this root's torch.
  for whl in "${wheels[@]}"; do
    [ -f "$whl" ] || continue
    step "wheel" "bash tests/ci/bundle_test.sh --wheel $whl" "$image_root"
    # The same root as a Docker image (docker import), the CI template's
    # trainer jobs run in it by gitlab-ci-local's docker executor.
    host_step "trainer image" "bash tests/ci/trainer_image_test.sh $image_tarball $whl"
  done
fi
echo "stack: $suite: $([ "$status" -eq 0 ] && echo passed || echo FAILED) ($(elapsed))"
exit "$status"
