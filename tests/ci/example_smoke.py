#!/usr/bin/env python3
"""A scratch copy of examples/pytorch-trainer's smoke config for the stack
root tests (tests/ci/compiled_trainer_test.sh, op_trace_test.sh): another
name, no declared platforms, the trainer run from the example's folder,
top-level or trainer keys set, arguments appended to its command.

    example_smoke.py DEST NAME [--set KEY=JSON]... [--trainer KEY=JSON]... [--arg ARG]...
"""
import argparse
import json
import os

repo = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
example = os.path.join(repo, "examples", "pytorch-trainer")
ap = argparse.ArgumentParser()
ap.add_argument("dest")
ap.add_argument("name")
ap.add_argument("--set", action="append", default=[], help="KEY=JSON: a top-level key")
ap.add_argument("--trainer", action="append", default=[], help="KEY=JSON: a key of trainer")
ap.add_argument("--arg", action="append", default=[], help="an argument appended to trainer.command")
a = ap.parse_args()
with open(os.path.join(example, "smoke", "pytorch-trainer.json")) as f:
    c = json.load(f)
c["name"] = a.name
c.pop("platforms", None)
c["trainer"]["cwd"] = example
for target, pairs in ((c, a.set), (c["trainer"], a.trainer)):
    for pair in pairs:
        key, value = pair.split("=", 1)
        target[key] = json.loads(value)
c["trainer"]["command"] += a.arg
with open(a.dest, "w") as f:
    json.dump(c, f, indent=2)
