"""Per-module forward and backward fingerprints of the first steps
(:class:`ModuleTracer`), for lockstep to name the first divergent module
(docs/module-trace.md).

    tracer = ctx.trace_modules(model)   # or ModuleTracer(model, path)
    tracer.step(step)                   # before each step's forward
"""

import contextlib
import os
import pathlib
import sys


from . import _planted
from ._errors import _torch
from .probes import _as_probe_arrays, tensor_stats
from .writers import _Closing, _json_line
from . import _xxh as xxhash


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


_OPS_PER_STEP = 4096  # lockstep's kMaxTraceOpsPerStep: the rest are counted


def _debug_mode(torch):
    """torch's DebugMode (torch.utils._debug_mode, torch >= 2.10) when it
    can hash op outputs (``log_tensor_hashes``), else None."""
    try:
        from torch.utils._debug_mode import DebugMode
    except ImportError:
        return None
    return DebugMode if hasattr(DebugMode, "log_tensor_hashes") else None


def _op_output_hash(torch, t):
    """"f:<xxh3>" (forward or optimizer) or "b:<xxh3>" (run by the autograd
    engine: backward) of a tensor's bytes in its dtype, as the probes hash
    them; an unhashable tensor (sparse, quantized) by its dtype and shape."""
    phase = "b" if torch._C._current_autograd_node() is not None else "f"
    try:
        return phase + ":" + xxhash.xxh3_128_hexdigest(_as_probe_arrays(t)[2])
    except (TypeError, RuntimeError):
        return phase + ":" + xxhash.xxh3_128_hexdigest(("unhashable %s %s" % (t.dtype, tuple(t.shape))).encode())


def _hashes_of(log):
    """The "f:..."/"b:..." strings of a DebugMode op log's output hash
    (one tensor, or a nested tuple/list of them; None for non-tensors)."""
    out = []
    stack = [log.get("hash") if isinstance(log, dict) else None]
    while stack:
        x = stack.pop()
        if isinstance(x, str):
            out.append(x)
        elif isinstance(x, (tuple, list)):
            stack.extend(reversed(x))
    return out


class _OpRecorder:
    """One traced step's aten ops under torch's DebugMode, each op's output
    hashed (XXH3-128 of the bytes), written as op lines of the module trace:
    {"step", "phase" (forward, backward or optimizer), "module" (the
    innermost module in forward, "" elsewhere), "op", "output_xxh3"}, at
    most 4,096 a step (the rest counted in one {"step", "ops_dropped"}
    line). Ops on tensors without output (in-place bookkeeping, empty
    allocations DebugMode skips) are not written.

    A step's ops run from ModuleTracer.step() to the end of the step's last
    torch.optim optimizer step (a global optimizer step post hook marks it);
    what the loop does after it (logging the loss, fetching the next batch:
    a DataLoader rebuilds its workers' tensors in this thread, as many as
    happen to have arrived) is not the step's compute and is left out. A
    trainer whose optimizer is no torch.optim.Optimizer is recorded up to
    the next step()."""

    def __init__(self, torch, debug_mode, write, strip_prefix):
        self._torch, self._mode_class, self._write, self._strip = torch, debug_mode, write, strip_prefix
        self._mode = self._hashes = self._hook = self._cut = None
        self._step = -1

    def _optimizer_stepped(self, optimizer, args, kwargs):
        if self._mode is not None:
            self._cut = len(self._mode.operators)

    def start(self, step):
        torch = self._torch
        self._step = step
        self._mode = self._mode_class(record_nn_module=True)
        self._cut = None
        if self._hook is None:
            from torch.optim.optimizer import register_optimizer_step_post_hook
            self._hook = register_optimizer_step_post_hook(self._optimizer_stepped)
        self._hashes = self._mode_class.log_tensor_hashes(hash_fn=lambda t: _op_output_hash(torch, t))
        self._mode.__enter__()
        self._hashes.__enter__()

    def stop(self):
        if self._mode is None:
            return
        self._hashes.__exit__(None, None, None)
        self._mode.__exit__(None, None, None)
        calls, self._mode, self._hashes = self._mode.operators, None, None
        self._emit(calls if self._cut is None else calls[:self._cut])

    def close(self):
        """Stops recording and removes the optimizer step hook."""
        self.stop()
        if self._hook is not None:
            self._hook.remove()
            self._hook = None

    def _module_of(self, tag):
        # DebugMode tags a module by its path under the root's class name
        # ("Net.blocks.0.fc"); the root itself is "".
        name = tag.split(".", 1)[1] if "." in tag else ""
        return name[len(self._strip):] if self._strip and name.startswith(self._strip) else name

    def _emit(self, calls):
        scopes = []  # (call depth, module or None, in optimizer.step)
        written = dropped = 0
        for c in calls:
            depth = getattr(c, "call_depth", 0)
            while scopes and scopes[-1][0] >= depth:
                scopes.pop()
            kind = type(c).__name__
            if kind != "_OpCall":
                tag, header = getattr(c, "tag", None), getattr(c, "header", None)
                if isinstance(tag, str):
                    module = self._module_of(tag) if header == "nn.Mod" else None
                    scopes.append((depth, module, tag.startswith("Optimizer.step")))
                continue
            hashes = _hashes_of(getattr(c, "log", None))
            if not hashes:
                continue
            in_optimizer = any(s[2] for s in scopes)
            module = next((s[1] for s in reversed(scopes) if s[1] is not None), "")
            phase = "optimizer" if in_optimizer else ("backward" if hashes[0][0] == "b" else "forward")
            digest = hashes[0][2:] if len(hashes) == 1 else xxhash.xxh3_128_hexdigest(
                ",".join(h[2:] for h in hashes).encode())
            if written >= _OPS_PER_STEP:
                dropped += 1
                continue
            written += 1
            self._write({"module": module if phase == "forward" else "", "op": str(c.op), "output_xxh3": digest,
                         "phase": phase, "step": self._step})
        if dropped:
            self._write({"ops_dropped": dropped, "step": self._step})


