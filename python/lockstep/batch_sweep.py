"""The batch-invariance sweep of a trainer's own model, as lockstep makes it
for a built-in smoke (``lockstep probe SMOKE --batch-sweep``): is each
sample's output the same whatever batch it is computed in?

The model in eval mode (dropout off, BatchNorm on its running statistics)
and without gradients forwards the first batch's N samples whole, then in
pieces of N/2, N/4, ..., 1; each leaf module's output for each sample is
held bit for bit to the whole batch's. A module whose output differs while
its input was the whole batch's bit for bit is where a difference starts
(``samples_new``); the others carry it on.

Made by the helper's :class:`~lockstep.ModuleTracer` when lockstep sets
``LOCKSTEP_BATCH_SWEEP=<file>``: at ``step(0)``, before the first forward
runs, the sweep takes that forward's arguments (each tensor argument whose
first dimension is N is the batch, split along it; the rest passed as
they are), writes the JSON to <file> and ends the trainer (exit 0): the
training itself is not needed. By hand::

    sweep = lockstep.batch_sweep.sweep(model, (x,))
    json.dumps(sweep)   # batch_sweep_json's form (src/record/batch_sweep.h)

Outputs are kept without a copy (a module working in place on its input
changes its predecessor's kept output, in the whole batch and the pieces
alike), as the built-in sweep keeps them.
"""

import json
import os
import sys
import time

from ._errors import _fail, _torch
from .tracer import traced_modules
from .writers import _write_atomic

MODEL_OUTPUT = "(model output)"


def _tensors(torch, value):
    """The tensors in ``value`` (tensors, tuples, lists, dicts), depth first."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple, dict)):
        for v in (value.values() if isinstance(value, dict) else value):
            yield from _tensors(torch, v)


def _first_tensor(torch, value):
    return next(_tensors(torch, value), None)


def _split(torch, args, batch, start, n):
    """``args`` with every tensor whose first dimension is ``batch``
    narrowed to [start, start + n) along it."""
    def cut(v):
        if isinstance(v, torch.Tensor) and v.dim() > 0 and v.size(0) == batch:
            return v.narrow(0, start, min(n, batch - start))
        if isinstance(v, tuple) and not hasattr(v, "_fields"):
            return tuple(cut(x) for x in v)
        if isinstance(v, list):
            return [cut(x) for x in v]
        if isinstance(v, dict):
            return {k: cut(x) for k, x in v.items()}
        return v
    return cut(args)


class _Keeper:
    """Forward hooks on the modules a ModuleTracer traces ("leaves") that
    keep each call's (input, output) first tensors, in call order."""

    def __init__(self, torch, model):
        self.calls = []
        self.keep = False
        self._handles = []
        for name, m in traced_modules(model):
            self._handles.append(m.register_forward_hook(self._hook(torch, name)))

    def _hook(self, torch, name):
        def hook(module, inputs, output):
            if self.keep:
                self.calls.append((name, type(module).__name__, _first_tensor(torch, inputs),
                                   _first_tensor(torch, output)))
        return hook

    def forward(self, model, args):
        self.calls = []
        self.keep = True
        try:
            out = model(*args[0], **args[1])
        finally:
            self.keep = False
        return self.calls, out

    def close(self):
        for h in self._handles:
            h.remove()


def _batch_dim(whole, part, batch, m):
    """The one dimension whose size is ``batch`` in ``whole`` and ``m`` in
    ``part``; None when the shapes do not say."""
    if whole is None or part is None or whole.dim() != part.dim():
        return None
    differing = [d for d in range(whole.dim()) if whole.size(d) != part.size(d)]
    if len(differing) != 1:
        return None
    d = differing[0]
    return d if whole.size(d) == batch and part.size(d) == m else None


_BITS = {1: "int8", 2: "int16", 4: "int32", 8: "int64"}


def _ordered(torch, t):
    """A float tensor's bit patterns as int64 in the order of the values (the
    ULP distance of two is the difference)."""
    bits = t.contiguous().view(getattr(torch, _BITS[t.element_size()])).to(torch.int64)
    lowest = -(1 << (8 * t.element_size() - 1))
    return torch.where(bits < 0, lowest - bits, bits)


