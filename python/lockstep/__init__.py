"""lockstep's helper for a team's own Python trainer.

lockstep (the C++ determinism regression checker in this repository) can
gate a trainer it does not own: a smoke config with a ``trainer`` section
runs a command such as ``python3 train.py`` in a fresh process, hands it the
determinism contract through ``LOCKSTEP_*`` environment variables, and reads
back the files the trainer wrote into ``$LOCKSTEP_OUT``. This module is the
trainer's side of that protocol:

- :func:`apply_contract` reads the environment, seeds ``random``, numpy and
  torch, sets (strict) or records (default) torch's determinism flags, pins
  the thread counts and writes ``lockstep-trainer.json`` (the contract as
  read back from torch, and an environment fingerprint);
- :class:`ProbeWriter` / :func:`probe` / :func:`tensor_stats` compute
  lockstep's batch probes (XXH3 hashes and fixed-order float64 statistics),
  bit for bit the values the C++ computes (``src/data/tensor_stats.h``);
- :class:`MetricsWriter` writes per-step metrics as JSON lines.

Example (a complete trainer loop)::

    import lockstep, torch

    ctx = lockstep.apply_contract()            # first, before any torch work
    loader = torch.utils.data.DataLoader(
        dataset, batch_size=32, shuffle=True, drop_last=True, num_workers=2,
        generator=ctx.generator, worker_init_fn=ctx.worker_init_fn)
    ctx.register_loader(loader)
    probes = lockstep.ProbeWriter(ctx.out / "probes.jsonl")
    metrics = lockstep.MetricsWriter(ctx.out / "metrics.jsonl")
    for step, (inputs, labels, indices) in zip(range(ctx.steps), loader):
        probes.write(inputs, labels, indices)
        if ctx.data_only:
            continue                           # data-only pass: probes, no training
        loss = train_step(inputs, labels)
        metrics.log(step, loss=loss.item())

Run by hand (no ``LOCKSTEP_*`` variables), :func:`apply_contract` uses
defaults (seed 0, strict, 1 thread, CPU, 10 steps, training pass, output
folder ``./lockstep-out``) and says so once on stderr.

Dependencies: the standard library, numpy and xxhash; torch when installed
(a numpy-only trainer can use everything but the torch parts: the context's
``generator`` is then None).

Protocol (what lockstep sets; every variable is optional for a run by hand):

========================== ================================================
LOCKSTEP_SEED              base seed, decimal, 0 .. 2^64-1 (default 0)
LOCKSTEP_OUT               this run's output folder (default ./lockstep-out)
LOCKSTEP_DETERMINISM       "strict" (default) or "default"
LOCKSTEP_INTRA_OP_THREADS  positive integer (default 1)
LOCKSTEP_INTER_OP_THREADS  positive integer (default 1)
LOCKSTEP_DEVICE            "cpu" (default) or "cuda"
LOCKSTEP_STEPS             optimiser steps of the smoke (default 10)
LOCKSTEP_PASS              "train" (default) or "data" (data-only pass)
LOCKSTEP_TRACE_STEPS       steps a ModuleTracer traces, 0 .. 16 (default 2)
RANK, WORLD_SIZE           a multi-rank smoke (torchrun's names, with
                           LOCAL_RANK, MASTER_ADDR, MASTER_PORT for
                           init_process_group's env://): this process's rank
                           and the rank count (default 0 of 1)
========================== ================================================

Fingerprint fields of ``lockstep-trainer.json`` (stable names; each
``{"value": str, "relevant": bool}``, relevant = determinism-relevant):

=============================== ===== =======================================
python.version                  yes   platform.python_version()
python.implementation           no    CPython, PyPy, ...
python.executable               no    sys.executable
python.numpy                    yes   numpy.__version__
python.torch                    yes   torch.__version__ ("(absent: ...)")
python.torch.cuda               yes   torch.version.cuda, or "(absent: CPU-only torch)"
python.torch.cudnn              yes   torch.backends.cudnn.version(), or "(absent: no cuDNN)"
python.torch.config_xxh3        yes   XXH3-64 (16 hex digits) of torch.__config__.show()
python.torch.cpu_capability     yes   the ATen CPU capability torch runs ("AVX2",
                                      "AVX512", "DEFAULT"): names the golden's
                                      platform (cpu-x86_64-avx2)
python.packages.<name>          (*)   version of every installed distribution
                                      (importlib.metadata; name lowercased,
                                      runs of -_. as "-"; first on sys.path wins).
                                      (*) relevant when the trainer imported it
                                      (a top-level module of it in sys.modules
                                      when the file is written, the last time
                                      at exit), informational otherwise: an
                                      unrelated package installed in the image
                                      does not move the lane. Python < 3.10
                                      (no packages_distributions): all relevant
python.module.<name>            yes   __version__ of numpy, torch, torchvision,
                                      PIL, cv2, albumentations, scipy, sklearn:
                                      only those imported by the time the file
                                      is (re)written; never imported here
loader.num_workers              no    register_loader / apply_contract(num_workers=)
                                      ("(not registered)" before)
trainer.pass                    no    "train" or "data"
=============================== ===== =======================================

A bad value exits with code 2 (:class:`LockstepError`); an environment that
cannot honour the contract (CUDA asked for but absent, an invalid
``CUBLAS_WORKSPACE_CONFIG`` in strict mode, a thread count torch refuses)
exits with code 3, lockstep's exit codes (README.md, "Exit codes").
"""

import atexit
import importlib.metadata
import json
import math
import os
import pathlib
import platform
import random
import re
import sys

import numpy as np
import xxhash

