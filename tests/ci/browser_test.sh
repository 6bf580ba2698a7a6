#!/usr/bin/env bash
# lockstep's HTML pages opened in a real browser (Debian's
# chromium-headless-shell): a failing check's report.html, the review page
# of its pending golden, and the nightly history page of three checks (the
# second on another CPU capability, the planted change). For each page: no
# console error, every plot's SVG present with a non-empty bounding box;
# the history's change-point table lists the planted change.
#   tests/ci/browser_test.sh [BUILD_DIR]   (default build/)
set -euo pipefail
cd "$(dirname "$0")/../.."
build="$(realpath "${1:-build}")"
browser=$(command -v chromium-headless-shell || true)
[ -n "$browser" ] || { echo "browser_test: no chromium-headless-shell (ci/deps.sh installs it)" >&2; exit 3; }
work=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
fail() { echo "browser_test: $*" >&2; exit 1; }

# The pages: two nights of wine-mlp that pass (one on another capability),
# then one with the learning rate moved (an input change: fails, leaves a
# pending golden), in a copy of its smoke and golden.
mkdir -p "$work/repo/smoke" "$work/repo/goldens"
cp smoke/wine-mlp.json "$work/repo/smoke/"
cp -r goldens/wine-mlp "$work/repo/goldens/"
smoke="$work/repo/smoke/wine-mlp.json"
"$build/lockstep" check "$smoke" --out "$work/out" --history "$work/history" >/dev/null
ATEN_CPU_CAPABILITY=default "$build/lockstep" check "$smoke" --out "$work/out" --history "$work/history" >/dev/null
sed -i 's/"lr": 0.01,/"lr": 0.0101,/' "$smoke"
"$build/lockstep" check "$smoke" --out "$work/out" --history "$work/history" >/dev/null &&
  fail "the moved learning rate should fail the check"
"$build/lockstep" review "$work/out" --goldens "$work/repo/goldens" >/dev/null
"$build/lockstep" history "$work/history" --html "$work/history.html" >/dev/null
report="$work/out/wine-mlp/report.html"
review=$(find "$work/out" -name "*.review.html" | head -n 1)
[ -f "$report" ] && [ -n "$review" ] || fail "the check should leave report.html and the review a *.review.html"

# A page that loads one of them in a frame and writes what it finds: the
# SVG count, how many have an empty box, and the change-point table's text.
probe() {  # PAGE -> prints the probe's result lines
  local page=$1 wrapper="$work/probe-$(basename "$1").html"
  cat >"$wrapper" <<HTML
<!DOCTYPE html><html><body><iframe id="f" src="file://$page" width="1400" height="1200"></iframe>
<pre id="result">not loaded</pre><script>
document.getElementById("f").onload = function () {
  var d = this.contentDocument, svgs = d.querySelectorAll("svg"), empty = 0, undrawn = 0;
  svgs.forEach(function (s) {
    var r = s.getBoundingClientRect(), b = s.getBBox();
    if (!(r.width > 0 && r.height > 0)) empty++;
    if (!(b.width > 0 && b.height > 0)) undrawn++;
  });
  var t = d.querySelector("table.changes");
  document.getElementById("result").textContent = "svgs " + svgs.length + "\nempty " + empty + "\nundrawn " + undrawn +
    "\nchanges " + (t ? t.innerText.replace(/\s+/g, " ") : "(none)");
};
</script></body></html>
HTML
  "$browser" --no-sandbox --disable-gpu --allow-file-access-from-files --virtual-time-budget=10000 \
    --enable-logging=stderr --v=0 --dump-dom "file://$wrapper" >"$wrapper.dom" 2>"$wrapper.log" ||
    fail "$browser could not open $page: $(tail -n 3 "$wrapper.log")"
  # Chromium logs a page's console as "...:<LEVEL>:CONSOLE:<line>] "message", source: <url>".
  if grep -E ":CONSOLE" "$wrapper.log" | grep -E "ERROR:CONSOLE|WARNING:CONSOLE|Uncaught|Failed to load" >&2; then
    fail "console errors on $page"
  fi
  sed -n '/<pre id="result">/,/<\/pre>/p' "$wrapper.dom" | sed -e 's/<[^>]*>//g'
}

for page in "$report" "$review" "$work/history.html"; do
  result=$(probe "$page")
  svgs=$(echo "$result" | sed -n 's/^svgs //p')
  [ -n "$svgs" ] && [ "$svgs" -gt 0 ] || fail "$page: no SVG plot found (probe said: $result)"
  [ "$(echo "$result" | sed -n 's/^empty //p')" = 0 ] || fail "$page: an SVG with an empty box ($result)"
  [ "$(echo "$result" | sed -n 's/^undrawn //p')" = 0 ] || fail "$page: an SVG that draws nothing ($result)"
  echo "browser_test: $(basename "$page"): $svgs plots, each drawn"
done
changes=$(probe "$work/history.html" | sed -n 's/^changes //p')
# The machine's own capability first (AVX2 or AVX512: LibTorch 2.x picks
# AVX512 where 1.13 picks AVX2), then ATEN_CPU_CAPABILITY=default's.
echo "$changes" | grep -Eq "cpu.capability: AVX[0-9]+ → NO AVX" ||
  fail "the history's change-point table should list the capability change of night 2, got: $changes"
echo "$changes" | grep -q "config optimizer.lr: 0.01 → 0.0101" ||
  fail "the history's change-point table should list the moved learning rate of night 3, got: $changes"
echo "browser_test: report, review and history pages render in $("$browser" --version 2>/dev/null | head -n 1) without console errors"
