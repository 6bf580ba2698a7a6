#!/usr/bin/env bash
# The layers by construction: every `#include "<folder>/..."` of a file in
# src/<layer>/ must name its own folder or one its row of the layer table
# in docs/architecture.md lists under "may include"; every listed folder
# must lie above the row (the table is the order); LibTorch headers
# (<torch/...>, <ATen/...>, <c10/...>, torch_compat.h, torch_pch.h) only in
# the rows marked "yes", or in the files an "only `stem`" row names; and
# every folder of src/ must have a row. Prints each violation as
# file:line and exits 1; 0 when the tree follows the table.
#   ci/check-layers.sh [--src DIR] [--table FILE]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
src="$root/src"
table="$root/docs/architecture.md"
while [ $# -gt 0 ]; do
  case "$1" in
    --src|--table)
      [ $# -ge 2 ] && [ -n "$2" ] || { echo "check-layers: $1 needs a value (--src DIR, --table FILE)" >&2; exit 2; }
      # Relative to where it was called from.
      if [ "$1" = --src ]; then src="$(realpath -m -- "$2")"; else table="$(realpath -m -- "$2")"; fi
      shift 2 ;;
    *) echo "check-layers: unknown argument $1 (--src DIR, --table FILE)" >&2; exit 2 ;;
  esac
done
cd "$root"
[ -d "$src" ] || { echo "check-layers: $src: no such folder" >&2; exit 2; }
[ -f "$table" ] || { echo "check-layers: $table: no such file" >&2; exit 2; }

# The table's rows: "| `folder/` | library | owns | may include | LibTorch |".
rows=$(awk -F'|' '
  /^## Layers/ { on = 1; next }
  on && /^## / { exit }
  on && $2 ~ /^ *`[a-z_]+\/` *$/ {
    folder = $2; gsub(/[ `\/]/, "", folder)
    deps = $5; gsub(/[`\/ ]/, "", deps); if (deps ~ /everyfolderabove/) deps = "*"; if (deps == "—") deps = ""
    torch = $6; gsub(/^ +| +$/, "", torch)
    if (torch ~ /^only /) { gsub(/^only |`| /, "", torch); torch = "only:" torch } else if (torch != "yes") torch = "no"
    print folder "\t" deps "\t" torch
  }' "$table")
[ -n "$rows" ] || { echo "check-layers: $table: no layer table under '## Layers'" >&2; exit 2; }

LAYER_ROWS="$rows" python3 - "$src" "$table" <<'PY'
import os, re, sys
src, table = sys.argv[1], sys.argv[2]
order, deps, torch = [], {}, {}
for line in os.environ["LAYER_ROWS"].splitlines():
    folder, listed, lib = line.split("\t")
    order.append(folder)
    deps[folder] = None if listed == "*" else [d for d in listed.split(",") if d]
    torch[folder] = lib
problems = []
for i, folder in enumerate(order):
    if deps[folder] is None:
        deps[folder] = order[:i]
    for d in deps[folder]:
        if d not in order:
            problems.append(f"{table}: {folder}/ may include {d}/, which has no row")
        elif order.index(d) >= i:
            problems.append(f"{table}: {folder}/ may include {d}/, which is not above it (the table is the order)")
folders = sorted(e for e in os.listdir(src) if os.path.isdir(os.path.join(src, e)))
for f in folders:
    if f not in deps:
        problems.append(f"{src}/{f}/: a folder of {src}/ without a row in the layer table of {table}")
include = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
torch_header = re.compile(r'^(torch/|ATen/|c10/|caffe2/)|^(torch_compat\.h|torch_pch\.h)$')
src_abs = os.path.realpath(src)
sources = (".h", ".hh", ".hpp", ".cpp", ".cc", ".cxx")
for folder in folders:
    if folder not in deps:
        continue
    allowed = set(deps[folder]) | {folder}
    for dirpath, dirnames, filenames in os.walk(os.path.join(src, folder)):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            if not name.endswith(sources):
                continue
            stem = os.path.splitext(name)[0]
            with open(path, encoding="utf-8", errors="replace") as fh:
                for n, text in enumerate(fh, 1):
                    m = include.match(text)
                    if not m:
                        continue
                    target = m.group(2)
                    if torch_header.search(target):
                        lib = torch[folder]
                        if lib == "no" or (lib.startswith("only:") and stem not in lib[5:].split(",")):
                            problems.append(f"{path}:{n}: includes {target} (LibTorch), but {folder}/ is torch-free"
                                            + (f" but for {lib[5:]}" if lib.startswith("only:") else ""))
                        continue
                    # The layer it names: "layer/x.h" or <layer/x.h> from the
                    # include root, or a path relative to this file ("../x/y.h").
                    layer = None
                    if target.startswith("."):
                        full = os.path.realpath(os.path.join(os.path.dirname(path), target))
                        rel = os.path.relpath(full, src_abs)
                        if not rel.startswith(".."):
                            layer = rel.split(os.sep, 1)[0]
                    elif "/" in target:
                        layer = target.split("/", 1)[0]
                    if layer in deps and layer not in allowed:
                        problems.append(f"{path}:{n}: includes {target}, but {folder}/ may include only "
                                        + (", ".join(d + "/" for d in deps[folder]) or "nothing")
                                        + f" ({table}, the layer table)")
for p in problems:
    print("check-layers: " + p)
if problems:
    print(f"check-layers: {len(problems)} include(s) break the layers", file=sys.stderr)
    sys.exit(1)
print(f"check-layers: {len(folders)} layers of {src}/ include only what {table} allows")
PY
