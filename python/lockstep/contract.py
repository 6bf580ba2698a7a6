"""The determinism contract on the trainer's side: :func:`apply_contract`
reads the LOCKSTEP_* variables, seeds, sets (strict) or records (default)
torch's flags, pins the threads and writes ``lockstep-trainer.json`` with
the interpreter's fingerprint (see the package docstring for both).

    ctx = apply_contract()
    loader = DataLoader(ds, generator=ctx.generator, worker_init_fn=ctx.worker_init_fn)
"""

import atexit
import ctypes
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

from ._errors import _fail, _torch
from .writers import _write_atomic
from .seeds import _MASK64, _seed_numpy_global, derive_seed
from .tracer import ModuleTracer
from . import _planted, data_perturb
from . import _xxh as xxhash
from ._version import __version__

# This helper's folder, which the binary names when the trainer imported
# a helper of another version than its own.
_HELPER_DIR = str(pathlib.Path(__file__).resolve().parent)

TRAINER_FILE = "lockstep-trainer.json"
TRAINER_SCHEMA = "lockstep.trainer/1"

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
    # A planted change (run --perturb, selftest); never defaulted.
    perturb = environ.get("LOCKSTEP_PERTURB", "")
    if perturb not in ("", "parameter", "data"):
        _fail("LOCKSTEP_PERTURB must be parameter, data or unset, got %r" % perturb)
    settings["perturb"] = perturb
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


def lr_scale(environ=None):
    """The factor lockstep plants on the learning rate, 1.0 unless asked.

    ``lockstep run --lr-scale F`` and ``lockstep calibrate``'s detection
    search set ``LOCKSTEP_LR_SCALE`` to find how small a change of the
    learning rate the smoke's tolerances still catch; a trainer that
    multiplies its learning rate by this takes part
    (``torch.optim.SGD(params, lr=0.05 * lockstep.lr_scale())``). A value
    that is not a finite number above 0 exits with code 2.
    """
    environ = os.environ if environ is None else environ
    text = environ.get("LOCKSTEP_LR_SCALE") or "1"
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value > 0 and math.isfinite(value)):
        _fail("LOCKSTEP_LR_SCALE must be a finite number above 0, got %r" % text)
    return value


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


_hole_guard = []  # the chunk above the hole, kept for the process's life


def _make_heap_hole(size):
    """A ``size``-byte hole in the C heap: glibc's malloc (through ctypes,
    as torch's CPU allocator uses it) of ``size`` bytes, a guard allocated
    until one is the chunk right above it (the next chunk's memory starts
    malloc_usable_size + 8 bytes on), then the first freed: the hole cannot
    merge back into a larger free chunk or the top of the heap. Tries that
    landed elsewhere are given back. The same steps as lockstep-torch's
    (src/run/smoke_run.cpp)."""
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    libc.malloc_usable_size.restype = ctypes.c_size_t
    libc.malloc_usable_size.argtypes = [ctypes.c_void_p]
    hole = libc.malloc(size)
    if not hole:
        return
    above = hole + libc.malloc_usable_size(hole) + ctypes.sizeof(ctypes.c_size_t)
    tries = []
    for _ in range(64):
        t = libc.malloc(4096)
        if t == above:
            _hole_guard.append(t)
            break
        tries.append(t)
    for t in tries:
        libc.free(t)
    libc.free(hole)


def _apply_variation(torch, spec):
    """A perturbed repeat's share made in the trainer (LOCKSTEP_VARY, written
    by lockstep: ``allocator=BYTES,malloc-perturb=N,affinity=1+2,env-order,
    thread-warmup``). ``allocator``: a hole of BYTES bytes in the heap before
    the trainer's own tensors (:func:`_make_heap_hole`). ``thread-warmup``:
    the intra-op pool started now. The other kinds lockstep applies itself
    (the CPUs, MALLOC_PERTURB_, the environment's order). Values are
    lockstep's own: a malformed one is a LockstepError (exit 2)."""
    if not spec:
        return  # a plain run
    kinds = ("allocator", "malloc-perturb", "affinity", "env-order", "thread-warmup")
    seen = set()
    for item in spec.split(","):
        kind, eq, value = item.strip().partition("=")
        if kind not in kinds:
            _fail("LOCKSTEP_VARY: unknown kind %r (%s)" % (kind, ", ".join(kinds)))
        if kind in seen:
            _fail("LOCKSTEP_VARY: %s given twice" % kind)
        seen.add(kind)
        # Every value written out, as lockstep hands it on (src/spec/run_variation.h).
        if kind == "allocator" and not (re.fullmatch(r"[0-9]{1,9}", value) and 65536 <= int(value) <= 131071):
            _fail("LOCKSTEP_VARY: allocator must be a byte count in [65536, 131071], got %r" % value)
        if kind == "malloc-perturb" and not (re.fullmatch(r"[0-9]{1,3}", value) and 1 <= int(value) <= 255):
            _fail("LOCKSTEP_VARY: malloc-perturb must be a byte value in [1, 255], got %r" % value)
        if kind == "affinity" and not re.fullmatch(r"[0-9]{1,4}(\+[0-9]{1,4})*", value):
            _fail("LOCKSTEP_VARY: affinity must be CPU numbers joined by '+', got %r" % value)
        if kind in ("env-order", "thread-warmup") and eq:
            _fail("LOCKSTEP_VARY: %s takes no value, got %r" % (kind, value))
    # Applied once every item is known good: the heap hole, then the pool.
    if "allocator" in seen:
        _make_heap_hole(int(dict(i.strip().partition("=")[::2] for i in spec.split(","))["allocator"]))
    if "thread-warmup" in seen:
        torch.ones(1 << 16).add_(1).sum()


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