__all__ = [
    "LockstepError",
    "Context",
    "apply_contract",
    "worker_init_fn",
    "derive_seed",
    "tensor_stats",
    "probe",
    "ProbeWriter",
    "MetricsWriter",
    "stack_fingerprint",
    "TRAINER_FILE",
    "TRAINER_SCHEMA",
]

TRAINER_FILE = "lockstep-trainer.json"
TRAINER_SCHEMA = "lockstep.trainer/1"

_MASK64 = (1 << 64) - 1
_MASK32 = (1 << 32) - 1


class LockstepError(SystemExit):
    """A protocol or environment error: exits the trainer with lockstep's code.

    A subclass of SystemExit, so an uncaught one ends the process with
    ``code`` (2: a bad ``LOCKSTEP_*`` value; 3: the environment cannot honour
    the contract) and nothing else; the message is printed to stderr when
    the error is raised. ``str(error)`` is the message.
    """

    def __init__(self, message, code=2):
        super().__init__(code)
        self.message = message

    def __str__(self):
        return self.message


def _fail(message, code=2):
    print("lockstep: " + message, file=sys.stderr, flush=True)
    raise LockstepError(message, code)


def _torch():
    """The torch module, or None when it is not installed."""
    try:
        import torch  # lazy: the probe functions run without it
    except ImportError:
        return None
    return torch


# ---- seed streams (docs/seeding.md) -----------------------------------------


def _splitmix64_mix(z):
    z ^= z >> 30
    z = (z * 0xBF58476D1CE4E5B9) & _MASK64
    z ^= z >> 27
    z = (z * 0x94D049BB133111EB) & _MASK64
    z ^= z >> 31
    return z


def derive_seed(base, stream, *indices):
    """Seed of the named stream ``stream`` at ``indices``, from ``base``.

    lockstep's seeding scheme (docs/seeding.md, identical to the C++
    ``derive_seed``): ``s0 = m(base ^ m(XXH3_64(stream)))``, then
    ``s = m(s + 0x9e3779b97f4a7c15 * (index + 1))`` per index, where ``m``
    is SplitMix64's finaliser and arithmetic is mod 2^64.

    Args:
        base: int in [0, 2^64 - 1], the base seed (``ctx.seed``).
        stream: str, the stream's name ("augment", "sampler", ...).
        *indices: ints in [0, 2^64 - 1] (e.g. epoch, sample index).
    Returns:
        int in [0, 2^64 - 1]; usable by ``torch.Generator.manual_seed`` and
        ``random.seed`` as is (numpy: split into two 32-bit words).
    Raises:
        ValueError: base or an index outside [0, 2^64 - 1].
    """
    for v in (base,) + indices:
        if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= _MASK64:
            raise ValueError("derive_seed: seeds and indices are integers in [0, 2^64-1], got %r" % (v,))
    s = _splitmix64_mix(base ^ _splitmix64_mix(xxhash.xxh3_64_intdigest(stream.encode("utf-8"))))
    for i in indices:
        s = _splitmix64_mix((s + 0x9E3779B97F4A7C15 * (i + 1)) & _MASK64)
    return s


def _seed_numpy_global(seed):
    np.random.seed([seed & _MASK32, seed >> 32])


# ---- batch probes (src/data/tensor_stats.h, src/record/batch_probe.cpp) ------

# dtype names as record/batch_probe.h lists them.
_NUMPY_DTYPES = {
    np.dtype(np.float32): "float32",
    np.dtype(np.float64): "float64",
    np.dtype(np.float16): "float16",
    np.dtype(np.int64): "int64",
    np.dtype(np.int32): "int32",
    np.dtype(np.int16): "int16",
    np.dtype(np.int8): "int8",
    np.dtype(np.uint8): "uint8",
    np.dtype(np.bool_): "bool",
}
_LANES = 8
_ROWS_PER_CHUNK = 1 << 16  # 512 Ki elements per cumulative-sum chunk


def _torch_dtype_name(torch, dtype):
    names = {
        torch.float32: "float32",
        torch.float64: "float64",
        torch.float16: "float16",
        torch.bfloat16: "bfloat16",
        torch.int64: "int64",
        torch.int32: "int32",
        torch.int16: "int16",
        torch.int8: "int8",
        torch.uint8: "uint8",
        torch.bool: "bool",
    }
    if dtype not in names:
        raise TypeError("lockstep: unsupported dtype %s (supported: %s)" % (dtype, ", ".join(names.values())))
    return names[dtype]


def _as_probe_arrays(x):
    """(dtype name, shape, raw bytes as a flat uint8 array, float64 values flat)."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        t = x.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        t = t.contiguous()
        name = _torch_dtype_name(torch, t.dtype)
        shape = list(t.shape)
        if t.dtype == torch.bfloat16:  # numpy has no bfloat16: hash its 16-bit patterns
            raw = t.reshape(-1).view(torch.int16).numpy().view(np.uint8)
        else:
            raw = t.reshape(-1).numpy().view(np.uint8)
        values = t.reshape(-1).to(torch.float64).numpy()
        return name, shape, raw, values
    a = np.asarray(x)
    if a.dtype not in _NUMPY_DTYPES:
        if a.dtype.newbyteorder("=") in _NUMPY_DTYPES:
            a = a.astype(a.dtype.newbyteorder("="))  # byte-swapped input: hash native bytes
        else:
            raise TypeError(
                "lockstep: unsupported dtype %s (supported: %s)"
                % (a.dtype, ", ".join(sorted(set(_NUMPY_DTYPES.values()))))
            )
    if sys.byteorder != "little":
        raise RuntimeError("lockstep: probes are defined on little-endian bytes")
    name = _NUMPY_DTYPES[a.dtype]
    shape = [int(d) for d in a.shape]
    flat = np.ascontiguousarray(a).reshape(-1)
    return name, shape, flat.view(np.uint8), flat.astype(np.float64)


def _lane_sums(terms):
    """Per-lane sums of a (rows, 8) float64 array, each lane added in row
    order starting from +0.0: np.cumsum (ufunc accumulate) is strictly
    sequential, unlike np.sum's pairwise summation."""
    acc = np.zeros(_LANES)
    for start in range(0, terms.shape[0], _ROWS_PER_CHUNK):
        block = terms[start:start + _ROWS_PER_CHUNK]
        tmp = np.empty((block.shape[0] + 1, _LANES))
        tmp[0] = acc
        tmp[1:] = block
        with np.errstate(over="ignore", invalid="ignore"):  # float64 overflow is part of the definition
            np.cumsum(tmp, axis=0, out=tmp)
        acc = tmp[-1].copy()
    return [float(v) for v in acc]


