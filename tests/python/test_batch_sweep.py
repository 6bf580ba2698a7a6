#!/usr/bin/env python3
"""The batch-invariance sweep of a trainer's model (python/lockstep/batch_sweep.py).

Planted cases with exact cells: a module that mixes the batch (adds the
batch mean) is where the difference starts at every smaller size, the
module after it carries it on, and one without a batch dimension is
compared whole; keyword arguments and every batched tensor are split; the
model's mode and gradients are restored; what cannot be swept is refused.
And the tracer's side: LOCKSTEP_BATCH_SWEEP makes ModuleTracer.step(0)
sweep the first forward, write the file and end the trainer (exit 0)
before its step trains.

    python3 test_batch_sweep.py

Needs numpy, xxhash and torch (exit 77 without numpy or xxhash; the tests
are skipped without torch).
"""
import json
import math
import os
import sys
import tempfile
import unittest

try:
    import numpy as np  # noqa: F401
    import xxhash  # noqa: F401
except ImportError as e:
    print("skipped: %s" % e)
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_contract import HAVE_TORCH, PYTHON_DIR, needs_torch, protocol_env, run_snippet  # noqa: E402

sys.path.insert(0, PYTHON_DIR)
from lockstep import batch_sweep  # noqa: E402

if HAVE_TORCH:
    import torch

    class Mix(torch.nn.Module):
        """Couples the samples: each gets the batch's mean added."""

        def forward(self, x):
            return x + x.mean(dim=0, keepdim=True)

    class Total(torch.nn.Module):
        """No batch dimension: one number for the whole batch."""

        def forward(self, x):
            return x.sum()

    class Net(torch.nn.Module):
        def __init__(self, mix):
            super().__init__()
            self.scale = torch.nn.Identity()
            self.mix = Mix() if mix else torch.nn.Identity()
            self.out = torch.nn.Identity()
            self.total = Total()

        def forward(self, x, shift=None):
            y = self.out(self.mix(self.scale(x)))
            if shift is not None:
                y = y + shift
            self.total(y)
            return y

    def cells(result, module):
        m = next(m for m in result["modules"] if m["module"] == module)
        return [(c["size"], c["samples_differ"], c["samples_new"]) for c in m["cells"]]