def _differing_rows(torch, whole, parts, batch, n, cell=None):
    """A list of bools, one per sample: whose tensor differs between the
    whole batch and the pieces (joined along the batch dimension). With
    ``cell``, adds the differing elements' ULP and absolute distances.
    Returns (rows, per_sample)."""
    rows = [False] * batch
    if whole is None:
        return rows, False
    dim = _batch_dim(whole, parts[0], batch, min(n, batch))
    if dim is None:
        for k, p in enumerate(parts):
            same = p is not None and p.shape == whole.shape and p.dtype == whole.dtype and \
                bool(torch.equal(_as_bits(torch, p), _as_bits(torch, whole)))
            if not same:
                for r in range(k * n, min(batch, (k + 1) * n)):
                    rows[r] = True
        return rows, False
    a = whole.detach().movedim(dim, 0).reshape(batch, -1).cpu()
    b = torch.cat([p.detach() for p in parts], dim).movedim(dim, 0).reshape(batch, -1).cpu()
    ne = _as_bits(torch, a) != _as_bits(torch, b)
    differ = ne.any(dim=1) if a.size(1) > 0 else torch.zeros(batch, dtype=torch.bool)
    rows = [bool(x) for x in differ.tolist()]
    if cell is not None and bool(differ.any()):
        da, db = a[ne], b[ne]
        if a.is_floating_point():
            oa, ob = _ordered(torch, da), _ordered(torch, db)
            ulp = (oa.double() - ob.double()).abs().max().item() if a.element_size() == 8 else \
                (oa - ob).abs().max().item()
            cell["max_ulp"] = max(cell["max_ulp"], int(ulp))
        if not a.is_complex() and a.dtype != torch.bool:
            d = (da.double() - db.double()).abs()
            d = d[torch.isfinite(d)]  # a NaN or an infinity that moved counts in max_ulp, not here
            if d.numel():
                cell["max_abs"] = max(cell["max_abs"], float(d.max().item()))
    return rows, True


def _as_bits(torch, t):
    t = t.contiguous()
    if t.dtype == torch.bool or t.element_size() not in _BITS:
        return t
    return t.view(getattr(torch, _BITS[t.element_size()]))


def _batched_tensor(torch, value, n):
    """The first tensor in ``value`` whose first dimension is ``n`` (logits
    after a scalar loss: ``(loss, logits)``), else its first tensor."""
    batched = (t for t in _tensors(torch, value) if t.dim() > 0 and t.size(0) == n)
    t = next(batched, None)
    return t if t is not None else _first_tensor(torch, value)


def _model_row(torch, model, calls, x, out):
    """The model's own output as the last row, or None when it returns no
    tensor. Its input is the last module's output (a difference it only
    carries on is then not its own), or the model's input when no module
    was called."""
    y = _batched_tensor(torch, out, x.size(0))
    if y is None:
        return None
    return (MODEL_OUTPUT, type(model).__name__, calls[-1][3] if calls else x, y)


def _names(calls):
    seen, names = {}, []
    for name, _, _, _ in calls:
        seen[name] = seen.get(name, 0) + 1
        names.append(name if seen[name] == 1 else "%s#%d" % (name, seen[name]))
    return names