def _pairwise(lanes):
    l0, l1, l2, l3, l4, l5, l6, l7 = lanes
    return ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7))


def _lane_extreme(lanes2d, smallest):
    """Per-lane min (or max) as `x < lo ? x : lo` in index order, then across
    lanes 0..7 the same way. Non-finite entries must already be +inf (min) or
    -inf (max). The values equal np.min/np.max; only a zero's sign depends
    on the order (the first zero of the lane wins), so it is taken from the
    lane's first zero."""
    ext = lanes2d.min(axis=0) if smallest else lanes2d.max(axis=0)
    per_lane = []
    for j in range(_LANES):
        v = float(ext[j])
        if v == 0.0:
            col = lanes2d[:, j]
            v = float(col[int(np.argmax(col == 0.0))])
        per_lane.append(v)
    out = per_lane[0]
    for v in per_lane[1:]:
        if (v < out) if smallest else (v > out):
            out = v
    return out


def _json_double(v):
    """double_to_json (src/core/json_io.cpp): non-finite values as strings."""
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def _stats_of(values):
    """sum, mean, std, min, max, nan_count, inf_count of a flat float64 array
    by the definition in src/data/tensor_stats.h."""
    n = values.size
    finite = np.isfinite(values)
    n_finite = int(np.count_nonzero(finite))
    n_nan = int(np.count_nonzero(np.isnan(values)))
    n_inf = n - n_finite - n_nan
    if n_finite == 0:
        return 0.0, 0.0, 0.0, 0.0, 0.0, n_nan, n_inf
    rows = -(-n // _LANES)

    def lanes(fill, src):
        # Element i goes to lane i % 8 by its index in the whole buffer; a
        # non-finite element keeps its slot, filled with `fill`.
        out = np.empty(rows * _LANES)
        out[:n] = np.where(finite, src, fill)
        out[n:] = fill
        return out.reshape(rows, _LANES)

    # -0.0 is the additive identity for every double (x + -0.0 == x, +0.0
    # included), so filled slots leave the lane sums as if skipped.
    total = _pairwise(_lane_sums(lanes(-0.0, values)))
    mean = total / n_finite
    lo = _lane_extreme(lanes(math.inf, values), smallest=True)
    hi = _lane_extreme(lanes(-math.inf, values), smallest=False)
    with np.errstate(invalid="ignore", over="ignore"):
        d = values - mean
        sq = d * d  # two roundings: numpy never fuses these into an FMA
    std = math.sqrt(_pairwise(_lane_sums(lanes(-0.0, sq))) / n_finite)
    return total, mean, std, lo, hi, n_nan, n_inf


def tensor_stats(x):
    """lockstep's TensorStats of one tensor, as the C++ writes it in JSON.

    Args:
        x: a torch.Tensor (any device, any layout; detached, copied to the
           CPU and made C-contiguous) or anything ``numpy.asarray`` accepts.
           dtypes: float32, float64, float16, bfloat16 (torch only), int64,
           int32, int16, int8, uint8, bool.
    Returns:
        dict with the keys of ``to_json(TensorStats)``:
        ``shape`` (list of int), ``dtype`` (str), ``xxh3_128`` (XXH3-128 of
        the raw C-contiguous bytes, 32 lowercase hex digits, big-endian
        canonical), ``sum``, ``mean``, ``std`` (population), ``min``,
        ``max`` (float64 over the finite elements, each converted to float64
        first; int64 to the nearest float64; 0.0 when none is finite;
        "nan"/"inf"/"-inf" strings if a result is not finite, e.g. a float64
        sum that overflows), ``nan_count``, ``inf_count`` (int).
        Finite element i is added to lane i % 8 (i its index in the whole
        buffer), lanes combined ((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7)); std
        sums (x - mean)^2 the same way; min/max per lane, first hit wins.
    Raises:
        TypeError: an unsupported dtype.
    """
    name, shape, raw, values = _as_probe_arrays(x)
    total, mean, std, lo, hi, n_nan, n_inf = _stats_of(values)
    return {
        "dtype": name,
        "inf_count": n_inf,
        "max": _json_double(hi),
        "mean": _json_double(mean),
        "min": _json_double(lo),
        "nan_count": n_nan,
        "shape": shape,
        "std": _json_double(std),
        "sum": _json_double(total),
        "xxh3_128": xxhash.xxh3_128_hexdigest(raw),
    }


def _index_bytes(indices):
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(indices, torch.Tensor):
        indices = indices.detach().cpu().numpy()
    a = np.asarray(indices)
    if a.size == 0:
        return b""
    if a.dtype.kind not in "iu":
        raise TypeError("lockstep: sample indices must be integers, got dtype %s" % a.dtype)
    if a.dtype.kind == "u" and int(a.max()) > np.iinfo(np.int64).max:
        raise ValueError("lockstep: a sample index does not fit int64")
    return np.ascontiguousarray(a.reshape(-1), dtype="<i8").tobytes()


def probe(inputs, labels, indices, batch=0):
    """lockstep's BatchProbe of one batch, as the C++ writes it in JSON.

    Args:
        inputs, labels: tensors or arrays (see :func:`tensor_stats`).
        indices: the dataset indices of the batch's samples, in batch order
            (a tensor, array or sequence of ints; flattened in C order).
        batch: int, the 0-based index of the batch in the pass.
    Returns:
        dict ``{"batch", "inputs", "labels", "sample_index_hash"}``;
        sample_index_hash is the XXH3-64 (seed 0) of the indices as int64
        little-endian, 16 lowercase hex digits.
    Raises:
        TypeError: an unsupported dtype, or non-integer indices.
        ValueError: an index that does not fit int64.
    """
    return {
        "batch": int(batch),
        "inputs": tensor_stats(inputs),
        "labels": tensor_stats(labels),
        "sample_index_hash": xxhash.xxh3_64_hexdigest(_index_bytes(indices)),
    }


class _Closing:
    """Context-manager protocol for the writers: ``with`` closes them."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _json_line(p):
    # Key order and separators as nlohmann::json::dump() writes them; the
    # doubles are Python's shortest round-trip repr (lockstep parses the
    # value, so any round-trip form gives the same bits).
    return json.dumps(p, sort_keys=True, separators=(",", ":"), allow_nan=False)


class ProbeWriter(_Closing):
    """Writes one BatchProbe per line (JSONL) to ``path``, flushed per line.

    The batch index is counted by the writer, from ``first_batch`` (a run
    resumed at step K passes K, so its probes keep their indices in the pass).

    Args:
        path: file to write (str or Path); truncated unless ``append``.
        first_batch: int >= 0, index of the first batch written.
        append: add to an existing file instead of truncating it.
    Use as a context manager or call :meth:`close`.
    """

    def __init__(self, path, first_batch=0, append=False):
        self.path = pathlib.Path(path)
        self.batch = int(first_batch)
        if self.batch < 0:
            raise ValueError("ProbeWriter: first_batch must be >= 0")
        self._file = open(self.path, "a" if append else "w", encoding="utf-8")

    def write(self, inputs, labels, indices):
        """Probes the next batch, writes its line and returns the probe dict
        (see :func:`probe` for the arguments)."""
        p = probe(inputs, labels, indices, batch=self.batch)
        self._file.write(_json_line(p) + "\n")
        self._file.flush()
        self.batch += 1
        return p

    def close(self):
        """Closes the file (idempotent)."""
        if not self._file.closed:
            self._file.close()


# ---- metrics ------------------------------------------------------------------


def _metric_value(name, v):
    if hasattr(v, "item") and callable(v.item):  # torch tensor or numpy scalar/array of one element
        try:
            v = v.item()
        except (ValueError, RuntimeError) as e:
            raise ValueError("MetricsWriter: metric %r is not a single number: %s" % (name, e)) from None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError("MetricsWriter: metric %r must be a number, got %s" % (name, type(v).__name__))
    return v


class MetricsWriter(_Closing):
    """Writes per-step metrics as JSON lines: ``{"step": N, "loss": ..., ...}``.

    Each :meth:`log` call writes one line and flushes it, so a crashed
    trainer leaves every completed step on disk. Floats are written with
    Python's shortest round-trip repr (a float32 tensor's ``.item()`` is
    its exact value widened to float64); NaN and infinities as the bare
    tokens NaN, Infinity, -Infinity, which lockstep's JSONL reader accepts.

    Args:
        path: file to write (str or Path); truncated unless ``append``.
        append: add to an existing file instead of truncating it.
    Use as a context manager or call :meth:`close`.
    """

    def __init__(self, path, append=False):
        self.path = pathlib.Path(path)
        self._file = open(self.path, "a" if append else "w", encoding="utf-8")

    def log(self, step, **values):
        """Writes the metrics of optimiser step ``step`` (int >= 0).

        Values: Python numbers, numpy scalars or one-element tensors (read
        with ``.item()``), written in the order given. Raises TypeError or
        ValueError for a non-number, a bool or a multi-element tensor.
        """
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise TypeError("MetricsWriter.log: step must be an int >= 0, got %r" % (step,))
        record = {"step": step}
        for k, v in values.items():
            record[k] = _metric_value(k, v)
        self._file.write(json.dumps(record, allow_nan=True) + "\n")
        self._file.flush()

    def close(self):
        """Closes the file (idempotent)."""
        if not self._file.closed:
            self._file.close()


# ---- module traces ------------------------------------------------------------


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
        return pre_hook, hook

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


# ---- the determinism contract ------------------------------------------------

_DEFAULTS = {
    "LOCKSTEP_SEED": "0",
    "LOCKSTEP_OUT": "lockstep-out",
    "LOCKSTEP_DETERMINISM": "strict",
    "LOCKSTEP_INTRA_OP_THREADS": "1",
    "LOCKSTEP_INTER_OP_THREADS": "1",
    "LOCKSTEP_DEVICE": "cpu",
    "LOCKSTEP_STEPS": "10",
    "LOCKSTEP_PASS": "train",
}
_DETERMINISTIC_CUBLAS = (":4096:8", ":16:8")
# Top-level modules whose __version__ is recorded when the trainer has
# imported them (python.module.<name>); see _fingerprint.
_VERSIONED_MODULES = ("numpy", "torch", "torchvision", "PIL", "cv2", "albumentations", "scipy", "sklearn")
_defaults_noted = False
_interop_threads_set = False


def _parse_env(environ):
    global _defaults_noted
    missing = [k for k in _DEFAULTS if not environ.get(k)]
    get = lambda k: environ.get(k) or _DEFAULTS[k]  # noqa: E731

    def uint(name, lo, hi):
        text = get(name)
        if not re.fullmatch(r"[0-9]+", text) or not lo <= int(text) <= hi:
            _fail("%s must be a decimal integer in [%d, %d], got %r" % (name, lo, hi, text))
        return int(text)

    def choice(name, allowed):
        text = get(name)
        if text not in allowed:
            _fail("%s must be one of %s, got %r" % (name, ", ".join(allowed), text))
        return text

    settings = {
        "seed": uint("LOCKSTEP_SEED", 0, _MASK64),
        "mode": choice("LOCKSTEP_DETERMINISM", ("strict", "default")),
        "intra": uint("LOCKSTEP_INTRA_OP_THREADS", 1, 4096),
        "inter": uint("LOCKSTEP_INTER_OP_THREADS", 1, 4096),
        "device": choice("LOCKSTEP_DEVICE", ("cpu", "cuda")),
        "steps": uint("LOCKSTEP_STEPS", 0, 2**62),
        "pass": choice("LOCKSTEP_PASS", ("train", "data")),
    }
    # Not part of the contract (a run by hand traces 2 steps without a note).
    trace_steps = environ.get("LOCKSTEP_TRACE_STEPS") or "2"
    if not re.fullmatch(r"[0-9]+", trace_steps) or not 0 <= int(trace_steps) <= 16:
        _fail("LOCKSTEP_TRACE_STEPS must be a decimal integer in [0, 16], got %r" % trace_steps)
    settings["trace_steps"] = int(trace_steps)
    # torchrun's variables (never defaulted in the note: a single process has none).
    world = environ.get("WORLD_SIZE") or "1"
    rank = environ.get("RANK") or "0"
    if not re.fullmatch(r"[0-9]+", world) or not 1 <= int(world) <= 65536:
        _fail("WORLD_SIZE must be a decimal integer in [1, 65536], got %r" % world)
    if not re.fullmatch(r"[0-9]+", rank) or not int(rank) < int(world):
        _fail("RANK must be a decimal integer in [0, WORLD_SIZE - 1 = %d], got %r" % (int(world) - 1, rank))
    settings["world_size"], settings["rank"] = int(world), int(rank)
    out = pathlib.Path(os.path.abspath(get("LOCKSTEP_OUT")))
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        _fail("cannot create the output folder %s (LOCKSTEP_OUT): %s" % (out, e.strerror), code=3)
    settings["out"] = out
    if missing and not _defaults_noted:
        _defaults_noted = True
        shown = ", ".join("%s=%s" % (k[len("LOCKSTEP_"):], str(out) if k == "LOCKSTEP_OUT" else _DEFAULTS[k])
                          for k in missing)
        what = ("not run by lockstep (no LOCKSTEP_* variables)" if len(missing) == len(_DEFAULTS)
                else ", ".join(missing) + " unset")
        print("lockstep: %s; using defaults: %s" % (what, shown), file=sys.stderr, flush=True)
    return settings


def _pin_cublas_workspace(strict):
    current = os.environ.get("CUBLAS_WORKSPACE_CONFIG")
    if current is None:
        if strict:
            os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
        return os.environ.get("CUBLAS_WORKSPACE_CONFIG", "(unset)")
    if strict and current not in _DETERMINISTIC_CUBLAS:
        _fail("CUBLAS_WORKSPACE_CONFIG=%s is not a deterministic cuBLAS workspace setting; strict mode "
              "needs :4096:8 or :16:8 (CUDA cuBLAS docs, 'Results reproducibility'). Unset it or set "
              "one of those." % current, code=3)
    return current


def _b(v):
    return "true" if v else "false"


def _apply_torch_contract(torch, s):
    """Sets (strict) the flags and the threads; returns the contract read back."""
    strict = s["mode"] == "strict"
    global _interop_threads_set
    torch.set_num_threads(s["intra"])
    # The inter-op pool can be sized once per process, before any inter-op
    # work; a second set_num_interop_threads aborts the process on torch
    # 1.13 (an uncatchable c10::Error), so it is called only when needed.
    if torch.get_num_interop_threads() != s["inter"]:
        if _interop_threads_set:
            _fail("cannot change inter-op threads to %d: this process runs %d already (settable once "
                  "per process, before any parallel work)" % (s["inter"], torch.get_num_interop_threads()), code=3)
        try:
            torch.set_num_interop_threads(s["inter"])
        except RuntimeError as e:
            _fail("cannot set inter-op threads to %d: %s" % (s["inter"], e), code=3)
    _interop_threads_set = True
    if torch.get_num_interop_threads() != s["inter"]:
        _fail("inter-op threads: asked for %d, torch runs %d" % (s["inter"], torch.get_num_interop_threads()), code=3)
    if torch.get_num_threads() != s["intra"]:
        _fail("intra-op threads: asked for %d, torch runs %d" % (s["intra"], torch.get_num_threads()), code=3)

    fill = None
    try:
        import torch.utils.deterministic as fill  # torch >= 2.1
        if not hasattr(fill, "fill_uninitialized_memory"):
            fill = None
    except ImportError:
        pass
    if strict:
        try:
            torch.use_deterministic_algorithms(True, warn_only=False)
        except TypeError:  # torch < 1.11: no warn_only, errors always
            torch.use_deterministic_algorithms(True)
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        if hasattr(torch, "set_float32_matmul_precision"):
            torch.set_float32_matmul_precision("highest")
        if fill is not None:
            fill.fill_uninitialized_memory = True

    return _read_torch_contract(torch)


def _read_torch_contract(torch):
    """The contract's flags and threads as torch reports them now."""
    try:
        import torch.utils.deterministic as fill  # torch >= 2.1
        if not hasattr(fill, "fill_uninitialized_memory"):
            fill = None
    except ImportError:
        fill = None

    def read(getter):  # the legacy TF32 getters, which newer torch may refuse
        try:
            return getter()
        except (AttributeError, RuntimeError) as e:
            return "unsupported (%s)" % e

    warn_only = getattr(torch, "is_deterministic_algorithms_warn_only_enabled", None)
    precision = getattr(torch, "get_float32_matmul_precision", None)
    return {
        "deterministic_algorithms": _b(torch.are_deterministic_algorithms_enabled()),
        "deterministic_algorithms_warn_only":
            _b(warn_only()) if warn_only else "unsupported (torch < 1.11)",
        "cudnn_deterministic": _b(torch.backends.cudnn.deterministic),
        "cudnn_benchmark": _b(torch.backends.cudnn.benchmark),
        "allow_tf32_cublas": read(lambda: _b(torch.backends.cuda.matmul.allow_tf32)),
        "allow_tf32_cudnn": read(lambda: _b(torch.backends.cudnn.allow_tf32)),
        "float32_matmul_precision": read(precision) if precision else "unsupported (torch < 1.12)",
        "fill_uninitialized_memory":
            _b(fill.fill_uninitialized_memory) if fill is not None
            else "unsupported (torch < 2.1: no torch.utils.deterministic)",
        "intra_op_threads": str(torch.get_num_threads()),
        "inter_op_threads": str(torch.get_num_interop_threads()),
    }