def _fp32_precision(torch):
    """torch 2.9's fp32 precision API, "generic=ieee cuda.matmul=ieee ...":
    each backend's and op's setting ("ieee", "tf32", "bf16", "none": inherit),
    or "(absent: ...)" on a torch without it (the legacy TF32 flags and
    float32_matmul_precision, in the contract, are then all there is)."""
    backends = torch.backends
    if not hasattr(backends, "fp32_precision"):
        return "(absent: torch < 2.9 has no torch.backends.fp32_precision)"
    parts = ["generic=%s" % backends.fp32_precision]
    for name, obj in (("cuda.matmul", getattr(getattr(backends, "cuda", None), "matmul", None)),
                      ("cudnn", getattr(backends, "cudnn", None)),
                      ("cudnn.conv", getattr(getattr(backends, "cudnn", None), "conv", None)),
                      ("cudnn.rnn", getattr(getattr(backends, "cudnn", None), "rnn", None)),
                      ("mkldnn", getattr(backends, "mkldnn", None)),
                      ("mkldnn.matmul", getattr(getattr(backends, "mkldnn", None), "matmul", None)),
                      ("mkldnn.conv", getattr(getattr(backends, "mkldnn", None), "conv", None)),
                      ("mkldnn.rnn", getattr(getattr(backends, "mkldnn", None), "rnn", None))):
        try:
            value = getattr(obj, "fp32_precision", None) if obj is not None else None
        except (AttributeError, RuntimeError):
            value = None
        if value is not None:
            parts.append("%s=%s" % (name, value))
    return " ".join(parts)


def _reduced_precision_reductions(torch):
    """cuBLAS reductions in reduced precision, "fp16=True bf16=True": torch
    lets fp16/bf16 GEMMs accumulate in that precision unless told otherwise
    (torch.backends.cuda.matmul.allow_{fp16,bf16}_reduced_precision_reduction;
    2.10 made them options with split-K)."""
    matmul = getattr(getattr(torch.backends, "cuda", None), "matmul", None)
    parts = []
    for kind in ("fp16", "bf16"):
        try:
            value = getattr(matmul, "allow_%s_reduced_precision_reduction" % kind)
        except (AttributeError, AssertionError, RuntimeError):  # 1.13 asserts on a name it lacks
            value = "unsupported"
        parts.append("%s=%s" % (kind, value))
    return " ".join(parts)


# torch._inductor.config settings that change which kernels torch.compile
# makes or how they reduce (the deterministic and batch-invariant modes of
# 2025-26 included). Read only once the trainer has imported Inductor.
_INDUCTOR_SETTINGS = ("deterministic", "batch_invariant", "fallback_random", "max_autotune", "max_autotune_gemm",
                      "max_autotune_pointwise", "coordinate_descent_tuning", "emulate_precision_casts",
                      "force_disable_caches", "freezing")


def _inductor_settings():
    """"deterministic=True fallback_random=False ...": those of
    _INDUCTOR_SETTINGS this torch has, or "(absent: ...)" before the trainer
    imports torch._inductor (importing it here would cost seconds and could
    change nothing the trainer runs)."""
    config = sys.modules.get("torch._inductor.config")
    if config is None:
        return "(absent: torch._inductor not imported)"
    parts = []
    for name in _INDUCTOR_SETTINGS:
        if hasattr(config, name):
            parts.append("%s=%s" % (name, getattr(config, name)))
    return " ".join(parts) if parts else "(absent: none of the recorded settings in this torch)"


_MODULE_DISTRIBUTIONS = None


