#!/usr/bin/env python3
"""A team's own PyTorch trainer, gated by lockstep (python/lockstep is the helper).

    python3 train.py [--data PATH] [--steps N] [--num-workers W] [--data-only]
                     [--stop-after K --checkpoint PATH] [--resume PATH]

Trains a small CNN on scikit-learn's digits (digits.csv.gz: 1797 rows of 64
pixel values 0-16 then the label, no header; ci/fetch-data.sh puts it in the
data cache). Writes $LOCKSTEP_OUT/metrics.jsonl (loss, grad_norm per step),
$LOCKSTEP_OUT/probes.jsonl (a probe per consumed batch) and, through
lockstep.apply_contract, $LOCKSTEP_OUT/lockstep-trainer.json. The data-only
pass (LOCKSTEP_PASS=data or --data-only) iterates the same loader for the
same batches and writes probes only. --stop-after K saves a checkpoint after
K steps and exits 0; --resume continues from it, steps K..N-1 bit-identical
to an uninterrupted run (its metrics and probes then hold only those).

Multi-rank (run by lockstep with RANK/WORLD_SIZE set, a smoke with a
"distributed" section; examples/pytorch-trainer-2rank/smoke): a
DistributedSampler seeded with ctx.stream_seed("sampler") shards one global
permutation per epoch (drop_last), the global batch of 32 split over the
ranks; every pass joins a Gloo process group (env://: lockstep gives each
pass its own MASTER_PORT) as DDP scripts do at start-up, and the training
pass wraps the model in DistributedDataParallel; the augmentation key adds the rank; the
logged loss is the all-reduced mean (every rank logs the same value).
Each rank checkpoints and resumes its own state (its generators differ), so
the smoke passes a per-rank path: "--checkpoint", "{checkpoint}.rank-{rank}".

Determinism wiring: the shuffle comes from generator=ctx.generator; each
sample's augmentation (shift by up to 1 pixel, noise std 0.05) draws from
its own torch.Generator seeded from (seed, "augment", epoch, index), so the
batches do not depend on num_workers; ctx.worker_init_fn seeds each worker's
global RNGs as a safety net. Resume restores the loader generator's state
captured at the epoch's start and skips the epoch's consumed batches.

--compile trains through torch.compile (torch >= 2.0; Inductor needs a C++
compiler, the Python headers and setuptools): under lockstep's strict
contract its kernels run deterministically, so the compiled smoke repeats
and resumes bit for bit as the eager one does (tests/ci/compiled_trainer_test.sh
checks it on Debian 13's torch 2.6 and sid's 2.14).

--accum K trains each batch as K micro-batches with gradient accumulation
(the loss of each divided by K): the same update as the whole batch, up to
the order of the sums; an equivalence lane holds it to the base run.

TEST-ONLY bug switches, PYTORCH_TRAINER_BUG=<name>, for lockstep's tests
(what lockstep sees, 10 steps, 2 workers):
  no_worker_init_fn     no worker_init_fn, and the noise drawn from a numpy
                        Generator the dataset owns, which no worker reseeds:
                        both workers replay one noise stream. Runs repeat;
                        batch 0 differs from the golden (inputs stats).
  no_sampler_generator  shuffle without generator=: the order comes from
                        torch's global generator, after model init drew
                        from it: runs repeat, batch 0 differs from the
                        golden (sample index hash); resume breaks too.
  urandom_sampler       the shuffle generator seeded from os.urandom: every
                        pass, the training pass too, draws another order;
                        lockstep names the seed, not the worker count.
  global_random         the shift drawn from Python's global `random` (which
                        the DataLoader seeds per worker): runs repeat; batch
                        0 differs from the golden and with num_workers.
  nondeterministic_op   the classifier's sum over features and the loss's
                        sum over the batch by index_add_ in an order drawn
                        from os.urandom (as CUDA atomics would): loss and
                        gradients differ in their last bits run to run.
  dropout_shared_generator
                        batches drawn as nanoGPT's get_batch draws them,
                        torch.randint on torch's global generator each step,
                        and a dropout layer that draws from it too: the
                        data-only pass (no dropout) draws other batches from
                        batch 1 on, though every run repeats bit for bit.
  rank_local_loss       (multi-rank) each rank logs its own loss instead of
                        the all-reduced one: the ranks disagree on "loss".
  accum_unscaled        with --accum K, each micro-batch's loss is not
                        divided by K: the gradients are K times too large.
                        The base run never accumulates, so it still matches
                        the golden; only an equivalence lane with --accum
                        (docs/equivalence.md) catches it, at train step 0
                        (grad_norm twice the base run's).
  fixed_master_port     the trainer sets MASTER_ADDR=127.0.0.1 and
                        MASTER_PORT=$PYTORCH_TRAINER_PORT itself and joins a
                        process group in every pass (also a single process):
                        the data-only and training passes, which run at the
                        same time, bind one port; one fails with "Address
                        already in use".
  probe_raw_images      the probes take the images as read from the CSV
                        (dataset.images[idx]), not the batch the loader
                        made: a change of the augmentation or of what the
                        dataset returns passes the data-only pass unseen;
                        `lockstep selftest` says INSENSITIVE (its planted
                        data change is NOT caught).
PYTORCH_TRAINER_LR_DRIFT=x (TEST-ONLY) trains with lr * (1 + x): a silent
change for the nightly history's tests.
"""
import argparse
import os
import random
import sys