def _field(value, relevant):
    return {"value": str(value), "relevant": bool(relevant)}


def _normalized(name):
    return re.sub(r"[-_.]+", "-", name).lower()  # PEP 503


def _cpu_capability(torch, config):
    """The ATen CPU capability: torch.backends.cpu.get_cpu_capability() (torch
    >= 2.0), else the "CPU capability usage: AVX2" line of torch.__config__.show()
    (1.13), else "(absent: ...)"."""
    get = getattr(getattr(torch.backends, "cpu", None), "get_cpu_capability", None)
    if get is not None:
        return str(get())
    for line in config.splitlines():
        line = line.strip().lstrip("- ")
        if line.startswith("CPU capability usage:"):
            return line.split(":", 1)[1].strip()
    return "(absent: not in torch.__config__.show())"


_MODULE_DISTRIBUTIONS = None


def _imported_distributions():
    """Normalised names of the distributions that provide a top-level module
    now in sys.modules (the trainer, its libraries and this helper imported
    them), or None when this Python cannot map modules to distributions
    (importlib.metadata.packages_distributions is 3.10+)."""
    global _MODULE_DISTRIBUTIONS
    if _MODULE_DISTRIBUTIONS is None:
        get = getattr(importlib.metadata, "packages_distributions", None)
        if get is None:
            return None
        _MODULE_DISTRIBUTIONS = get()
    out = set()
    for name in list(sys.modules):
        for dist in _MODULE_DISTRIBUTIONS.get(name.partition(".")[0], ()):
            out.add(_normalized(dist))
    return out


