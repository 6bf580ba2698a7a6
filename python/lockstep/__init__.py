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
- :class:`MetricsWriter` writes per-step metrics as JSON lines;
- :class:`DigestWriter` writes per-step XXH3-128 digests of the parameters
  and gradients (``DIGESTS_FILE`` in ``ctx.out``), so a bit-exact check
  names the first step whose bytes moved even where the loss held.

Example (a complete trainer loop)::

    import lockstep, torch

    ctx = lockstep.apply_contract()            # first, before any torch work
    loader = torch.utils.data.DataLoader(
        dataset, batch_size=32, shuffle=True, drop_last=True, num_workers=2,
        generator=ctx.generator, worker_init_fn=ctx.worker_init_fn)
    ctx.register_loader(loader)
    probes = lockstep.ProbeWriter(ctx.out / "probes.jsonl")
    metrics = lockstep.MetricsWriter(ctx.out / "metrics.jsonl")
    digests = lockstep.DigestWriter(ctx.out / lockstep.DIGESTS_FILE)
    for step, (inputs, labels, indices) in zip(range(ctx.steps), loader):
        probes.write(inputs, labels, indices)
        if ctx.data_only:
            continue                           # data-only pass: probes, no training
        loss = train_step(inputs, labels)      # backward and optimizer.step()
        metrics.log(step, loss=loss.item())
        digests.write(step, model)             # optional: per-step parameter and gradient digests

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
LOCKSTEP_LR_SCALE          a planted change of the learning rate (default 1):
                           multiply the lr by :func:`lr_scale` to take part
                           in ``run --lr-scale`` and calibrate's detection
LOCKSTEP_PERTURB           "parameter": a planted one-ULP change of the model's
                           first parameter, made by ModuleTracer.step(0)
                           (``run --perturb parameter``, ``lockstep selftest``);
                           "data": in rank 0's data-only pass, the first
                           sample of the first registered loader's first
                           batch reaches the trainer one ULP off
                           (``data_perturb``; ``run --perturb data``);
                           lockstep-trainer.json's "perturbed" says what
LOCKSTEP_BATCH_SWEEP       a file: ``lockstep probe --batch-sweep`` of a
                           trainer smoke; ModuleTracer.step(0) sweeps step
                           0's first forward into it and ends the trainer
                           (``batch_sweep``)
LOCKSTEP_VARY              a perturbed repeat (``run --vary``, check's second
                           repeat): :func:`apply_contract` makes its heap
                           hole (``allocator=BYTES``) and starts the
                           intra-op pool (``thread-warmup``); nothing moves
                           a deterministic trainer's values
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
python.torch.fp32_precision     yes   torch >= 2.9's per-backend fp32 precision
                                      ("generic=ieee cuda.matmul=ieee ..."), or
                                      "(absent: torch < 2.9 ...)"
python.torch.reduced_precision_reductions
                                (cuda) cuBLAS fp16/bf16 reduced-precision
                                      reductions ("fp16=True bf16=True");
                                      relevant on a CUDA run
python.torch.inductor           yes   torch._inductor.config's deterministic,
                                      batch_invariant, fallback_random,
                                      max_autotune, ... ("name=value ...", those
                                      this torch has), once the trainer imported
                                      Inductor (torch.compile); "(absent: ...)"
                                      before
python.packages.<name>          (*)   version of every installed distribution
                                      (importlib.metadata; name lowercased,
                                      runs of -_. as "-"; first on sys.path wins).
                                      (*) relevant when the trainer imported it
                                      (never lockstep's own: its version is
                                      checked apart)
                                      (a top-level module of it in sys.modules
                                      when the file is written, the last time
                                      at exit; or, for a distribution without
                                      RECORD or top_level.txt as Debian 13's
                                      python3-torch, an imported module of its
                                      name), informational otherwise: an
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


from ._errors import LockstepError
from ._version import __version__
from .contract import TRAINER_FILE, TRAINER_SCHEMA, Context, apply_contract, lr_scale, stack_fingerprint, worker_init_fn
from . import batch_sweep
from .digests import DIGESTS_FILE, DigestWriter, step_digests
from .probes import probe, tensor_stats
from .seeds import derive_seed
from .tracer import ModuleTracer
from .writers import MetricsWriter, ProbeWriter

__all__ = [
    "LockstepError",
    "Context",
    "apply_contract",
    "worker_init_fn",
    "lr_scale",
    "derive_seed",
    "tensor_stats",
    "probe",
    "ProbeWriter",
    "MetricsWriter",
    "DigestWriter",
    "DIGESTS_FILE",
    "step_digests",
    "ModuleTracer",
    "stack_fingerprint",
    "TRAINER_FILE",
    "TRAINER_SCHEMA",
    "__version__",
]
