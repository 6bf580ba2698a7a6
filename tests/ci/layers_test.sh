#!/usr/bin/env bash
# ci/check-layers.sh holds src/ to the layer table of docs/architecture.md:
# the tree as it is passes; a planted upward include, a LibTorch header in a
# torch-free layer and a folder without a row each fail, named.
set -euo pipefail
cd "$(dirname "$0")/../.."
fail() { echo "layers_test: $*" >&2; exit 1; }
bash ci/check-layers.sh >/dev/null || fail "the tree breaks its own layer table: $(bash ci/check-layers.sh 2>&1 | head -5)"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lockstep-layers.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
expect_failure() {  # <what> <message part>
  local out code=0
  out=$(bash ci/check-layers.sh --src "$tmp/src" 2>&1) || code=$?
  [ "$code" -eq 1 ] || fail "$1: expected exit 1, got $code: $out"
  grep -qF -- "$2" <<<"$out" || fail "$1: expected '$2' in: $out"
}
fresh() { rm -rf "$tmp/src"; cp -r src "$tmp/src"; }
fresh
printf '#include "train/trainer.h"\n' >>"$tmp/src/core/error.cpp"
n=$(wc -l <"$tmp/src/core/error.cpp")
expect_failure "upward include" "$tmp/src/core/error.cpp:$n: includes train/trainer.h, but core/ may include only nothing"
fresh
printf '#include "gate/check.h"\n' >>"$tmp/src/smoke/smoke_config.h"
expect_failure "include of a lower torch-free layer" "includes gate/check.h, but smoke/ may include only core/, record/, spec/, machine/, compare/"
fresh
printf '#include <torch/torch.h>\n' >>"$tmp/src/compare/compare.cpp"
expect_failure "LibTorch in a torch-free layer" "includes torch/torch.h (LibTorch), but compare/ is torch-free"
fresh
printf '#include "torch_compat.h"\n' >>"$tmp/src/distributed/rank_launch.cpp"
expect_failure "LibTorch outside the named file" "includes torch_compat.h (LibTorch), but distributed/ is torch-free but for rank_group"
fresh
mkdir "$tmp/src/newlayer"
expect_failure "folder without a row" "$tmp/src/newlayer/: a folder of $tmp/src/ without a row"
# The same breaks spelled another way: relative to the file, in angle
# brackets, in a nested folder, in a .cc file.
fresh
printf '#include "../train/trainer.h"\n' >>"$tmp/src/compare/compare.cpp"
expect_failure "relative include" "includes ../train/trainer.h, but compare/ may include only core/, record/"
fresh
printf '#include <train/trainer.h>\n' >>"$tmp/src/record/golden.cpp"
expect_failure "angle-bracket include" "includes train/trainer.h, but record/ may include only core/"
fresh
mkdir "$tmp/src/compare/detail"
printf '#include <torch/torch.h>\n' >"$tmp/src/compare/detail/x.cc"
expect_failure "nested .cc file" "$tmp/src/compare/detail/x.cc:1: includes torch/torch.h (LibTorch), but compare/ is torch-free"
code=0; bash ci/check-layers.sh --src >/dev/null 2>&1 || code=$?
[ "$code" -eq 2 ] || fail "--src without a value: expected exit 2, got $code"
echo "layers_test: the layer table holds, and an upward include, LibTorch in a torch-free layer and an unlisted folder fail"