def _fingerprint(torch, num_workers, pass_name):
    fp = {
        "python.version": _field(platform.python_version(), True),
        "python.implementation": _field(platform.python_implementation(), False),
        "python.executable": _field(sys.executable, False),
        "python.numpy": _field(np.__version__, True),
    }
    if torch is None:
        for k in ("python.torch", "python.torch.cuda", "python.torch.cudnn", "python.torch.config_xxh3",
                  "python.torch.cpu_capability"):
            fp[k] = _field("(absent: torch not installed)", True)
    else:
        fp["python.torch"] = _field(torch.__version__, True)
        fp["python.torch.cuda"] = _field(torch.version.cuda or "(absent: CPU-only torch)", True)
        cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
        fp["python.torch.cudnn"] = _field(cudnn if cudnn else "(absent: no cuDNN)", True)
        config = torch.__config__.show()
        fp["python.torch.config_xxh3"] = _field(xxhash.xxh3_64_hexdigest(config.encode()), True)
        fp["python.torch.cpu_capability"] = _field(_cpu_capability(torch, config), True)
    # Every installed distribution with metadata (pip's dist-info and
    # egg-info; Debian's python3-* packages mostly have one too), the first
    # found on sys.path winning, as import does; relevant when imported.
    imported = _imported_distributions()
    seen = set()
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"] if dist.metadata else None
        if not name:
            continue
        key = _normalized(name)
        if key in seen:
            continue
        seen.add(key)
        fp["python.packages." + key] = _field(dist.version, imported is None or key in imported)
    # __version__ of a fixed list of modules, only those the trainer has
    # imported (importing one here could be slow or have side effects, and a
    # module the trainer never imports cannot change its numbers). Refreshed
    # every time the file is rewritten, and at exit.
    for mod in _VERSIONED_MODULES:
        m = sys.modules.get(mod)
        if m is not None:
            fp["python.module." + mod] = _field(getattr(m, "__version__", "(absent: no __version__)"), True)
    fp["loader.num_workers"] = _field("(not registered)" if num_workers is None else num_workers, False)
    fp["trainer.pass"] = _field(pass_name, False)
    return dict(sorted(fp.items()))


