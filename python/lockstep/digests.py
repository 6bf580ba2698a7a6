"""Per-step digests of a model's parameters and gradients.

A change the loss and the norms hide shows at the step it happens
(torchtitan's graph-trainer tests hash weights and gradients per step for
this: the loss held, the hashes moved). lockstep reads the file
``lockstep-digests.jsonl`` in the run's output folder, when the trainer
writes it, into the record's ``digests``; a bit-exact lane then names the
first step whose bytes moved::

    digests = lockstep.DigestWriter(ctx.out / lockstep.DIGESTS_FILE)
    for step, (inputs, labels, indices) in zip(range(ctx.steps), loader):
        ...
        loss.backward()
        optimizer.step()
        digests.write(step, model)      # after the step, before zero_grad()

A digest (the C++ trainer's definition, src/record/step_digests.h): the
XXH3-128 of the text holding, for each parameter in
``model.named_parameters()`` order, the line ``"<name> <XXH3-128 of its
bytes>\\n"`` (contiguous, on the CPU, in its own dtype). ``params``: the
parameters as the step left them; ``grads``: their ``.grad`` (after DDP's
all-reduce), ``"<name> none"`` for a parameter without one. PyTorch's
optimisers do not write into ``.grad`` (``maximize=True`` with weight
decay on the foreach path aside), so the gradients read after the step
are the ones it used.
"""

import json
import pathlib
import sys

from . import _xxh as xxhash

DIGESTS_FILE = "lockstep-digests.jsonl"


def _tensor_digest(t):
    """XXH3-128 (32 hex digits) of a tensor's bytes."""
    torch = sys.modules["torch"]
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    flat = t.contiguous().reshape(-1)
    if flat.dtype != torch.uint8:
        flat = flat.view(torch.uint8)  # its bytes, whatever the dtype (bfloat16 included)
    return xxhash.xxh3_128_hexdigest(flat.numpy())


def _manifest(lines):
    text = "".join("%s %s\n" % (name, digest) for name, digest in lines)
    return xxhash.xxh3_128_hexdigest(text.encode("utf-8"))


def step_digests(model):
    """``{"params": hex, "grads": hex}`` of a ``torch.nn.Module`` now.

    Raises TypeError when ``model`` has no ``named_parameters``.
    """
    if not hasattr(model, "named_parameters"):
        raise TypeError("lockstep.step_digests: expected a torch.nn.Module, got %s" % type(model).__name__)
    params, grads = [], []
    for name, p in model.named_parameters():
        params.append((name, _tensor_digest(p)))
        grads.append((name, "none" if p.grad is None else _tensor_digest(p.grad)))
    return {"params": _manifest(params), "grads": _manifest(grads)}


class DigestWriter:
    """Writes one line of digests per step: ``{"step": N, "params": ..., "grads": ...}``.

    Each :meth:`write` flushes its line, so a crashed trainer leaves every
    completed step on disk. Use as a context manager or call :meth:`close`.

    Args:
        path: file to write (str or Path), normally ``ctx.out / DIGESTS_FILE``;
            truncated unless ``append``.
        append: add to an existing file instead of truncating it.
    """

    def __init__(self, path, append=False):
        self.path = pathlib.Path(path)
        self._file = open(self.path, "a" if append else "w", encoding="utf-8")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def write(self, step, model):
        """Writes the digests of optimiser step ``step`` (int >= 0) of ``model``.

        Call it after ``optimizer.step()`` and before ``zero_grad()``.
        Raises TypeError for a step that is not an int >= 0.
        """
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise TypeError("DigestWriter.write: step must be an int >= 0, got %r" % (step,))
        line = dict(step=step, **step_digests(model))
        self._file.write(json.dumps(line, sort_keys=True) + "\n")
        self._file.flush()

    def close(self):
        """Closes the file (idempotent)."""
        if not self._file.closed:
            self._file.close()
