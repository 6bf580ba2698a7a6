#!/usr/bin/env bash
# Tests ci/fetch-libtorch.sh against a local archive (file:// URL): the
# right SHA-256 unpacks, a wrong one fails and leaves nothing at DEST, an
# archive without LibTorch's CMake config fails.
set -euo pipefail
cd "$(dirname "$0")/../.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src/libtorch/share/cmake/Torch" "$work/bad/other"
echo "# fake" >"$work/src/libtorch/share/cmake/Torch/TorchConfig.cmake"
echo x >"$work/bad/other/file"
(cd "$work/src" && python3 -c "import shutil; shutil.make_archive('../good', 'zip', '.')")
(cd "$work/bad" && python3 -c "import shutil; shutil.make_archive('../bad', 'zip', '.')")
good_sha=$(sha256sum "$work/good.zip" | cut -d' ' -f1)
bad_sha=$(sha256sum "$work/bad.zip" | cut -d' ' -f1)

fail() { echo "fetch_libtorch_test: $*" >&2; exit 1; }
bash ci/fetch-libtorch.sh "$work/ok" "file://$work/good.zip" "$good_sha" >/dev/null
[ -f "$work/ok/share/cmake/Torch/TorchConfig.cmake" ] || fail "verified archive not unpacked"
if bash ci/fetch-libtorch.sh "$work/mismatch" "file://$work/good.zip" "${good_sha/a/b}0" 2>"$work/err"; then
  fail "a wrong SHA-256 was accepted"
fi
grep -q "SHA-256 mismatch" "$work/err" || fail "no mismatch message: $(cat "$work/err")"
[ ! -e "$work/mismatch" ] || fail "a rejected archive left $work/mismatch"
if bash ci/fetch-libtorch.sh "$work/nolib" "file://$work/bad.zip" "$bad_sha" 2>/dev/null; then
  fail "an archive without LibTorch was accepted"
fi
[ ! -e "$work/nolib" ] || fail "a rejected archive left $work/nolib"
[ -z "$(ls -A "$work" | grep '^\.libtorch')" ] || fail "temporary folder left behind"
echo "fetch_libtorch_test: verified, mismatched and non-LibTorch archives behave"
