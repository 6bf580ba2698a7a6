#!/usr/bin/env bash
# The example trainer through torch.compile (examples/pytorch-trainer,
# --compile), on a torch >= 2.0 stack root (ci/stack.sh trixie|sid): a
# scratch copy of its smoke, named pytorch-trainer-compiled, the command
# given --compile; `bless` (two fresh runs, bit for bit), then `check`
# (repeat 2, the golden's data-only pass, the resume check from step 5), which must
# pass in the same-stack lane. The record says Inductor ran
# (python.torch.inductor). Prints the wall time of bless and check.
#   tests/ci/compiled_trainer_test.sh BUILD_DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
repo="$PWD"
build="$(realpath "${1:?usage: tests/ci/compiled_trainer_test.sh BUILD_DIR}")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "compiled_trainer_test: $*" >&2; exit 1; }
python3 -c 'import torch, sys; sys.exit(0 if hasattr(torch, "compile") else 1)' ||
  fail "torch $(python3 -c 'import torch; print(torch.__version__)') has no torch.compile: run it in a stack root"

mkdir -p "$work/smoke"
# Inductor compiles its kernels in each fresh process: a longer timeout.
python3 tests/ci/example_smoke.py "$work/smoke/pytorch-trainer-compiled.json" pytorch-trainer-compiled \
  --arg=--compile --trainer timeout_s=600 --set 'trace={"steps": 0}'
export PATH="$build:$PATH"
unset CI LOCKSTEP_STACK LOCKSTEP_SEED
t0=$(date +%s)
lockstep bless "$work/smoke" --reason "compiled trainer" --out "$work/out" >"$work/bless.log" 2>&1 ||
  { cat "$work/bless.log" >&2; fail "bless of the compiled trainer failed"; }
t1=$(date +%s)
lockstep check "$work/smoke" --out "$work/out" >"$work/check.log" 2>&1 ||
  { cat "$work/check.log" >&2; fail "check of the compiled trainer failed"; }
t2=$(date +%s)
log="$work/check.log"
grep -q "PASS" "$log" || { cat "$log" >&2; fail "check should pass"; }
grep -q "lane: same-stack" "$log" || { cat "$log" >&2; fail "check should compare in the same-stack lane"; }
grep -q "2 runs in this job were bit-identical" "$log" || { cat "$log" >&2; fail "the two runs should repeat bit for bit"; }
grep -q "resumed at step 5 from a checkpoint in a fresh process: bit-identical" "$log" || { cat "$log" >&2; fail "the resume check should have held"; }
python3 - "$work/goldens/pytorch-trainer-compiled" <<'PY' || fail "the golden should record that Inductor ran"
import glob, json, sys
g = json.load(open(glob.glob(sys.argv[1] + "/*.json")[0]))
v = g["fingerprint"]["python.torch.inductor"]["value"]
assert not v.startswith("(absent"), v
print("compiled_trainer_test: python.torch.inductor = " + v)
PY
echo "compiled_trainer_test: the compiled trainer blessed ($((t1 - t0)) s) and passed check ($((t2 - t1)) s) on torch $(python3 -c 'import torch; print(torch.__version__)')"
