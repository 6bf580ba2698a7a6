#!/usr/bin/env python3
"""The data-only pass's planted change (python/lockstep/data_perturb.py).

perturb_sample's rules with exact values (the first finite float one ULP
towards +inf in every float dtype, else the first integer's lowest bit;
containers rebuilt, never changed in place); install() on real DataLoaders
with 0 and 2 workers, forked and spawned: exactly the first sample of the
first batch moves, once per process; what cannot be perturbed says why;
and the contract's side: LOCKSTEP_PERTURB=data in rank 0's data-only pass
writes "perturbed" into lockstep-trainer.json, and nowhere else.

    python3 test_data_perturb.py

Needs numpy and xxhash (exit 77 without them); the DataLoader tests need
torch and are skipped without it.
"""
import collections
import json
import math
import os
import sys
import tempfile
import unittest

try:
    import numpy as np
    import xxhash  # noqa: F401
except ImportError as e:
    print("skipped: %s" % e)
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_contract import HAVE_TORCH, PYTHON_DIR, needs_torch, protocol_env, run_snippet  # noqa: E402

sys.path.insert(0, PYTHON_DIR)
from lockstep import data_perturb  # noqa: E402

if HAVE_TORCH:
    import torch


class PerturbSample(unittest.TestCase):
    def test_the_first_finite_float_moves_one_ulp_towards_plus_infinity(self):
        a = np.array([np.nan, -1.0, 2.0], dtype=np.float32)
        out = data_perturb.perturb_sample((a, 3))
        self.assertEqual(out[0][1], np.float32(-0.99999994))
        self.assertTrue(np.isnan(out[0][0]))
        self.assertEqual(out[0][2], 2.0)
        self.assertEqual(out[1], 3)
        self.assertEqual(a[1], -1.0)  # never in place
        self.assertEqual(data_perturb.perturb_sample(1.0), math.nextafter(1.0, math.inf))
        self.assertEqual(data_perturb.perturb_sample(np.float16(1.0)), np.float16(1.0009766))

    def test_without_a_float_the_first_integer_flips_its_lowest_bit(self):
        out = data_perturb.perturb_sample({"ids": np.array([6, 9]), "label": 4})
        self.assertEqual(list(out), ["ids", "label"])
        self.assertEqual(out["ids"].tolist(), [7, 9])
        self.assertEqual(data_perturb.perturb_sample(("text", 5)), ("text", 4))
        self.assertIs(data_perturb.perturb_sample(True), False)

    def test_a_namedtuple_keeps_its_type(self):
        Pair = collections.namedtuple("Pair", "x y")
        out = data_perturb.perturb_sample(Pair(np.array([0.5]), 1))
        self.assertIsInstance(out, Pair)
        self.assertEqual(out.x[0], math.nextafter(0.5, math.inf))

    def test_what_moved_is_said_with_its_place_in_the_sample(self):
        _, what = data_perturb.perturb_sample_saying({"ids": np.array([6, 9]), "x": np.array([[0.0, 1.0]])})
        self.assertEqual(what, "sample['x'], a float64 array of shape [1, 2]: its element 0 one ULP towards +inf")
        _, what = data_perturb.perturb_sample_saying(("text", np.array([6, 9])))
        self.assertEqual(what, "sample[1], an int64 array of shape [2] (no float in the sample): its element 0's "
                         "lowest bit flipped")

    def test_a_sample_without_a_number_is_refused_naming_its_type(self):
        with self.assertRaisesRegex(ValueError, r"holds no number to move \(a str\)"):
            data_perturb.perturb_sample("abc")

    @needs_torch
    def test_tensors_of_every_float_dtype_move_by_their_bits(self):
        for dtype, bits_dtype in ((torch.float32, torch.int32), (torch.float64, torch.int64),
                                  (torch.float16, torch.int16), (torch.bfloat16, torch.int16)):
            t = torch.tensor([-2.0, 3.0], dtype=dtype)
            out = data_perturb.perturb_sample([t])[0]
            self.assertEqual(int(out.view(bits_dtype)[0]), int(t.view(bits_dtype)[0]) - 1, dtype)
            self.assertGreater(float(out[0]), -2.0)
            self.assertEqual(float(t[0]), -2.0)
        z = data_perturb.perturb_sample(torch.tensor([-0.0]))
        self.assertEqual(int(z.view(torch.int32)[0]), 1)  # the smallest positive subnormal
        self.assertEqual(data_perturb.perturb_sample(torch.tensor([[4, 8]])).tolist(), [[5, 8]])


