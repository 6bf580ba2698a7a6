"""Per-module forward and backward fingerprints of the first steps
(:class:`ModuleTracer`), for lockstep to name the first divergent module
(docs/module-trace.md).

    tracer = ctx.trace_modules(model)   # or ModuleTracer(model, path)
    tracer.step(step)                   # before each step's forward
"""

import os
import pathlib
import sys

import xxhash

from ._errors import _torch
from .probes import _as_probe_arrays, tensor_stats
from .writers import _Closing, _json_line


def _first_tensor(value):
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (tuple, list)):
        for v in value:
            t = _first_tensor(v)
            if t is not None:
                return t
    return None


def _on_grad(t, fn):
    """Calls ``fn(grad)`` with the gradient with respect to ``t``'s value as
    it is now, even when a later in-place op rewrites ``t``: torch drops the
    tensor hooks of a view modified in place (an ``nn.Linear`` on a 3-D input
    returns one), so for a full view the hook goes on the autograd node that
    produced its base, whose incoming gradient is the same bytes."""
    base = t._base
    if base is not None and base.grad_fn is not None and base.numel() == t.numel() and t.is_contiguous():
        nr, shape = base.output_nr, t.shape

        def post_hook(grad_inputs, grad_outputs):
            if grad_outputs[nr] is not None:
                fn(grad_outputs[nr].reshape(shape))
        base.grad_fn.register_hook(post_hook)
    else:
        t.register_hook(lambda g: fn(g) and None)


def _eager(torch, fn):
    """``fn`` run eagerly when the model runs under torch.compile: dynamo
    does not trace the tracer's hooks (it would compile the hashing, which
    reads the tensors' bytes, and can get their views wrong); a graph break
    at each traced module instead. torch < 2.1 has no torch.compiler."""
    disable = getattr(getattr(torch, "compiler", None), "disable", None)
    return disable(fn) if disable is not None else fn


def _hook_takes_kwargs(torch):
    import inspect
    return "with_kwargs" in inspect.signature(torch.nn.Module.register_forward_pre_hook).parameters