import numpy as np
import torch
import torch.nn.functional as F

import lockstep

BUGS = ("no_worker_init_fn", "no_sampler_generator", "urandom_sampler", "global_random", "nondeterministic_op",
        "dropout_shared_generator", "rank_local_loss", "fixed_master_port", "accum_unscaled", "probe_raw_images")


class Digits(torch.utils.data.Dataset):
    """(image 1x8x8 float32 in [0,1] augmented, label int64, index int64)."""

    def __init__(self, path, seed, bug, rank=None):
        table = np.loadtxt(path, delimiter=",", dtype=np.float32, ndmin=2)
        if table.shape[1] != 65:
            sys.exit("train.py: %s: expected 65 columns, got %d" % (path, table.shape[1]))
        self.images = torch.from_numpy(table[:, :64] / 16).reshape(-1, 1, 8, 8)
        self.labels = torch.from_numpy(table[:, 64].astype(np.int64))
        self.seed, self.bug, self.epoch, self.rank = seed, bug, 0, rank
        self.rng = np.random.default_rng(lockstep.derive_seed(seed, "augment"))  # used by a bug only

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        g = torch.Generator()
        key = (self.epoch, i) if self.rank is None else (self.epoch, i, self.rank)
        g.manual_seed(lockstep.derive_seed(self.seed, "augment", *key))
        dy, dx = torch.randint(-1, 2, (2,), generator=g).tolist()
        if self.bug == "global_random":
            dy, dx = random.randint(-1, 1), random.randint(-1, 1)
        img = F.pad(self.images[i], (1, 1, 1, 1))[:, 1 - dy:9 - dy, 1 - dx:9 - dx]  # zeros shifted in
        if self.bug == "no_worker_init_fn":
            noise = torch.from_numpy(self.rng.standard_normal((1, 8, 8), dtype=np.float32))
        else:
            noise = torch.randn(1, 8, 8, generator=g)
        return img + noise * 0.05, self.labels[i], i


class Net(torch.nn.Module):
    def __init__(self, bug):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, padding=1)
        self.fc = torch.nn.Linear(16 * 4 * 4, 10)
        self.bug = bug

    def forward(self, x):
        h = F.max_pool2d(F.relu(self.conv2(F.relu(self.conv1(x)))), 2).flatten(1)
        if self.bug == "dropout_shared_generator":
            h = F.dropout(h, 0.2, self.training)  # draws from torch's global generator
        if self.bug != "nondeterministic_op":
            return self.fc(h)
        return unordered_sum(h.unsqueeze(1) * self.fc.weight.unsqueeze(0), 2) + self.fc.bias


def unordered_sum(terms, dim):
    """Bug nondeterministic_op: sum over `dim` by index_add_ in an order drawn
    from os.urandom, as a GPU's atomicAdd would add: float32 rounding differs."""
    order = np.random.default_rng(int.from_bytes(os.urandom(8), "little")).permutation(terms.shape[dim])
    order = torch.from_numpy(order).to(terms.device)
    out = torch.zeros(terms.shape[:dim] + (1,) + terms.shape[dim + 1:], device=terms.device, dtype=terms.dtype)
    return out.index_add_(dim, torch.zeros_like(order), terms.index_select(dim, order)).squeeze(dim)