if HAVE_TORCH:
    class Table(torch.utils.data.Dataset):
        def __init__(self):
            self.x = torch.linspace(-1, 1, 48).reshape(12, 4)

        def __len__(self):
            return 12

        def __getitem__(self, i):
            return self.x[i], int(i) % 3, i

    class Batched(Table):
        def __getitems__(self, indices):
            return [Table.__getitem__(self, i) for i in indices]


@needs_torch
class Install(unittest.TestCase):
    def loaders(self, workers, context=None):
        def make():
            g = torch.Generator()
            g.manual_seed(7)
            return torch.utils.data.DataLoader(Table(), batch_size=4, shuffle=True, generator=g, num_workers=workers,
                                               multiprocessing_context=context)
        return make(), make()

    def check_only_the_first_sample_moves(self, workers, context=None):
        plain, moved = self.loaders(workers, context)
        marks = []
        self.assertEqual(data_perturb.install(moved, lambda i, t: marks.append((i, t))), "")
        want, got = list(plain), list(moved)
        first = int(want[0][2][0])
        self.assertEqual(marks, [(first, "")])
        self.assertEqual(int(got[0][2][0]), first)
        x_want, x_got = want[0][0][0], got[0][0][0]
        self.assertEqual(float(x_got[0]), float(torch.nextafter(x_want[0], torch.tensor(math.inf))))
        self.assertTrue(torch.equal(x_got[1:], x_want[1:]))
        self.assertTrue(torch.equal(got[0][0][1:], want[0][0][1:]))
        self.assertTrue(torch.equal(got[0][1], want[0][1]))
        for k in range(1, len(want)):
            self.assertTrue(torch.equal(got[k][0], want[k][0]), k)
        list(moved)  # once per process: the next epoch marks nothing
        self.assertEqual(marks, [(first, "")])

    def test_no_workers(self):
        self.check_only_the_first_sample_moves(0)

    def test_two_forked_workers(self):
        self.check_only_the_first_sample_moves(2, "fork")

    def test_two_spawned_workers_get_the_perturbing_dataset_pickled(self):
        self.check_only_the_first_sample_moves(2, "spawn")

    def test_batched_fetch_perturbs_the_marked_index_only(self):
        ds = Batched()
        loader = torch.utils.data.DataLoader(ds, batch_size=4)
        self.assertEqual(data_perturb.install(loader, lambda i, t: None), "")
        out = ds.__getitems__([data_perturb.PerturbedIndex(2), 3])
        self.assertEqual(float(out[0][0][0]), float(torch.nextafter(ds.x[2][0], torch.tensor(math.inf))))
        self.assertTrue(torch.equal(out[1][0], ds.x[3]))

    def test_an_iterable_dataset_says_why_nothing_moves(self):
        class Stream(torch.utils.data.IterableDataset):
            def __iter__(self):
                return iter(range(3))
        why = data_perturb.install(torch.utils.data.DataLoader(Stream()), lambda i, t: None)
        self.assertEqual(why, "nothing: an IterableDataset has no sample index to perturb")

    def test_a_sampler_of_keys_says_so(self):
        marks = []

        class Keys(torch.utils.data.Sampler):
            def __init__(self):
                pass

            def __iter__(self):
                return iter(["a", "b"])

            def __len__(self):
                return 2

        class Dict(torch.utils.data.Dataset):
            def __getitem__(self, k):
                return torch.zeros(1)

        loader = torch.utils.data.DataLoader(Dict(), sampler=Keys(), batch_size=None)
        self.assertEqual(data_perturb.install(loader, lambda i, t: marks.append((i, t))), "")
        self.assertEqual(len(list(loader)), 2)
        self.assertEqual(marks, [(None, "nothing: the loader's sampler yields str, not integer indices")])

    def test_a_dataset_handed_whole_batches_of_indices_says_so(self):
        marks = []

        class Batches(torch.utils.data.Dataset):
            def __getitem__(self, indices):
                return torch.zeros(len(indices))

            def __len__(self):
                return 8

        ds = Batches()
        sampler = torch.utils.data.BatchSampler(torch.utils.data.SequentialSampler(range(8)), 4, False)
        loader = torch.utils.data.DataLoader(ds, sampler=sampler, batch_size=None)
        self.assertEqual(data_perturb.install(loader, lambda i, t: marks.append((i, t))), "")
        self.assertEqual([b.tolist() for b in loader], [[0.0] * 4] * 2)
        self.assertEqual(marks, [(None, "nothing: the dataset is handed whole batches of indices (lists of int, "
                                        "batch_size=None): no one sample to move")])

    def test_a_sample_without_a_number_is_handed_on_as_it_is(self):
        class Words(torch.utils.data.Dataset):
            def __getitem__(self, i):
                return "w%d" % i

            def __len__(self):
                return 4

        loader = torch.utils.data.DataLoader(Words(), batch_size=2)
        self.assertEqual(data_perturb.install(loader, lambda i, t: None), "")
        self.assertEqual(list(loader), [["w0", "w1"], ["w2", "w3"]])


