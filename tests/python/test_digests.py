#!/usr/bin/env python3
"""The Python helper's per-step digests (python/lockstep/digests.py): the
manifest definition the C++ trainer shares (src/record/step_digests.h), a
model's parameters and gradients hashed as their own bytes, bfloat16
included, and DigestWriter's lines as lockstep reads them
(ingest/digests_jsonl.h).

    python3 test_digests.py

Needs numpy, xxhash and torch (exit 77, "skipped" for CTest, without them).
"""
import json
import os
import sys
import tempfile
import unittest

try:
    import numpy as np
    import torch
    import xxhash
except ImportError as e:
    print("skipped: %s" % e)
    sys.exit(77)

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "python")))
import lockstep  # noqa: E402
from lockstep import digests as d  # noqa: E402


def manifest(lines):
    return xxhash.xxh3_128_hexdigest("".join("%s %s\n" % kv for kv in lines).encode())


class DigestsTest(unittest.TestCase):
    def test_the_manifest_is_the_one_the_cpp_trainer_writes(self):
        # The same value as tests/record/step_digests_test.cpp's.
        self.assertEqual(d._manifest([("fc.weight", "000102030405060708090a0b0c0d0e0f"), ("fc.bias", "none")]),
                         "044ea6ca1183910f8dc85ab1198c93d9")

    def test_parameters_and_gradients_are_hashed_as_their_bytes(self):
        torch.manual_seed(0)
        m = torch.nn.Linear(3, 2)
        got = lockstep.step_digests(m)
        raw = [(n, xxhash.xxh3_128_hexdigest(p.detach().numpy().tobytes())) for n, p in m.named_parameters()]
        self.assertEqual(got["params"], manifest(raw))
        self.assertEqual(got["grads"], manifest([("weight", "none"), ("bias", "none")]))
        m(torch.ones(4, 3)).sum().backward()
        got = lockstep.step_digests(m)
        grads = [(n, xxhash.xxh3_128_hexdigest(p.grad.numpy().tobytes())) for n, p in m.named_parameters()]
        self.assertEqual(got["grads"], manifest(grads))
        # One ulp of one weight moves the digest.
        with torch.no_grad():
            w = m.weight.view(-1)
            w[0] = torch.from_numpy(np.nextafter(w[:1].numpy(), np.float32(np.inf)))
        self.assertNotEqual(lockstep.step_digests(m)["params"], got["params"])

    def test_bfloat16_parameters_are_hashed_as_their_16_bit_patterns(self):
        m = torch.nn.Linear(2, 2).to(torch.bfloat16)
        got = lockstep.step_digests(m)["params"]
        raw = [(n, xxhash.xxh3_128_hexdigest(p.detach().view(torch.int16).numpy().tobytes()))
               for n, p in m.named_parameters()]
        self.assertEqual(got, manifest(raw))

    def test_the_writer_writes_one_line_per_step_and_refuses_a_bad_step(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, lockstep.DIGESTS_FILE)
            m = torch.nn.Linear(2, 1)
            with lockstep.DigestWriter(path) as w:
                w.write(0, m)
                w.write(1, m)
                with self.assertRaises(TypeError):
                    w.write(-1, m)
                with self.assertRaises(TypeError):
                    w.write(True, m)
            with open(path) as f:
                lines = [json.loads(line) for line in f]
            self.assertEqual([line["step"] for line in lines], [0, 1])
            self.assertEqual(sorted(lines[0]), ["grads", "params", "step"])
            self.assertEqual(lines[0]["params"], lockstep.step_digests(m)["params"])
        with self.assertRaises(TypeError):
            lockstep.step_digests(object())


if __name__ == "__main__":
    unittest.main()