def stack_fingerprint():
    """The python.* fingerprint fields of this interpreter, as a run's
    ``lockstep-trainer.json`` holds them (see the table above), without
    applying the contract or writing anything: what ``lockstep env --diff``
    compares with a team trainer's golden. Imports torch when installed
    (its version, CUDA, cuDNN, config and CPU capability are facts of the
    stack). A distribution is relevant here only if imported by now; the
    diff takes a package's relevance from the record too.

    Returns:
        dict of name -> {"value": str, "relevant": bool}, sorted by name.
    """
    fp = _fingerprint(_torch(), None, "env")
    return {k: v for k, v in fp.items() if k.startswith("python.")}


def _write_atomic(path, text):
    tmp = path.with_name(".%s.tmp-%d" % (path.name, os.getpid()))
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        _fail("cannot write %s: %s" % (path, e.strerror), code=3)


def worker_init_fn(worker_id):
    """DataLoader ``worker_init_fn``: seeds ``random``, numpy's global RNG and
    torch in each loader worker from ``torch.initial_seed()``.

    The DataLoader seeds each worker's torch generator with base_seed +
    worker_id, base_seed drawn from the loader's ``generator``; this derives
    ``derive_seed(torch.initial_seed(), "worker")`` from it and seeds all
    three libraries with that (numpy: two 32-bit words), so every worker
    has its own reproducible stream. A module-level function, so it pickles
    for any multiprocessing start method. ``worker_id`` is unused (it is
    already in torch.initial_seed()).
    """
    del worker_id
    import torch

    s = derive_seed(torch.initial_seed() & _MASK64, "worker")
    random.seed(s)
    _seed_numpy_global(s)
    torch.manual_seed(s)


