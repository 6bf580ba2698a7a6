#!/usr/bin/env python3
"""Parity of the Python batch probes (python/lockstep) with the C++ ones.

Feeds identical tensors to the C++ implementation (tensor_stats_tool, built
from tests/python/tensor_stats_tool.cpp on lockstep_tensor_stats) and to
lockstep.probe / ProbeWriter, and requires identical probes bit for bit:
every hash and count equal, every double with the same bit pattern (NaN
and +/-0.0 included). Cases: float32, float64, float16, uint8, int8, int16,
int32, int64, bool (and bfloat16 plus torch-tensor inputs when torch is
installed); empty and 0-d tensors; NaN/Inf at the start, end, in one lane,
everywhere; signed zeros; overflowing float64 sums; sizes around 8, 256
(the hash chunk of float32) and 128 (of float64), up to 100003 elements.

    python3 test_probe_parity.py path/to/tensor_stats_tool

Needs numpy and xxhash (exit 77, "skipped" for CTest, without them) and
PYTHONPATH pointing at the repository's python/ folder.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest

try:
    import numpy as np
    import xxhash  # noqa: F401  (lockstep needs it)
except ImportError as e:
    print("skipped: %s" % e)
    sys.exit(77)

import lockstep

TOOL = None

SIZES = [0, 1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 127, 128, 129, 255, 256, 257, 511, 512, 513, 1025, 2048, 4097]
BIG = 100003


def _shape_for(n, rng):
    """A shape with n elements: 1-d, or 2-d/4-d when n factors."""
    choices = [(n,)]
    for a in (2, 3, 4, 8, 32):
        if n % a == 0 and n:
            choices.append((a, n // a))
    if n == 2048:
        choices.append((32, 1, 8, 8))
    if n == 0:
        choices += [(0, 3), (4, 0, 2)]
    return choices[rng.integers(len(choices))]


def _float_variants(n, dtype, rng):
    """(name, array) pairs of float data of n elements."""
    f = np.dtype(dtype)
    info = np.finfo(f)
    out = [("randn", (rng.standard_normal(n) * 3 + 0.25).astype(f)),
           ("uniform01", rng.random(n).astype(f)),
           ("const", np.full(n, 0.1, dtype=f))]
    if n == 0:
        return out
    v = rng.standard_normal(n).astype(f)
    v[0] = np.nan
    out.append(("nan_first", v))
    v = rng.standard_normal(n).astype(f)
    v[-1] = np.inf
    out.append(("inf_last", v))
    v = rng.standard_normal(n).astype(f)
    v[::8] = np.nan  # every element of lane 0
    out.append(("nan_lane0", v))
    v = rng.standard_normal(n).astype(f)
    m = rng.random(n)
    v[m < 0.1] = np.nan
    v[(m >= 0.1) & (m < 0.15)] = np.inf
    v[(m >= 0.15) & (m < 0.2)] = -np.inf
    out.append(("nonfinite_anywhere", v))
    out.append(("all_nan", np.full(n, np.nan, dtype=f)))
    out.append(("all_neginf", np.full(n, -np.inf, dtype=f)))
    out.append(("neg_zeros", np.full(n, -0.0, dtype=f)))
    z = np.where(rng.random(n) < 0.5, -0.0, 0.0).astype(f)
    out.append(("signed_zeros", z))
    z2 = z.copy()
    z2[rng.random(n) < 0.3] = np.nan
    out.append(("signed_zeros_nan", z2))
    z3 = np.where(rng.random(n) < 0.5, z, rng.random(n).astype(f))  # zeros are the min
    out.append(("zeros_and_positives", z3.astype(f)))
    z4 = np.where(rng.random(n) < 0.5, z, -rng.random(n).astype(f))  # zeros are the max
    out.append(("zeros_and_negatives", z4.astype(f)))
    out.append(("subnormal", (rng.random(n) * info.tiny).astype(f)))
    out.append(("huge", (rng.standard_normal(n) * info.max / 4).astype(f)))
    if f == np.float64:
        out.append(("overflow_pos", np.full(n, info.max, dtype=f)))
        v = np.where(np.arange(n) % 16 < 8, info.max, -info.max)  # lanes +inf and -inf -> nan sum
        out.append(("overflow_mixed", v.astype(f)))
    return out


def _int_variants(n, dtype, rng):
    d = np.dtype(dtype)
    if d == np.bool_:
        return [("random", rng.random(n) < 0.5), ("all_true", np.ones(n, dtype=bool))]
    info = np.iinfo(d)
    out = [("full_range", rng.integers(info.min, info.max, size=n, dtype=d, endpoint=True)),
           ("small", rng.integers(max(info.min, -3), 10, size=n, dtype=d)),
           ("const_max", np.full(n, info.max, dtype=d))]
    if d == np.int64:  # odd values above 2^53 round to the nearest float64
        out.append(("above_2p53", (np.int64(2**53) + rng.integers(0, 1000, size=n) * 2 + 1).astype(d)))
        out.append(("near_min", np.full(n, info.min, dtype=d) + rng.integers(0, 3, size=n)))
    return out


def build_cases():
    """[(name, inputs ndarray, labels ndarray, indices ndarray, batch)]."""
    rng = np.random.default_rng(20260425)
    cases = []
    for n in SIZES + [BIG]:
        for dtype in ("float32", "float64", "float16"):
            for vname, v in _float_variants(n, dtype, rng):
                if n == BIG and vname not in ("randn", "nonfinite_anywhere", "signed_zeros"):
                    continue
                cases.append(("%s/%s/%d" % (dtype, vname, n), v.reshape(_shape_for(n, rng))))
        for dtype in ("uint8", "int8", "int16", "int32", "int64", "bool"):
            for vname, v in _int_variants(n, dtype, rng):
                if n == BIG and vname != "full_range":
                    continue
                cases.append(("%s/%s/%d" % (dtype, vname, n), v.reshape(_shape_for(n, rng))))
    cases.append(("float32/0-d", np.array(1.5, dtype=np.float32)))
    cases.append(("int64/0-d", np.array(-7, dtype=np.int64)))
    cases.append(("float64/0-d-nan", np.array(np.nan)))
    out = []
    for k, (name, inputs) in enumerate(cases):
        m = int(rng.integers(0, 40))
        labels = rng.integers(0, 10, size=m, dtype=np.int64)
        indices = rng.integers(-2**63, 2**63 - 1, size=m, dtype=np.int64, endpoint=True)
        if k % 3 == 0:
            indices = rng.permutation(1797)[:m].astype(np.int64)
        out.append((name, inputs, labels, indices, k))
    return out


def _tensor_bytes(dtype_name, shape, raw):
    header = [dtype_name, str(len(shape))] + [str(d) for d in shape] + [str(len(raw))]
    return (" ".join(header) + "\n").encode() + raw


def encode(cases, bfloat16_bits=None):
    """The tool's stdin: see tests/python/tensor_stats_tool.cpp."""
    chunks = []
    for name, inputs, labels, indices, batch in cases:
        chunks.append(b"case %d %d\n" % (batch, indices.size))
        chunks.append(np.ascontiguousarray(indices, dtype="<i8").tobytes())
        for a in (inputs, labels):
            if isinstance(a, tuple):  # ("bfloat16", shape, raw uint16 array)
                chunks.append(_tensor_bytes(a[0], list(a[1]), a[2].tobytes()))
            else:
                chunks.append(_tensor_bytes(lockstep.probes._NUMPY_DTYPES[a.dtype], list(a.shape),
                                            np.ascontiguousarray(a).tobytes()))
    return b"".join(chunks)