@needs_torch
class Sweep(unittest.TestCase):
    def setUp(self):
        g = torch.Generator().manual_seed(3)
        self.x = torch.randn(8, 3, generator=g)

    def test_an_invariant_model_has_no_differing_sample(self):
        r = batch_sweep.sweep(Net(mix=False), (self.x,))
        self.assertEqual(r["batch"], 8)
        self.assertEqual(r["sizes"], [8, 4, 2, 1])
        self.assertEqual([m["module"] for m in r["modules"]], ["scale", "mix", "out", "total", "(model output)"])
        self.assertEqual([m["type"] for m in r["modules"]], ["Identity", "Identity", "Identity", "Total", "Net"])
        for m in r["modules"]:
            if m["module"] != "total":
                self.assertEqual(cells(r, m["module"]), [(4, 0, 0), (2, 0, 0), (1, 0, 0)], m["module"])
        self.assertGreater(r["forward_s"], 0)
        json.dumps(r)  # batch_sweep_json's form, serialisable as it is

    def test_the_module_that_mixes_the_batch_is_where_the_difference_starts(self):
        r = batch_sweep.sweep(Net(mix=True), (self.x,))
        self.assertEqual(cells(r, "scale"), [(4, 0, 0), (2, 0, 0), (1, 0, 0)])
        self.assertEqual(cells(r, "mix"), [(4, 8, 8), (2, 8, 8), (1, 8, 8)])
        self.assertEqual(cells(r, "out"), [(4, 8, 0), (2, 8, 0), (1, 8, 0)])
        self.assertEqual(cells(r, "(model output)"), [(4, 8, 0), (2, 8, 0), (1, 8, 0)])
        mix = next(m for m in r["modules"] if m["module"] == "mix")
        self.assertTrue(mix["per_sample"])
        self.assertGreater(mix["cells"][0]["max_ulp"], 0)
        self.assertGreater(mix["cells"][0]["max_abs"], 0)

    def test_an_output_without_a_batch_dimension_is_compared_whole(self):
        r = batch_sweep.sweep(Net(mix=False), (self.x,))
        total = next(m for m in r["modules"] if m["module"] == "total")
        self.assertFalse(total["per_sample"])

    def test_keyword_arguments_with_the_batch_dimension_are_split_too(self):
        shift = torch.arange(8.0).reshape(8, 1)
        r = batch_sweep.sweep(Net(mix=False), (self.x,), {"shift": shift})
        self.assertEqual(cells(r, "(model output)"), [(4, 0, 0), (2, 0, 0), (1, 0, 0)])

    def test_mode_and_gradients_are_restored(self):
        net = Net(mix=True)
        net.train()
        batch_sweep.sweep(net, (self.x,))
        self.assertTrue(net.training)
        self.assertTrue(torch.is_grad_enabled())
        self.assertEqual(len(net.mix._forward_hooks), 0)

    def test_the_model_row_is_its_first_output_with_the_batch_dimension(self):
        class LossFirst(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Identity()

            def forward(self, x):
                y = self.fc(x)
                return y.sum(), y  # (loss, logits), as many trainers return them

        r = batch_sweep.sweep(LossFirst(), (self.x,))
        self.assertEqual(cells(r, "(model output)"), [(4, 0, 0), (2, 0, 0), (1, 0, 0)])
        self.assertTrue(r["modules"][-1]["per_sample"])

    def test_a_model_that_returns_no_tensor_has_no_model_row(self):
        class Silent(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Identity()

            def forward(self, x):
                self.fc(x)

        r = batch_sweep.sweep(Silent(), (self.x,))
        self.assertEqual([m["module"] for m in r["modules"]], ["fc"])

    def test_a_nan_that_moves_counts_in_ulps_and_leaves_max_abs_finite(self):
        class NanMix(torch.nn.Module):
            def forward(self, x):
                return torch.where(x > x.mean(), x * 0 + float("nan"), x)

        class Net2(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.mix = NanMix()

            def forward(self, x):
                return self.mix(x)

        r = batch_sweep.sweep(Net2(), (self.x,))
        mix = next(m for m in r["modules"] if m["module"] == "mix")
        self.assertGreater(mix["cells"][-1]["samples_differ"], 0)
        self.assertTrue(all(math.isfinite(c["max_abs"]) for c in mix["cells"]))
        json.dumps(r, allow_nan=False)  # valid JSON: no NaN literal

    def test_what_cannot_be_swept_is_refused(self):
        with self.assertRaisesRegex(ValueError, "no tensor argument with a batch dimension"):
            batch_sweep.sweep(Net(mix=False), (3,))
        with self.assertRaisesRegex(ValueError, "holds 1 sample: nothing to split"):
            batch_sweep.sweep(Net(mix=False), (self.x[:1],))


@needs_torch
class Tracer(unittest.TestCase):
    SNIPPET = """
        import json, os, torch, lockstep
        ctx = lockstep.apply_contract()
        model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
        tracer = ctx.trace_modules(model)
        x = torch.randn(6, 3, generator=torch.Generator().manual_seed(1))
        for step in range(2):
            tracer.step(step)
            model(x).sum().backward()
            print("trained", step)
        print(json.dumps({"end": True}))
    """

    def test_the_first_forward_is_swept_and_the_trainer_ends(self):
        with tempfile.TemporaryDirectory() as out:
            path = os.path.join(out, "batch_sweep.json")
            last, err = run_snippet(self.SNIPPET, protocol_env(out, LOCKSTEP_BATCH_SWEEP=path))
            self.assertIsNone(last)  # nothing printed: no step trained
            self.assertIn("the trainer stops here (LOCKSTEP_BATCH_SWEEP)", err)
            with open(path, encoding="utf-8") as f:
                r = json.load(f)
            self.assertEqual(r["sizes"], [6, 3, 1])
            self.assertEqual([m["module"] for m in r["modules"]], ["0", "1", "2", "(model output)"])
            self.assertEqual([m["type"] for m in r["modules"]], ["Linear", "ReLU", "Linear", "Sequential"])
            self.assertTrue(os.path.exists(os.path.join(out, "lockstep-trainer.json")))

    def test_a_model_that_cannot_be_swept_leaves_the_reason_and_exits_2(self):
        with tempfile.TemporaryDirectory() as out:
            path = os.path.join(out, "batch_sweep.json")
            _, err = run_snippet(self.SNIPPET.replace("torch.randn(6, 3", "torch.randn(1, 3"),
                                 protocol_env(out, LOCKSTEP_BATCH_SWEEP=path), expect_rc=2)
            with open(path, encoding="utf-8") as f:
                self.assertEqual(json.load(f), {"error": "lockstep batch sweep: the first batch holds 1 sample: "
                                                         "nothing to split"})
            self.assertIn("nothing to split", err)

    def test_without_the_variable_the_trainer_runs_as_ever(self):
        with tempfile.TemporaryDirectory() as out:
            last, _ = run_snippet(self.SNIPPET, protocol_env(out))
            self.assertEqual(last, {"end": True})


if __name__ == "__main__":
    unittest.main(verbosity=2)