class ModuleTracer(_Closing):
    """Per-module forward and backward fingerprints of the first steps, one
    entry per line (JSONL) in the run record's format, for lockstep to name
    the first divergent module (docs/module-trace.md).

    Forward (``register_forward_pre_hook`` and ``register_forward_hook``):
    the module's output, and the XXH3-128 of its first tensor input, hashed
    before the module runs. Backward (hooks on that input's and on the
    output's gradients, as the C++ tracer does): the gradient with respect
    to the input (what flows out of the module; the total where the input
    also feeds other modules; none when no gradient flows there, e.g. the
    first module), and the XXH3-128 of the gradient with respect to the
    output. Unlike ``register_full_backward_hook`` this lets a later
    in-place op (``ReLU(inplace=True)``, also on a view) modify the output;
    an in-place module itself gets a forward entry only. A module called
    with keyword arguments only is traced on torch >= 2.0 (1.13's hooks do
    not see them). Outputs are :func:`tensor_stats` dicts. Modules are keyed
    by their path in ``model`` (``named_modules``: ``conv1``,
    ``encoder.layers.0.self_attn``); a DistributedDataParallel wrapper's
    ``module.`` prefix is left out.

    Args:
        model: a torch.nn.Module (or DDP-wrapped one).
        path: the JSONL file (str or Path); truncated unless ``append``.
        steps: steps traced, [0, steps) (default: LOCKSTEP_TRACE_STEPS, 2).
        modules: which modules: "leaves" (default: modules without children,
            and modules with parameters of their own, such as
            nn.MultiheadAttention, whose out_proj child is never called as a
            module) or "all" (containers too; a container's entry follows
            its children's).
        rank: the rank written into each entry when world_size > 1.
        world_size: the rank count (1: no ``rank`` key).
        append: add to an existing file (a resumed run).
    Call :meth:`step` before each step's forward; the hooks are removed
    once the traced steps are over (no cost after them) and by
    :meth:`close`. Raises ValueError for steps outside [0, 16] or an unknown
    ``modules``.
    """

    def __init__(self, model, path, steps=None, modules="leaves", rank=0, world_size=1, append=False):
        torch = _torch()
        if steps is None:
            steps = int(os.environ.get("LOCKSTEP_TRACE_STEPS") or "2")
        if not 0 <= int(steps) <= 16:
            raise ValueError("ModuleTracer: steps must be in [0, 16], got %r" % (steps,))
        if modules not in ("leaves", "all"):
            raise ValueError("ModuleTracer: modules must be 'leaves' or 'all', got %r" % (modules,))
        self.steps = int(steps)
        self.path = pathlib.Path(path)
        self._rank = int(rank) if int(world_size) > 1 else None
        self._step = -1
        self._handles = []
        self._file = open(self.path, "a" if append else "w", encoding="utf-8")
        root = model.module if isinstance(model, torch.nn.parallel.DistributedDataParallel) else model
        kwargs = _hook_takes_kwargs(torch)
        self._stepped = False
        for name, m in root.named_modules():
            own = any(p is not None for p in m._parameters.values())
            if not name or (modules == "leaves" and any(True for _ in m.children()) and not own):
                continue
            pre_hook, hook = self._forward_hooks(name, kwargs)
            if kwargs:
                self._handles.append(m.register_forward_pre_hook(pre_hook, with_kwargs=True))
                self._handles.append(m.register_forward_hook(hook, with_kwargs=True))
            else:
                self._handles.append(m.register_forward_pre_hook(lambda mod, args, h=pre_hook: h(mod, args, {})))
                self._handles.append(m.register_forward_hook(lambda mod, args, out, h=hook: h(mod, args, {}, out)))

    def step(self, step):
        """Marks the start of optimiser step ``step`` (int >= 0): its forward
        and backward are traced while step < steps."""
        self._step = int(step)
        self._stepped = True
        if self._step >= self.steps:
            self._remove()

    def _active(self):
        return 0 <= self._step < self.steps

    def _write(self, step, name, phase, flowed_in, out):
        entry = {"input_xxh3": flowed_in, "module": name, "output": tensor_stats(out), "phase": phase,
                 "step": step}
        if self._rank is not None:
            entry["rank"] = self._rank
        self._file.write(_json_line(entry) + "\n")
        self._file.flush()

    def _forward_hooks(self, name, kwargs):
        """(pre-hook, hook) of module ``name``, each taking (module, args,
        kwargs[, output]): the input is hashed before the forward, so an
        in-place module's entry holds what flowed in."""
        torch = _torch()
        seen = {}

        def digest(t):
            return xxhash.xxh3_128_hexdigest(_as_probe_arrays(t)[2])

        def first_input(args, kw):
            x = _first_tensor(args)
            return x if x is not None else _first_tensor(list(kw.values()))

        def pre_hook(module, args, kw):
            x = first_input(args, kw) if self._active() else None
            seen["x"] = (digest(x), x._version) if x is not None else None
            return None

        def hook(module, args, kw, output):
            x, y = first_input(args, kw), _first_tensor(output)
            before = seen.pop("x", None)
            if not self._active() or before is None or x is None or y is None:
                return None
            step = self._step
            self._write(step, name, "forward", before[0], y)
            if not (torch.is_grad_enabled() and x.requires_grad and y.requires_grad):
                return None  # no gradient flows out of it
            if y is x or x._version != before[1]:
                return None  # in place: what flowed in is gone
            flowed_in = {}
            # The gradient reaches the output first, then the input.
            _on_grad(y, lambda g: flowed_in.__setitem__("xxh3", digest(g)))
            _on_grad(x, lambda g: self._write(step, name, "backward", flowed_in.get("xxh3", digest(g[:0])), g))
            return None
        return _eager(torch, pre_hook), _eager(torch, hook)

    def _remove(self):
        for h in self._handles:
            h.remove()
        self._handles = []

    def close(self):
        """Removes the hooks and closes the file (idempotent). Warns on
        stderr when step() was never called (nothing was traced)."""
        if not self._stepped and self.steps > 0 and not self._file.closed:
            sys.stderr.write("lockstep: ModuleTracer(%s): step() was never called, so nothing was traced; call "
                             "tracer.step(step) before each step's forward\n" % self.path)
        self._remove()
        if not self._file.closed:
            self._file.close()