class Context:
    """What :func:`apply_contract` applied; create it with that function.

    Attributes:
        seed: int, the base seed (LOCKSTEP_SEED).
        out: pathlib.Path, absolute output folder (LOCKSTEP_OUT), exists.
        mode: "strict" or "default".
        device: "cpu" or "cuda".
        steps: int, optimiser steps of the smoke (LOCKSTEP_STEPS).
        trace_steps: int, steps a module trace covers (LOCKSTEP_TRACE_STEPS; see
            :meth:`trace_modules`).
        data_only: bool, True in the data-only pass (LOCKSTEP_PASS=data):
            iterate the loader and write probes, no training.
        intra_op_threads, inter_op_threads: int, as asked.
        rank, world_size: int, this process's rank and the rank count
            (RANK, WORLD_SIZE; 0 and 1 for a single process).
        generator: torch.Generator seeded with derive_seed(seed, "sampler")
            (with world_size > 1: derive_seed(seed, "sampler", rank), so each
            rank's loader workers draw their own streams; shard the data with
            a DistributedSampler seeded with ctx.stream_seed("sampler")),
            for the DataLoader (``generator=ctx.generator``), or None without
            torch. The DataLoader draws each epoch's shuffle and workers' base
            seed from it, so save ``generator.get_state()`` at an epoch's
            start to resume inside the epoch.
        worker_init_fn: the module-level :func:`worker_init_fn`.
        contract: dict of str -> str, the contract read back from torch.
        fingerprint: dict, name -> {"value": str, "relevant": bool}.
        record_path: pathlib.Path of lockstep-trainer.json.
    """

    worker_init_fn = staticmethod(worker_init_fn)

    def __init__(self, settings, contract, generator, torch, num_workers):
        self.seed = settings["seed"]
        self.out = settings["out"]
        self.mode = settings["mode"]
        self.device = settings["device"]
        self.steps = settings["steps"]
        self.trace_steps = settings["trace_steps"]
        self.rank = settings["rank"]
        self.world_size = settings["world_size"]
        self.data_only = settings["pass"] == "data"
        self.intra_op_threads = settings["intra"]
        self.inter_op_threads = settings["inter"]
        self.generator = generator
        self.contract = contract
        self._applied = dict(contract)
        self.record_path = self.out / TRAINER_FILE
        self._torch = torch
        self._pass = settings["pass"]
        self._num_workers = num_workers
        self._pid = os.getpid()
        self._written = None
        self.fingerprint = {}
        self.write_record()
        atexit.register(self._write_at_exit)

    def stream_seed(self, stream, *indices):
        """derive_seed(self.seed, stream, *indices): a named seed stream."""
        return derive_seed(self.seed, stream, *indices)

    def stream_generator(self, stream, *indices):
        """A fresh CPU torch.Generator seeded with stream_seed(stream, *indices).
        Raises RuntimeError without torch."""
        if self._torch is None:
            raise RuntimeError("lockstep: stream_generator needs torch")
        g = self._torch.Generator()
        g.manual_seed(self.stream_seed(stream, *indices))
        return g

    def trace_modules(self, model, modules="leaves"):
        """A :class:`ModuleTracer` of ``model`` writing
        ``<out>/module_trace.jsonl`` (where lockstep reads it) for the
        first ``trace_steps`` steps (the smoke's trace.steps), with this
        process's rank. Call its ``step(s)`` before each step's forward."""
        return ModuleTracer(model, self.out / "module_trace.jsonl", steps=self.trace_steps, modules=modules,
                            rank=self.rank, world_size=self.world_size)

    def register_loader(self, loader):
        """Records ``loader.num_workers`` (fingerprint loader.num_workers) and
        rewrites lockstep-trainer.json. Warns on stderr when a shuffling
        loader has no generator (its order would come from torch's global
        generator, which model initialisation also draws from). Returns the
        loader."""
        self._num_workers = int(loader.num_workers)
        torch = self._torch
        if torch is not None:
            sampler = getattr(loader, "sampler", None)
            if isinstance(sampler, torch.utils.data.RandomSampler) and getattr(sampler, "generator", None) is None:
                print("lockstep: the DataLoader shuffles without generator=ctx.generator; its order then "
                      "depends on every earlier draw from torch's global generator", file=sys.stderr, flush=True)
        self.write_record()
        return loader

    def write_record(self):
        """(Re)writes lockstep-trainer.json atomically (temporary file +
        os.replace) with the current fingerprint. Called by apply_contract,
        register_loader and at exit; call it after importing a module listed
        in the fingerprint late."""
        self.fingerprint = _fingerprint(self._torch, self._num_workers, self._pass)
        if self._torch is not None:
            # Read the flags again: trainer code that turns cuDNN benchmark on
            # or deterministic algorithms off after apply_contract() must show.
            # A flag that ever differed stays recorded as it differed.
            for k, v in _read_torch_contract(self._torch).items():
                if k in self.contract and self.contract[k] == self._applied[k] and v != self._applied[k]:
                    self.contract[k] = v
        record = {"schema": TRAINER_SCHEMA, "contract": self.contract, "fingerprint": self.fingerprint}
        text = json.dumps(record, indent=2) + "\n"
        if text != self._written:
            _write_atomic(self.record_path, text)
            self._written = text

    def _write_at_exit(self):
        if os.getpid() == self._pid:  # never from a forked loader worker
            try:
                self.write_record()
            except SystemExit:
                pass