def _hook_takes_kwargs(torch):
    import inspect
    return "with_kwargs" in inspect.signature(torch.nn.Module.register_forward_pre_hook).parameters


def traced_modules(root, modules="leaves"):
    """The (name, module) pairs of ``root`` a trace covers, in
    named_modules() order, the root itself left out: "leaves" (modules
    without children, and modules with parameters of their own, such as
    nn.MultiheadAttention) or "all" (containers too). The batch sweep keeps
    the same modules' outputs."""
    for name, m in root.named_modules():
        own = any(p is not None for p in m._parameters.values())
        if name and not (modules == "leaves" and any(True for _ in m.children()) and not own):
            yield name, m


def _perturb_first_parameter(torch, model):
    """Moves the first element of the model's first parameter (named_parameters()
    order) one ULP towards +inf, as lockstep's built-in trainer does for
    ``run --perturb parameter``, and says which (_planted)."""
    for name, p in model.named_parameters():
        with torch.no_grad():
            first = p.view(-1)[:1]
            first.copy_(torch.nextafter(first, torch.full_like(first, float("inf"))))
        _planted.say("%s[0], one ULP towards +inf before step 0" % name)
        return


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
        ops: also hash every aten op's output in the traced steps, through
            torch's DebugMode (torch >= 2.10; default: LOCKSTEP_TRACE_OPS,
            the smoke's trace.ops), so lockstep names the first op whose
            bits moved; on an older torch one line says why there are none.
            A step's ops run from its ``step()`` call to the next one (or
            :meth:`close`): its forward, backward and optimizer step.
    Call :meth:`step` before each step's forward; the hooks are removed
    once the traced steps are over (no cost after them) and by
    :meth:`close`. Raises ValueError for steps outside [0, 16] or an unknown
    ``modules``.
    """

    def __init__(self, model, path, steps=None, modules="leaves", rank=0, world_size=1, append=False, ops=None):
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
        ddp = isinstance(model, torch.nn.parallel.DistributedDataParallel)
        root = model.module if ddp else model
        # A planted one-ULP change (lockstep run --perturb parameter, lockstep
        # selftest): made at step(0), before its forward.
        perturb = os.environ.get("LOCKSTEP_PERTURB", "")
        if perturb not in ("", "parameter", "data"):  # "data": the data-only pass's (data_perturb)
            raise ValueError("ModuleTracer: LOCKSTEP_PERTURB must be 'parameter', 'data' or unset, got %r"
                             % (perturb,))
        self._perturb_root = root if perturb == "parameter" else None
        # `lockstep probe --batch-sweep` of a trainer smoke: the sweep of
        # step 0's first forward, then the trainer's end (batch_sweep.py).
        self._sweep_path = os.environ.get("LOCKSTEP_BATCH_SWEEP", "")
        self._sweep_root = root if self._sweep_path else None
        if self._sweep_path and (ddp or int(world_size) > 1):
            raise ValueError("ModuleTracer: LOCKSTEP_BATCH_SWEEP sweeps one process's model, not a "
                             "DistributedDataParallel one of %d ranks" % int(world_size))
        if ops is None:
            ops = os.environ.get("LOCKSTEP_TRACE_OPS", "") == "1"
        self._ops = None
        if ops and self.steps > 0:
            mode = _debug_mode(torch)
            if mode is None:
                self._write_line({"ops_not_traced": "torch %s has no DebugMode with tensor hashes "
                                                    "(torch.utils._debug_mode, torch >= 2.10)" % torch.__version__})
            else:
                self._ops = _OpRecorder(torch, mode, self._write_line, "module." if ddp else "")
        kwargs = _hook_takes_kwargs(torch)
        self._stepped = False
        for name, m in traced_modules(root, modules):
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
        if self._step == 0 and self._perturb_root is not None:
            _perturb_first_parameter(_torch(), self._perturb_root)
            self._perturb_root = None
        if self._step == 0 and self._sweep_root is not None:
            self._arm_sweep()
            return
        if self._ops is not None:
            if 0 <= self._step < self.steps:
                self._ops.stop()
                self._ops.start(self._step)
            else:
                self._ops.close()
        if self._step >= self.steps:
            self._remove()

    def _arm_sweep(self):
        """Replaces the trace's hooks by one on the root that sweeps the
        first forward's batch and ends the process (LOCKSTEP_BATCH_SWEEP)."""
        torch = _torch()
        root, path = self._sweep_root, self._sweep_path
        self._sweep_root = None
        self._remove()
        if self._ops is not None:
            self._ops.close()
            self._ops = None
        from .batch_sweep import sweep_and_exit

        seen = _hook_takes_kwargs(torch)

        def hook(module, args, kwargs=None):
            handle.remove()
            sweep_and_exit(root, args, path, kwargs or {}, kwargs_seen=seen)

        if seen:
            handle = root.register_forward_pre_hook(hook, with_kwargs=True)
        else:
            handle = root.register_forward_pre_hook(hook)

    def _active(self):
        return 0 <= self._step < self.steps

    def _write(self, step, name, phase, flowed_in, out):
        self._write_line({"input_xxh3": flowed_in, "module": name, "output": tensor_stats(out), "phase": phase,
                          "step": step})

    def _write_line(self, entry):
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
            with self._quiet():
                x = first_input(args, kw) if self._active() else None
                seen["x"] = (digest(x), x._version) if x is not None else None
            return None

        def hook(module, args, kw, output):
            with self._quiet():
                return traced(module, args, kw, output)

        def traced(module, args, kw, output):
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

            def reached_output(g):
                with self._quiet():
                    flowed_in["xxh3"] = digest(g)

            def reached_input(g):
                with self._quiet():
                    self._write(step, name, "backward", flowed_in.get("xxh3", digest(g[:0])), g)
            # The gradient reaches the output first, then the input.
            _on_grad(y, reached_output)
            _on_grad(x, reached_input)
            return None
        return _eager(torch, pre_hook), _eager(torch, hook)

    def _quiet(self):
        """While per-op hashing runs, the tracer's own work (hashing inputs
        and gradients) is kept out of DebugMode's op log."""
        if self._ops is None:
            return contextlib.nullcontext()
        from torch.utils._python_dispatch import _disable_current_modes
        return _disable_current_modes()

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
        if self._ops is not None and not self._file.closed:
            self._ops.close()
        self._remove()
        if not self._file.closed:
            self._file.close()