def run_tool(payload):
    r = subprocess.run([TOOL], input=payload, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    if r.returncode != 0:
        raise AssertionError("tensor_stats_tool failed (%d): %s" % (r.returncode, r.stderr.decode()))
    return r.stdout.decode().splitlines()


def _bits(v):
    return struct.pack("<d", v).hex()


def diff(a, b, path=""):
    """First difference between two parsed probes (floats by bit pattern), or None."""
    if isinstance(a, dict) and isinstance(b, dict):
        if sorted(a) != sorted(b):
            return "%s: keys %s vs %s" % (path, sorted(a), sorted(b))
        for k in sorted(a):
            d = diff(a[k], b[k], path + "." + k)
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return "%s: %r vs %r" % (path, a, b)
        for i, (x, y) in enumerate(zip(a, b)):
            d = diff(x, y, "%s[%d]" % (path, i))
            if d:
                return d
        return None
    if isinstance(a, float) or isinstance(b, float):
        if type(a) is not type(b) or _bits(a) != _bits(b):
            return "%s: %r (%s) vs %r (%s)" % (path, a, _bits(a) if isinstance(a, float) else type(a).__name__,
                                              b, _bits(b) if isinstance(b, float) else type(b).__name__)
        return None
    if type(a) is not type(b) or a != b:
        return "%s: %r vs %r" % (path, a, b)
    return None


class ProbeParity(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with np.errstate(over="ignore", invalid="ignore"):
            cls.cases = build_cases()
        cls.cpp = run_tool(encode(cls.cases))

    def test_case_count(self):
        self.assertEqual(len(self.cpp), len(self.cases))
        self.assertGreater(len(self.cases), 900)

    def test_probe_bits_equal(self):
        text_equal = 0
        for (name, inputs, labels, indices, batch), line in zip(self.cases, self.cpp):
            py = lockstep.probe(inputs, labels, indices, batch=batch)
            d = diff(json.loads(line), json.loads(json.dumps(py)))
            self.assertIsNone(d, "case %s (batch %d): C++ vs Python differ at %s" % (name, batch, d))
            text_equal += lockstep.writers._json_line(py) == line
        # nlohmann writes doubles with Grisu2 and exponents from 1e16 on;
        # Python with the shortest repr: the text may differ, never the value.
        print("\n%d/%d probe lines also identical as text" % (text_equal, len(self.cases)), file=sys.stderr)

    def test_probe_writer_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "probes.jsonl")
            subset = [c for c in self.cases if c[0].startswith("float32/")][:50]
            with lockstep.ProbeWriter(path, first_batch=subset[0][4]) as w:
                for name, inputs, labels, indices, batch in subset:
                    w.batch = batch  # the writer counts; here the cases' own indices
                    w.write(inputs, labels, indices)
            with open(path) as f:
                lines = f.read().splitlines()
        by_batch = {c[4]: line for c, line in zip(self.cases, self.cpp)}
        self.assertEqual(len(lines), len(subset))
        for line in lines:
            p = json.loads(line)
            self.assertIsNone(diff(json.loads(by_batch[p["batch"]]), p), line)

    def test_counts_and_sign_rules(self):
        # Independent of the C++: the definition's edge cases, by hand.
        s = lockstep.tensor_stats(np.array([-0.0, 0.0, 0.0, -0.0] * 4, dtype=np.float32))
        self.assertEqual(_bits(s["min"]), _bits(-0.0))  # lane 0 sees -0.0 first, and lane 0 wins ties
        self.assertEqual(_bits(s["max"]), _bits(-0.0))
        self.assertEqual(_bits(s["sum"]), _bits(0.0))   # lanes start at +0.0
        s = lockstep.tensor_stats(np.array([np.nan, np.inf, -np.inf], dtype=np.float64))
        self.assertEqual((s["nan_count"], s["inf_count"], s["sum"], s["mean"], s["std"], s["min"], s["max"]),
                         (1, 2, 0.0, 0.0, 0.0, 0.0, 0.0))
        s = lockstep.tensor_stats(np.zeros((0, 5), dtype=np.uint8))
        self.assertEqual((s["shape"], s["xxh3_128"]), ([0, 5], "99aa06d3014798d86001c324468d497f"))

    def test_torch_inputs_match(self):
        try:
            import torch
        except ImportError:
            self.skipTest("torch not installed")
        checked = 0
        for (name, inputs, labels, indices, batch), line in zip(self.cases, self.cpp):
            if inputs.dtype == np.float16 and batch % 2:
                continue
            t = torch.from_numpy(inputs.copy())
            if t.dim() == 2 and t.shape[0] > 1 and t.shape[1] > 1:
                t = t.t().contiguous().t()  # a non-contiguous view of the same values
                self.assertFalse(t.is_contiguous())
            py = lockstep.probe(t, torch.from_numpy(labels), torch.from_numpy(indices), batch=batch)
            d = diff(json.loads(line), json.loads(json.dumps(py)))
            self.assertIsNone(d, "case %s as torch tensors: %s" % (name, d))
            checked += 1
        self.assertGreater(checked, 800)

    def test_bfloat16(self):
        try:
            import torch
        except ImportError:
            self.skipTest("torch not installed")
        rng = np.random.default_rng(7)
        cases, tensors = [], []
        for k, n in enumerate([0, 1, 7, 8, 9, 255, 256, 257, 2048]):
            x = torch.from_numpy(rng.standard_normal(n).astype(np.float32)).to(torch.bfloat16)
            if n > 4:
                x[3] = float("nan")
                x[n - 1] = float("-inf")
                x[1] = -0.0
            bits = x.view(torch.int16).numpy().view(np.uint16)
            labels = np.arange(n % 5, dtype=np.int64)
            cases.append(("bf16/%d" % n, ("bfloat16", tuple(x.shape), bits), labels, labels, k))
            tensors.append(x)
        lines = run_tool(encode(cases))
        for (name, _, labels, indices, batch), x, line in zip(cases, tensors, lines):
            py = lockstep.probe(x, labels, indices, batch=batch)
            d = diff(json.loads(line), json.loads(json.dumps(py)))
            self.assertIsNone(d, "case %s: %s" % (name, d))

    def test_small_batch_is_fast(self):
        import time
        x = np.random.default_rng(1).standard_normal((32, 64)).astype(np.float32)
        lockstep.tensor_stats(x)
        t0 = time.perf_counter()
        for _ in range(100):
            lockstep.tensor_stats(x)
        per_call = (time.perf_counter() - t0) / 100
        print("\ntensor_stats of a 32x64 float32 batch: %.0f us" % (per_call * 1e6), file=sys.stderr)
        self.assertLess(per_call, 0.05)


if __name__ == "__main__":
    if len(sys.argv) < 2 or not os.access(sys.argv[1], os.X_OK):
        print("usage: test_probe_parity.py path/to/tensor_stats_tool [unittest args]", file=sys.stderr)
        sys.exit(2)
    TOOL = sys.argv.pop(1)
    unittest.main(verbosity=2)