def sweep(model, args, kwargs=None):
    """The batch-invariance sweep of ``model`` over the batch in ``args`` and
    ``kwargs`` (the arguments of one forward; the first tensor's first
    dimension is the batch, N >= 2; every tensor with that first dimension
    is split along it).

    Returns:
        dict in batch_sweep_json's form: {"batch", "sizes", "forward_s",
        "modules": [{"module", "type", "per_sample", "cells": [{"size",
        "samples_differ", "samples_new", "max_ulp", "max_abs",
        "seconds"}]}]}, the model's own output last ("(model output)").
    Raises:
        ValueError: no tensor argument, or a batch of fewer than 2 samples;
        RuntimeError: the model calls other leaves at another size (the
        pieces' calls do not match the whole batch's).
    """
    torch = _torch()
    args = (tuple(args), dict(kwargs or {}))
    x = _first_tensor(torch, args)
    if x is None or x.dim() == 0:
        raise ValueError("lockstep batch sweep: the forward got no tensor argument with a batch dimension")
    batch = int(x.size(0))
    if batch < 2:
        raise ValueError("lockstep batch sweep: the first batch holds %d sample: nothing to split" % batch)
    sizes = []
    n = batch
    while n >= 1:
        sizes.append(n)
        n //= 2
    was_training = model.training
    keeper = _Keeper(torch, model)
    try:
        model.eval()
        with torch.no_grad():
            model(*args[0], **args[1])  # warm-up: lazy initialisation is no forward's cost
            t0 = time.perf_counter()
            model(*args[0], **args[1])
            forward_s = time.perf_counter() - t0
            whole, out = keeper.forward(model, args)
            row = _model_row(torch, model, whole, x, out)
            whole += [row] if row else []
            names = _names(whole)
            modules = [{"module": names[i], "type": c[1], "per_sample": True, "cells": []}
                       for i, c in enumerate(whole)]
            for n in sizes[1:]:
                _sweep_size(torch, model, keeper, args, whole, modules, batch, n)
    finally:
        keeper.close()
        model.train(was_training)
    return {"batch": batch, "sizes": sizes, "forward_s": forward_s, "modules": modules}


def _sweep_size(torch, model, keeper, args, whole, modules, batch, n):
    t0 = time.perf_counter()
    pieces = []
    for start in range(0, batch, n):
        piece_args = _split(torch, args, batch, start, n)
        calls, out = keeper.forward(model, piece_args)
        row = _model_row(torch, model, calls, _first_tensor(torch, piece_args), out)
        calls += [row] if row else []
        if len(calls) != len(whole) or any(c[0] != w[0] for c, w in zip(calls, whole)):
            raise RuntimeError("lockstep batch sweep: at %d samples the model calls other modules than at %d "
                               "(%s): no module-by-module comparison" % (n, batch, ", ".join(c[0] for c in calls[:8])))
        pieces.append(calls)
    for i, w in enumerate(whole):
        cell = {"size": n, "samples_differ": 0, "samples_new": 0, "max_ulp": 0, "max_abs": 0.0}
        out_rows, per_sample = _differing_rows(torch, w[3], [p[i][3] for p in pieces], batch, n, cell)
        if not per_sample:
            modules[i]["per_sample"] = False
        cell["samples_differ"] = sum(out_rows)
        if cell["samples_differ"]:
            in_rows, _ = _differing_rows(torch, w[2], [p[i][2] for p in pieces], batch, n)
            cell["samples_new"] = sum(1 for o, i_ in zip(out_rows, in_rows) if o and not i_)
        modules[i]["cells"].append(cell)
    seconds = time.perf_counter() - t0
    for m in modules:
        m["cells"][-1]["seconds"] = seconds


def sweep_and_exit(model, args, path, kwargs=None, kwargs_seen=True):
    """LOCKSTEP_BATCH_SWEEP's end of a trainer: the sweep of ``model`` over
    ``args`` and ``kwargs`` written to ``path`` (JSON), then SystemExit(0).
    A sweep that cannot be made writes ``{"error": why}`` to ``path`` and
    is exit 2 (lockstep says why). ``kwargs_seen``: False where torch (<
    2.0) hands a forward pre-hook no keyword arguments."""
    try:
        result = sweep(model, args, kwargs)
    except (ValueError, RuntimeError) as e:
        why = str(e)
        if not kwargs_seen and "no tensor argument" in why:
            why += (" (torch %s hands a forward pre-hook no keyword arguments: call the model with the batch as a "
                    "positional argument, or use torch >= 2.0)" % _torch().__version__)
        _write_atomic(path, json.dumps({"error": why}) + "\n")
        _fail(why)
    _write_atomic(path, json.dumps(result, indent=1) + "\n")
    print("lockstep: batch sweep of %s over %d samples written to %s; the trainer stops here (LOCKSTEP_BATCH_SWEEP)"
          % (type(model).__name__, result["batch"], path), file=sys.stderr, flush=True)
    raise SystemExit(0)
