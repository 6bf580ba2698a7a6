"""What a planted change (LOCKSTEP_PERTURB) moved, said by the process that
moved it: the training pass's ModuleTracer names the parameter, the data
pass's dataset (in a DataLoader worker, often) the value in the sample.
It goes to ``$LOCKSTEP_OUT/lockstep-perturbed.txt``, which the trainer's
main process reads into lockstep-trainer.json's "perturbed" at exit
(contract.Context.write_record).

    say("conv1.weight[0], one ULP towards +inf before step 0")
    read(ctx.out)   # "conv1.weight[0], ..." or ""
"""

import os

from .writers import _write_atomic

FILE = "lockstep-perturbed.txt"


def say(what):
    """Writes ``what`` (one line) to $LOCKSTEP_OUT/lockstep-perturbed.txt
    atomically; nothing without LOCKSTEP_OUT (a change made by hand)."""
    out = os.environ.get("LOCKSTEP_OUT")
    if out:
        _write_atomic(os.path.join(out, FILE), what.replace("\n", " ")[:400] + "\n")


def read(out):
    """The line said in folder ``out``, or "" when none was."""
    try:
        with open(os.path.join(str(out), FILE), encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return ""


def forget(out):
    """Removes a line left in ``out`` by an earlier run."""
    try:
        os.remove(os.path.join(str(out), FILE))
    except OSError:
        pass
