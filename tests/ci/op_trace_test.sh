#!/usr/bin/env bash
# Per-op hashes (trace.ops) of the example trainer, on a torch >= 2.0 stack
# root (ci/stack.sh trixie|sid): a scratch copy of its smoke, named
# pytorch-trainer-ops, with "trace": {"steps": 2, "ops": true}; `bless`,
# then:
#   - torch >= 2.10 (DebugMode): the golden holds op entries, and `check`
#     with the trainer's nondeterministic_op bug (a sum in an order drawn
#     from os.urandom) exits 4 naming the first op whose bits moved between
#     its two runs: the order drawn from os.urandom, as torch.from_numpy
#     lifts it into a tensor (aten.lift_fresh) in the model's own forward;
#   - an older torch: the golden says why it holds none, and `check` passes
#     with that note.
#   tests/ci/op_trace_test.sh BUILD_DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
repo="$PWD"
build="$(realpath "${1:?usage: tests/ci/op_trace_test.sh BUILD_DIR}")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "op_trace_test: $*" >&2; exit 1; }

mkdir -p "$work/smoke"
python3 tests/ci/example_smoke.py "$work/smoke/pytorch-trainer-ops.json" pytorch-trainer-ops \
  --set 'trace={"steps": 2, "ops": true}'
export PATH="$build:$PATH"
unset CI LOCKSTEP_STACK LOCKSTEP_SEED PYTORCH_TRAINER_BUG
lockstep bless "$work/smoke" --reason "op trace" --out "$work/out" >"$work/bless.log" 2>&1 ||
  { cat "$work/bless.log" >&2; fail "bless failed"; }
debug_mode=$(python3 -c 'import sys
try:
    from torch.utils._debug_mode import DebugMode
    print(1 if hasattr(DebugMode, "log_tensor_hashes") else 0)
except ImportError:
    print(0)')
ops=$(python3 - "$work/goldens/pytorch-trainer-ops" <<'PY'
import glob, json, sys
t = json.load(open(glob.glob(sys.argv[1] + "/*.json")[0]))["module_trace"]
print(len(t.get("ops", [])), t.get("ops_not_traced", ""))
PY
)
torch_version=$(python3 -c 'import torch; print(torch.__version__)')
if [ "$debug_mode" = 0 ]; then
  case "$ops" in
    "0 torch $torch_version has no DebugMode"*) ;;
    *) fail "the golden should say why it holds no ops, got: $ops" ;;
  esac
  lockstep check "$work/smoke" --out "$work/out" >"$work/check.log" 2>&1 ||
    { cat "$work/check.log" >&2; fail "check without the bug should pass"; }
  grep -q "op trace: not recorded: torch $torch_version has no DebugMode" "$work/check.log" ||
    { cat "$work/check.log" >&2; fail "check should note why no op was compared"; }
  echo "op_trace_test: torch $torch_version has no DebugMode: the golden and the check say so"
  exit 0
fi
[ "${ops%% *}" -gt 100 ] || fail "the golden should hold the traced steps' ops, got: $ops"
code=0
PYTORCH_TRAINER_BUG=nondeterministic_op lockstep check "$work/smoke" --distinct-runs 2 --out "$work/out" >"$work/check.log" 2>&1 || code=$?
[ "$code" -eq 4 ] || { cat "$work/check.log" >&2; fail "check with nondeterministic_op should exit 4, got $code"; }
grep -q "the first op whose output bits differ: train step 0, forward, outside a submodule: aten.lift_fresh.default" \
  "$work/check.log" || { cat "$work/check.log" >&2; fail "check should name the first op whose bits moved"; }
echo "op_trace_test: torch $torch_version: ${ops%% *} ops in the golden; the nondeterministic op named:"
grep -o "the first op whose output bits differ: [^;]*" "$work/check.log" | head -n 1