def batches(loader, dataset, steps, step, epoch, skip, epoch_state):
    """Yields (step, epoch, state at the epoch's start, batches into the epoch, batch)."""
    while step < steps:
        if epoch_state is not None:
            loader.generator.set_state(epoch_state)  # resume: replay this epoch's draws
        epoch_state = loader.generator.get_state() if loader.generator is not None else None
        dataset.epoch = epoch
        if hasattr(loader.sampler, "set_epoch"):
            loader.sampler.set_epoch(epoch)  # DistributedSampler: this epoch's permutation
        for k, batch in enumerate(loader):
            if step >= steps:
                break
            if k >= skip:
                yield step, epoch, epoch_state, k + 1, batch
                step += 1
        epoch, skip, epoch_state = epoch + 1, 0, None


def global_generator_batches(dataset, steps, step, batch_size):
    """Bug dropout_shared_generator: nanoGPT's get_batch, indices from torch's
    global generator each step (the stream dropout draws from too)."""
    while step < steps:
        idx = torch.randint(len(dataset), (batch_size,))
        yield step, 0, None, step + 1, torch.utils.data.default_collate([dataset[int(i)] for i in idx])
        step += 1


def main():
    default_data = os.path.join(os.environ.get("LOCKSTEP_DATA_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "lockstep", "data"), "digits.csv.gz")
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=default_data)
    ap.add_argument("--steps", type=int)
    ap.add_argument("--num-workers", type=int, default=2)
    ap.add_argument("--data-only", action="store_true", help="the data-only pass (also LOCKSTEP_PASS=data)")
    ap.add_argument("--stop-after", type=int)
    ap.add_argument("--checkpoint")
    ap.add_argument("--resume")
    ap.add_argument("--compile", action="store_true",
                    help="train through torch.compile (Inductor; torch >= 2.0): the compiled smoke")
    ap.add_argument("--accum", type=int, default=1,
                    help="each batch as K micro-batches with gradient accumulation (an equivalence lane)")
    args = ap.parse_args()
    bug = os.environ.get("PYTORCH_TRAINER_BUG", "")
    if bug and bug not in BUGS:
        ap.error("PYTORCH_TRAINER_BUG must be one of %s, got %r" % (", ".join(BUGS), bug))
    if (args.stop_after is None) != (args.checkpoint is None):
        ap.error("--stop-after and --checkpoint go together")
    if args.stop_after is not None and args.stop_after < 1:
        ap.error("--stop-after must be >= 1")
    if args.accum < 1 or 32 % args.accum:
        ap.error("--accum must divide the batch of 32")
    if args.num_workers < 0:
        ap.error("--num-workers must be >= 0")
    if args.compile and not hasattr(torch, "compile"):
        ap.error("--compile needs torch >= 2.0 (torch.compile); this is torch %s" % torch.__version__)
    if not os.path.isfile(args.data):
        ap.error("no data file %s (ci/fetch-data.sh fetches digits.csv.gz)" % args.data)

    ctx = lockstep.apply_contract()
    data_only = ctx.data_only or args.data_only
    steps = ctx.steps if args.steps is None else args.steps
    if args.stop_after is not None and args.stop_after >= steps:
        ap.error("--stop-after must be below the %d steps" % steps)
    if data_only and (args.stop_after or args.resume):
        ap.error("the data-only pass (LOCKSTEP_PASS=data) neither checkpoints nor resumes")
    multi = ctx.world_size > 1
    group = multi or bug == "fixed_master_port"
    if bug == "fixed_master_port":
        os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", os.environ["PYTORCH_TRAINER_PORT"]
    if group:  # at start-up, in every pass, as DDP scripts do
        torch.distributed.init_process_group("gloo", rank=ctx.rank, world_size=ctx.world_size)  # env://
    dataset = Digits(args.data, ctx.seed, bug, ctx.rank if multi else None)
    sampler = None
    if multi:
        sampler = torch.utils.data.distributed.DistributedSampler(
            dataset, num_replicas=ctx.world_size, rank=ctx.rank, shuffle=True,
            seed=ctx.stream_seed("sampler") % 2**62, drop_last=True)
    generator = ctx.generator
    if bug == "no_sampler_generator":
        generator = None
    elif bug == "urandom_sampler":
        generator = torch.Generator().manual_seed(int.from_bytes(os.urandom(8), "little") % 2**62)
    loader = torch.utils.data.DataLoader(
        dataset, batch_size=32 // ctx.world_size, shuffle=not multi, sampler=sampler, drop_last=True,
        num_workers=args.num_workers,
        generator=generator,
        worker_init_fn=None if bug == "no_worker_init_fn" else ctx.worker_init_fn)
    ctx.register_loader(loader)

    step, epoch, skip, epoch_state = 0, 0, 0, None
    # Built in the data-only pass too: the same setup draws from the same
    # generators in both passes, and only the training is left out.
    model = Net(bug).to(ctx.device)
    if multi and not data_only:
        model = torch.nn.parallel.DistributedDataParallel(model)
    # --compile: the forward and backward through Inductor; the module itself
    # (its state_dict, the tracer's hooks) stays the one checkpointed.
    forward = torch.compile(model) if args.compile and not data_only else model
    # TEST-ONLY: PYTORCH_TRAINER_LR_DRIFT=x trains with lr * (1 + x), a
    # change lockstep is not told of (a code change, as the nightly history
    # tests plant night after night).
    drift = float(os.environ.get("PYTORCH_TRAINER_LR_DRIFT", "0"))
    opt = torch.optim.SGD(model.parameters(), lr=0.05 * lockstep.lr_scale() * (1 + drift), momentum=0.9)
    if args.resume:
        ck = torch.load(args.resume, weights_only=False)  # RNG states are Python objects
        if ck["seed"] != ctx.seed:
            sys.exit("train.py: %s was saved with seed %d, this run has %d" % (args.resume, ck["seed"], ctx.seed))
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        step, epoch, skip, epoch_state = ck["step"], ck["epoch"], ck["skip"], ck["epoch_generator_state"]
        torch.set_rng_state(ck["torch_rng"])
        np.random.set_state(ck["numpy_rng"])
        random.setstate(ck["python_rng"])

    probes = lockstep.ProbeWriter(ctx.out / "probes.jsonl", first_batch=step)
    metrics = None if data_only else lockstep.MetricsWriter(ctx.out / "metrics.jsonl")
    # Per-step digests of the parameters and gradients: a bit-exact check
    # names the first step whose bytes moved, even where the loss held.
    digests = None if data_only else lockstep.DigestWriter(ctx.out / lockstep.DIGESTS_FILE)
    # Per-module fingerprints of the first steps: lockstep names the first
    # divergent module (conv1, conv2, fc) when training moves.
    tracer = None if data_only else ctx.trace_modules(model)
    source = (global_generator_batches(dataset, steps, step, 32 // ctx.world_size)
              if bug == "dropout_shared_generator" else batches(loader, dataset, steps, step, epoch, skip, epoch_state))
    for step, epoch, epoch_state, into_epoch, (x, y, idx) in source:
        probes.write(dataset.images[idx] if bug == "probe_raw_images" else x, y, idx)
        if data_only:
            continue
        x, y = x.to(ctx.device), y.to(ctx.device)
        tracer.step(step)
        opt.zero_grad()
        if args.accum == 1:
            out = forward(x)
            if bug == "nondeterministic_op":
                loss = unordered_sum(F.cross_entropy(out, y, reduction="none"), 0) / len(y)
            else:
                loss = F.cross_entropy(out, y)
            loss.backward()
        else:  # micro-batches, gradients accumulated: the whole batch's update
            loss = 0
            for xs, ys in zip(x.chunk(args.accum), y.chunk(args.accum)):
                part = F.cross_entropy(forward(xs), ys)
                (part if bug == "accum_unscaled" else part / args.accum).backward()
                loss = loss + part.detach() / args.accum
        grad_norm = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in model.parameters()]))
        opt.step()
        digests.write(step, model)
        logged = loss.detach().clone()
        if multi and bug != "rank_local_loss":
            torch.distributed.all_reduce(logged)
            logged /= ctx.world_size
        metrics.log(step, loss=logged.item(), grad_norm=grad_norm.item())
        if args.stop_after is not None and step + 1 == args.stop_after:
            tmp = args.checkpoint + ".tmp"
            torch.save({"seed": ctx.seed, "step": step + 1, "epoch": epoch, "skip": into_epoch,
                        "epoch_generator_state": epoch_state, "model": model.state_dict(),
                        "optimizer": opt.state_dict(), "torch_rng": torch.get_rng_state(),
                        "numpy_rng": np.random.get_state(), "python_rng": random.getstate()}, tmp)
            os.replace(tmp, args.checkpoint)
            break
    probes.close()
    if metrics:
        metrics.close()
        digests.close()
        tracer.close()
    if group:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
