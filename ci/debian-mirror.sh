#!/usr/bin/env bash
# Prints the Debian archive this machine's apt uses (deb822 .sources, else a
# one-line sources.list; the security archive skipped), else Debian's own:
# where ci/stack.sh makes its roots and ci/fetch-data.sh finds a pinned .deb.
set -euo pipefail
mirror=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -n 1 || true)
[ -n "$mirror" ] || mirror=$(sed -n 's/^deb  *\(http[^ ]*\) .*/\1/p' /etc/apt/sources.list 2>/dev/null | grep -v security | head -n 1 || true)
echo "${mirror:-http://deb.debian.org/debian}"