def apply_contract(num_workers=None):
    """Applies lockstep's determinism contract; call it first in the trainer.

    Reads the LOCKSTEP_* variables (module docstring; defaults and one
    stderr note when they are absent), then:

    - strict mode: sets CUBLAS_WORKSPACE_CONFIG=:4096:8 when unset (before
      any CUDA work), deterministic algorithms on (error, not warn), cuDNN
      deterministic on and benchmark off, TF32 off for cuBLAS and cuDNN,
      float32 matmul precision "highest", fill_uninitialized_memory on
      (torch >= 2.1); default mode leaves them and records them as found;
    - both modes: torch intra-/inter-op threads pinned; ``random``, numpy's
      global RNG and torch's global generator seeded with
      derive_seed(seed, "global") (the safety net; model initialisation
      draws from it); a torch.Generator for the DataLoader seeded with
      derive_seed(seed, "sampler");
    - writes ``$LOCKSTEP_OUT/lockstep-trainer.json``::

        {"schema": "lockstep.trainer/1",
         "contract": {"mode", "cublas_workspace_config",
                      "deterministic_algorithms", "deterministic_algorithms_warn_only",
                      "cudnn_deterministic", "cudnn_benchmark", "allow_tf32_cublas",
                      "allow_tf32_cudnn", "float32_matmul_precision",
                      "fill_uninitialized_memory", "intra_op_threads", "inter_op_threads"},
         "fingerprint": {name: {"value": str, "relevant": bool}, ...}}

      every contract value a string read back from torch ("true"/"false",
      ..., "unsupported (...)" for a knob this torch lacks), the names those
      of the C++ contract (src/determinism/contract.h). Without torch the
      torch values are "unsupported (torch not installed)".

    Args:
        num_workers: optional int, the DataLoader's worker count, recorded
            as loader.num_workers (or call ctx.register_loader(loader)).
    Returns:
        a :class:`Context`.
    Raises:
        LockstepError (SystemExit) code 2: a malformed LOCKSTEP_* value;
        code 3: CUDA asked for but unusable, CUBLAS_WORKSPACE_CONFIG set to a
        nondeterministic value in strict mode, a thread count torch refuses,
        or an output folder that cannot be created or written.
    """
    s = _parse_env(os.environ)
    strict = s["mode"] == "strict"
    contract = {"mode": s["mode"], "cublas_workspace_config": _pin_cublas_workspace(strict)}
    torch = _torch()
    g = derive_seed(s["seed"], "global")
    random.seed(g)
    _seed_numpy_global(g)
    generator = None
    if torch is None:
        if s["device"] == "cuda":
            _fail("LOCKSTEP_DEVICE=cuda, but torch is not installed", code=3)
        for k in ("deterministic_algorithms", "deterministic_algorithms_warn_only", "cudnn_deterministic",
                  "cudnn_benchmark", "allow_tf32_cublas", "allow_tf32_cudnn", "float32_matmul_precision",
                  "fill_uninitialized_memory", "intra_op_threads", "inter_op_threads"):
            contract[k] = "unsupported (torch not installed)"
    else:
        if s["device"] == "cuda" and not torch.cuda.is_available():
            _fail("LOCKSTEP_DEVICE=cuda, but torch.cuda.is_available() is False (torch %s, CUDA %s)"
                  % (torch.__version__, torch.version.cuda or "none: CPU-only build"), code=3)
        contract.update(_apply_torch_contract(torch, s))
        torch.manual_seed(g)
        generator = torch.Generator()
        if s["world_size"] > 1:
            generator.manual_seed(derive_seed(s["seed"], "sampler", s["rank"]))
        else:
            generator.manual_seed(derive_seed(s["seed"], "sampler"))
    order = ("mode", "cublas_workspace_config", "deterministic_algorithms", "deterministic_algorithms_warn_only",
             "cudnn_deterministic", "cudnn_benchmark", "allow_tf32_cublas", "allow_tf32_cudnn",
             "float32_matmul_precision", "fill_uninitialized_memory", "intra_op_threads", "inter_op_threads")
    contract = {k: contract[k] for k in order}
    return Context(s, contract, generator, torch, None if num_workers is None else int(num_workers))