def _imported_distributions():
    """Normalised names of the distributions that provide a top-level module
    now in sys.modules (the trainer, its libraries and this helper imported
    them), or None when this Python cannot map modules to distributions
    (importlib.metadata.packages_distributions is 3.10+).

    packages_distributions() reads each distribution's RECORD or
    top_level.txt. Debian 13's and sid's python3-torch and python3-numpy
    ship dist-info with neither, so a distribution is also taken as imported
    when its normalised name is that of an imported top-level module that
    is not the standard library's (torch, numpy)."""
    global _MODULE_DISTRIBUTIONS
    if _MODULE_DISTRIBUTIONS is None:
        get = getattr(importlib.metadata, "packages_distributions", None)
        if get is None:
            return None
        _MODULE_DISTRIBUTIONS = get()
    stdlib = getattr(sys, "stdlib_module_names", frozenset())
    out = set()
    for top in {name.partition(".")[0] for name in list(sys.modules)}:
        for dist in _MODULE_DISTRIBUTIONS.get(top, ()):
            out.add(_normalized(dist))
        if top and top not in stdlib and not top.startswith("_"):
            out.add(_normalized(top))
    return out


_INSTALLED = (None, None)  # (sys.path it was read for, [(normalised name, version)])


def _installed_distributions():
    """Every installed distribution with metadata as (normalised name,
    version), the first found on sys.path winning, as import does. Read
    once per sys.path: the record is rewritten every step, and parsing a
    few hundred METADATA files each time would cost a tenth of a second."""
    global _INSTALLED
    path = tuple(sys.path)
    if _INSTALLED[0] == path:
        return _INSTALLED[1]
    out, seen = [], set()
    for dist in importlib.metadata.distributions():
        meta = dist.metadata  # parsed once: Name and Version from one read
        name = meta["Name"] if meta else None
        if not name:
            continue
        key = _normalized(name)
        if key in seen:
            continue
        seen.add(key)
        out.append((key, meta["Version"]))
    _INSTALLED = (path, out)
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
        fp["python.torch.fp32_precision"] = _field(_fp32_precision(torch), True)
        # cuBLAS only: relevant on a CUDA run.
        fp["python.torch.reduced_precision_reductions"] = _field(_reduced_precision_reductions(torch),
                                                                 os.environ.get("LOCKSTEP_DEVICE") == "cuda")
        fp["python.torch.inductor"] = _field(_inductor_settings(), True)
    # Every installed distribution with metadata (pip's dist-info and
    # egg-info; Debian's python3-* packages mostly have one too), the first
    # found on sys.path winning, as import does; relevant when imported.
    imported = _imported_distributions()
    for key, version in _installed_distributions():
        # lockstep itself (its wheel in the trainer's venv) is the gate, not
        # the trainer's code: its helper's version is checked apart (exit 3
        # when it is not the binary's), so a lockstep upgrade is no stack
        # change.
        relevant = key != "lockstep" and (imported is None or key in imported)
        fp["python.packages." + key] = _field(version, relevant)
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
        # LOCKSTEP_PERTURB=data: rank 0's data-only pass perturbs one sample
        # of the first loader registered (data_perturb). None: not asked.
        self._perturb_data = settings["perturb"] == "data" and self.data_only and self.rank == 0
        self._perturb = settings["perturb"]
        self.perturbed = ("nothing yet: the trainer registered no DataLoader (ctx.register_loader(loader))"
                          if self._perturb_data else None)
        _planted.forget(self.out)
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
        if self._perturb_data:  # the first loader registered
            self._perturb_data = False
            self._install_data_perturbation(loader)
        torch = self._torch
        if torch is not None:
            sampler = getattr(loader, "sampler", None)
            if isinstance(sampler, torch.utils.data.RandomSampler) and getattr(sampler, "generator", None) is None:
                print("lockstep: the DataLoader shuffles without generator=ctx.generator; its order then "
                      "depends on every earlier draw from torch's global generator", file=sys.stderr, flush=True)
        self.write_record()
        return loader

    def _install_data_perturbation(self, loader):
        def on_marked(index, why_not):
            self.perturbed = ("dataset index %d (the first sample of the data-only pass's first batch)" % index
                              if index is not None else why_not)
            self.write_record()

        why = data_perturb.install(loader, on_marked)
        self.perturbed = why or ("nothing: the first loader registered (ctx.register_loader) was never iterated; "
                                 "the helper moves a sample of that one only")

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
        record = {"schema": TRAINER_SCHEMA, "helper": {"version": __version__, "path": _HELPER_DIR},
                  "contract": self.contract, "fingerprint": self.fingerprint}
        # What a planted change moved: the marked index (this process) and
        # the value (said by the process that fetched the sample), or the
        # parameter the ModuleTracer moved.
        said = _planted.read(self.out) if self._perturb else ""
        if self.perturbed is not None and said.startswith("nothing") and self.perturbed.startswith("dataset"):
            record["perturbed"] = "%s (%s)" % (said, self.perturbed)
        elif self.perturbed is not None:
            record["perturbed"] = self.perturbed + (": " + said if said and self.perturbed.startswith("dataset") else "")
        elif self._perturb == "parameter" and said:
            record["perturbed"] = said
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
        _apply_variation(torch, os.environ.get("LOCKSTEP_VARY", ""))
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
