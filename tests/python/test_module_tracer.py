#!/usr/bin/env python3
"""The Python helper's ModuleTracer (python/lockstep, docs/module-trace.md):
the entries of a small model's forward and backward, in execution order,
in the run record's format (the C++ reader is ingest/module_trace_jsonl.h);
the hooks go once the traced steps are over; bad arguments are refused.

    python3 test_module_tracer.py

Needs numpy, xxhash and torch (exit 77, "skipped" for CTest, without them).
"""
import json
import os
import sys
import tempfile
import unittest

try:
    import numpy as np  # noqa: F401
    import torch
    import xxhash
except ImportError as e:
    print("skipped: %s" % e)
    sys.exit(77)

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "python")))
import lockstep  # noqa: E402


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))


def run(m, path, steps_traced, steps_run, **kw):
    x = torch.arange(8, dtype=torch.float32).reshape(2, 4) / 8
    with lockstep.ModuleTracer(m, path, steps=steps_traced, **kw) as t:
        for s in range(steps_run):
            t.step(s)
            m(x).sum().backward()
    with open(path) as f:
        return [json.loads(line) for line in f]


class ModuleTracerTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "module_trace.jsonl")

    def tearDown(self):
        self.dir.cleanup()

    def test_entries_in_execution_order_in_the_record_format(self):
        m = model()
        entries = run(m, self.path, 1, 3)
        self.assertEqual([(e["step"], e["phase"], e["module"]) for e in entries],
                         [(0, "forward", "0"), (0, "forward", "1"), (0, "forward", "2"),
                          (0, "backward", "2"), (0, "backward", "1")])  # "0"'s input needs no gradient
        x = torch.arange(8, dtype=torch.float32).reshape(2, 4) / 8
        h = m[0](x)
        self.assertEqual(entries[0]["input_xxh3"], xxhash.xxh3_128_hexdigest(x.numpy().tobytes()))
        self.assertEqual(entries[0]["output"]["xxh3_128"], lockstep.tensor_stats(h)["xxh3_128"])
        # What flows out of one module flows into the next.
        self.assertEqual(entries[1]["input_xxh3"], entries[0]["output"]["xxh3_128"])
        self.assertEqual(entries[2]["input_xxh3"], entries[1]["output"]["xxh3_128"])
        # Backward: the gradient into "2" is d(sum)/d(out) = ones; out of it, ones @ W.
        ones = torch.ones(2, 2)
        self.assertEqual(entries[3]["input_xxh3"], xxhash.xxh3_128_hexdigest(ones.numpy().tobytes()))
        self.assertEqual(entries[3]["output"], lockstep.tensor_stats(ones @ m[2].weight.detach()))
        self.assertEqual(set(entries[0]), {"step", "phase", "module", "input_xxh3", "output"})
        # The hooks are gone after the traced steps.
        self.assertEqual(len(m[0]._forward_hooks) + len(m[0]._forward_pre_hooks), 0)

    def test_a_repeat_traces_the_same_bits_and_a_rank_is_written(self):
        a = run(model(), self.path, 2, 2)
        b = run(model(), self.path, 2, 2)
        self.assertEqual(a, b)
        self.assertEqual(len(a), 10)
        r = run(model(), self.path, 1, 1, rank=1, world_size=2)
        self.assertEqual({e["rank"] for e in r}, {1})

    def test_all_modules_puts_a_container_after_its_children(self):
        m = torch.nn.Sequential(torch.nn.Sequential(torch.nn.Linear(4, 4)), torch.nn.Linear(4, 1))
        entries = run(m, self.path, 1, 1, modules="all")
        self.assertEqual([e["module"] for e in entries if e["phase"] == "forward"], ["0.0", "0", "1"])

    def test_an_in_place_op_after_a_module_is_allowed(self):
        m = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 3), torch.nn.ReLU(inplace=True),
                                torch.nn.Linear(3, 1))
        with torch.no_grad():
            m[1].bias.copy_(torch.tensor([-10.0, 0.0, 10.0]))  # the ReLU changes something
        entries = run(m, self.path, 1, 1)
        self.assertEqual([(e["phase"], e["module"]) for e in entries],
                         [("forward", "0"), ("forward", "1"), ("forward", "2"), ("forward", "3"),
                          ("backward", "3"), ("backward", "1")])  # "2" works in place: forward only
        # The in-place module's entry holds what flowed in before it ran.
        self.assertEqual(entries[2]["input_xxh3"], entries[1]["output"]["xxh3_128"])
        self.assertNotEqual(entries[2]["input_xxh3"], entries[2]["output"]["xxh3_128"])

    def test_an_in_place_op_on_a_view_keeps_the_backward_entries(self):
        # nn.Linear on a 3-D input returns a view; ReLU(inplace=True) rewrites
        # it (torch then drops that view's tensor hooks).
        torch.manual_seed(0)
        m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(inplace=True), torch.nn.Linear(4, 1))
        x = torch.randn(2, 3, 4)
        with lockstep.ModuleTracer(m, self.path, steps=1) as t:
            t.step(0)
            m(x).sum().backward()
        with open(self.path) as f:
            entries = [json.loads(line) for line in f]
        self.assertEqual([(e["phase"], e["module"]) for e in entries],
                         [("forward", "0"), ("forward", "1"), ("forward", "2"), ("backward", "2")])
        # What flowed into "2" in backward is d(sum)/d(out) = ones, not an empty hash.
        self.assertEqual(entries[3]["input_xxh3"], xxhash.xxh3_128_hexdigest(torch.ones(2, 3, 1).numpy().tobytes()))
        h = torch.relu(m[0](x)).detach()
        self.assertEqual(entries[3]["output"], lockstep.tensor_stats(torch.ones(2, 3, 1) @ m[2].weight.detach()))
        self.assertEqual(entries[2]["input_xxh3"], lockstep.tensor_stats(h)["xxh3_128"])

    def test_attention_with_parameters_of_its_own_is_traced_by_default(self):
        class Block(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.attn = torch.nn.MultiheadAttention(4, 2)  # its out_proj is never called as a module
                self.head = torch.nn.Linear(4, 1)

            def forward(self, a):
                return self.head(self.attn(a, a, a, need_weights=False)[0])
        torch.manual_seed(0)
        m = Block()
        with lockstep.ModuleTracer(m, self.path, steps=1) as t:
            t.step(0)
            m(torch.randn(3, 2, 4, requires_grad=True)).sum().backward()
        with open(self.path) as f:
            entries = [json.loads(line) for line in f]
        self.assertEqual([(e["phase"], e["module"]) for e in entries],
                         [("forward", "attn"), ("forward", "head"), ("backward", "head"), ("backward", "attn")])

    def test_forgetting_step_is_warned_about(self):
        import contextlib
        import io
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            with lockstep.ModuleTracer(model(), self.path, steps=2):
                pass
        self.assertIn("step() was never called, so nothing was traced", err.getvalue())

    def test_ops_are_hashed_under_debug_mode_or_said_to_be_absent(self):
        # torch >= 2.10: every aten op of a traced step, in execution order,
        # with its module in forward, the tracer's own hashing left out; an
        # older torch writes one line saying why there are none.
        m = model()
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        x = torch.arange(8, dtype=torch.float32).reshape(2, 4) / 8
        first_output = xxhash.xxh3_128_hexdigest(m[0](x).detach().numpy().tobytes())

        def train(m, opt, path):
            with lockstep.ModuleTracer(m, path, steps=1, ops=True) as t:
                for s in range(2):
                    t.step(s)
                    m(x).sum().backward()
                    opt.step()
                    opt.zero_grad()
            with open(path) as f:
                return [json.loads(line) for line in f]
        lines = train(m, opt, self.path)
        ops = [e for e in lines if "op" in e]
        try:
            from torch.utils._debug_mode import DebugMode
            has_hashes = hasattr(DebugMode, "log_tensor_hashes")
        except ImportError:
            has_hashes = False
        if not has_hashes:
            self.assertEqual(ops, [])
            self.assertEqual(lines[0], {"ops_not_traced": "torch %s has no DebugMode with tensor hashes "
                                                          "(torch.utils._debug_mode, torch >= 2.10)" % torch.__version__})
            return
        self.assertEqual([(o["step"], o["phase"], o["module"], o["op"]) for o in ops if o["phase"] == "forward"],
                         [(0, "forward", "0", "aten.t.default"), (0, "forward", "0", "aten.addmm.default"),
                          (0, "forward", "1", "aten.relu.default"), (0, "forward", "2", "aten.t.default"),
                          (0, "forward", "2", "aten.addmm.default"), (0, "forward", "", "aten.sum.default"),
                          # backward()'s seed gradient, made before the autograd engine runs
                          (0, "forward", "", "aten.ones_like.default")])
        self.assertEqual(ops[1]["output_xxh3"], first_output)
        phases = [o["phase"] for o in ops]
        self.assertEqual(phases, sorted(phases, key=["forward", "backward", "optimizer"].index))
        self.assertIn("aten.threshold_backward.default", [o["op"] for o in ops if o["phase"] == "backward"])
        self.assertEqual({o["module"] for o in ops if o["phase"] != "forward"}, {""})
        self.assertEqual([o["op"] for o in ops if o["phase"] == "optimizer"], ["aten.add_.Tensor"] * 4)
        self.assertEqual({o["step"] for o in ops}, {0})  # step 1 is past the traced steps
        # A repeat hashes the same bits.
        m2 = model()
        again = train(m2, torch.optim.SGD(m2.parameters(), lr=0.1), os.path.join(self.dir.name, "again.jsonl"))
        self.assertEqual([e for e in again if "op" in e], ops)

    def test_bad_arguments_are_refused(self):
        with self.assertRaisesRegex(ValueError, r"steps must be in \[0, 16\], got 17"):
            lockstep.ModuleTracer(model(), self.path, steps=17)
        with self.assertRaisesRegex(ValueError, "modules must be 'leaves' or 'all'"):
            lockstep.ModuleTracer(model(), self.path, modules="some")


if __name__ == "__main__":
    unittest.main(verbosity=2)