@needs_torch
class Contract(unittest.TestCase):
    SNIPPET = """
        import json, torch, lockstep
        ctx = lockstep.apply_contract()
        ds = torch.utils.data.TensorDataset(torch.arange(8.0).reshape(8, 1))
        loader = ctx.register_loader(torch.utils.data.DataLoader(ds, batch_size=2, shuffle=True,
                                                                 generator=ctx.generator))
        first = [b[0] for b in loader][0]
        ctx.write_record()
        print(json.dumps(first[:, 0].tolist()))
    """

    def record(self, out):
        with open(os.path.join(out, "lockstep-trainer.json"), encoding="utf-8") as f:
            return json.load(f)

    def test_rank_zeros_data_pass_moves_its_first_sample_and_says_which(self):
        with tempfile.TemporaryDirectory() as out:
            plain, _ = run_snippet(self.SNIPPET, protocol_env(out, LOCKSTEP_PASS="data"))
            self.assertNotIn("perturbed", self.record(out))
            moved, _ = run_snippet(self.SNIPPET, protocol_env(out, LOCKSTEP_PASS="data", LOCKSTEP_PERTURB="data"))
            self.assertEqual(moved[0], float(np.nextafter(np.float32(plain[0]), np.float32(np.inf))))
            self.assertEqual(moved[1:], plain[1:])
            said = self.record(out)["perturbed"]
            self.assertEqual(said, "dataset index %d (the first sample of the data-only pass's first batch): "
                             "sample[0], a float32 tensor of shape [1]: its element 0 one ULP towards +inf"
                             % int(plain[0]))

    def test_a_sample_without_a_number_moves_nothing_and_says_so(self):
        snippet = """
            import json, torch, lockstep
            ctx = lockstep.apply_contract()
            class Words(torch.utils.data.Dataset):
                def __getitem__(self, i):
                    return "w%d" % i
                def __len__(self):
                    return 4
            loader = ctx.register_loader(torch.utils.data.DataLoader(Words(), batch_size=2))
            print(json.dumps([list(b) for b in loader]))
        """
        with tempfile.TemporaryDirectory() as out:
            batches, _ = run_snippet(snippet, protocol_env(out, LOCKSTEP_PASS="data", LOCKSTEP_PERTURB="data"))
            self.assertEqual(batches, [["w0", "w1"], ["w2", "w3"]])
            self.assertEqual(self.record(out)["perturbed"], "nothing: the sample holds no number to move (a Python "
                             "str) (dataset index 0 (the first sample of the data-only pass's first batch))")

    def test_the_training_pass_and_other_ranks_are_untouched(self):
        with tempfile.TemporaryDirectory() as out:
            plain, _ = run_snippet(self.SNIPPET, protocol_env(out))
            train, _ = run_snippet(self.SNIPPET, protocol_env(out, LOCKSTEP_PERTURB="data"))
            self.assertEqual(train, plain)
            self.assertNotIn("perturbed", self.record(out))
            run_snippet(self.SNIPPET, protocol_env(out, LOCKSTEP_PASS="data", LOCKSTEP_PERTURB="data",
                                                             RANK="1", WORLD_SIZE="2"))
            self.assertNotIn("perturbed", self.record(out))

    def test_a_malformed_value_is_exit_2_naming_the_variable(self):
        with tempfile.TemporaryDirectory() as out:
            _, err = run_snippet(self.SNIPPET, protocol_env(out, LOCKSTEP_PERTURB="sample"), expect_rc=2)
            self.assertIn("LOCKSTEP_PERTURB must be parameter, data or unset, got 'sample'", err)


if __name__ == "__main__":
    unittest.main(verbosity=2)
