#!/usr/bin/env python3
"""The determinism contract of the Python trainer helper (python/lockstep).

apply_contract in strict and default mode (every flag read back, exact
strings), lockstep-trainer.json (schema, contract, fingerprint), the
defaults and the stderr note without LOCKSTEP_* variables, bad values
(exit 2 naming the variable) and a nondeterministic CUBLAS_WORKSPACE_CONFIG
(exit 3), the sampler generator and the global seeding, worker_init_fn in
real DataLoader workers, a numpy-only trainer (torch absent), and the
metrics and probe writers. Each apply_contract runs in a fresh interpreter
(torch's flags and thread pools are per process), as lockstep runs trainers.

    python3 test_contract.py

Needs numpy and xxhash (exit 77, "skipped" for CTest, without them); the
tests that need torch are skipped when it is not installed.
"""
import json
import math
import os
import pathlib
import subprocess
import sys
import tempfile
import textwrap
import unittest
from unittest import mock

try:
    import numpy as np  # noqa: F401
    import xxhash  # noqa: F401
except ImportError as e:
    print("skipped: %s" % e)
    sys.exit(77)

PYTHON_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "python"))
sys.path.insert(0, PYTHON_DIR)
import lockstep  # noqa: E402

try:
    import importlib.util

    HAVE_TORCH = importlib.util.find_spec("torch") is not None
except ImportError:
    HAVE_TORCH = False
needs_torch = unittest.skipUnless(HAVE_TORCH, "torch not installed")

CONTRACT_KEYS = ["mode", "cublas_workspace_config", "deterministic_algorithms", "deterministic_algorithms_warn_only",
                 "cudnn_deterministic", "cudnn_benchmark", "allow_tf32_cublas", "allow_tf32_cudnn",
                 "float32_matmul_precision", "fill_uninitialized_memory", "intra_op_threads", "inter_op_threads"]


def protocol_env(out, **overrides):
    """The environment lockstep hands a trainer (docs: python/lockstep)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCKSTEP_") and k != "CUBLAS_WORKSPACE_CONFIG"}
    env.update({
        "LOCKSTEP_SEED": "20260425", "LOCKSTEP_OUT": out, "LOCKSTEP_DETERMINISM": "strict",
        "LOCKSTEP_INTRA_OP_THREADS": "2", "LOCKSTEP_INTER_OP_THREADS": "1", "LOCKSTEP_DEVICE": "cpu",
        "LOCKSTEP_STEPS": "10", "LOCKSTEP_PASS": "train", "CUBLAS_WORKSPACE_CONFIG": ":4096:8",
        "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2", "PYTHONHASHSEED": "0", "TZ": "UTC", "LC_ALL": "C.UTF-8",
        "PYTHONPATH": PYTHON_DIR,
    })
    for k, v in overrides.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


def run_snippet(code, env, cwd=None, expect_rc=0):
    """Runs `code` as a script file in a fresh interpreter; returns (the JSON
    its last stdout line holds, or None, stderr). A file, not `python -c`:
    under the forkserver and spawn start methods (Python 3.14's default on
    Linux) DataLoader workers import __main__ from its path."""
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "snippet.py")
        with open(script, "w", encoding="utf-8") as f:
            f.write(textwrap.dedent(code))
        r = subprocess.run([sys.executable, script], env=env, cwd=cwd,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
    if r.returncode != expect_rc:
        raise AssertionError("snippet exited %d, expected %d\nstdout:\n%s\nstderr:\n%s"
                             % (r.returncode, expect_rc, r.stdout, r.stderr))
    lines = r.stdout.strip().splitlines()
    return (json.loads(lines[-1]) if lines else None), r.stderr


READ_TORCH_STATE = """
import json, os, torch
def torch_state():
    fill = None
    try:
        import torch.utils.deterministic as fill
    except ImportError:
        pass
    b = lambda v: "true" if v else "false"
    return {"deterministic_algorithms": b(torch.are_deterministic_algorithms_enabled()),
            "deterministic_algorithms_warn_only": b(torch.is_deterministic_algorithms_warn_only_enabled()),
            "cudnn_deterministic": b(torch.backends.cudnn.deterministic),
            "cudnn_benchmark": b(torch.backends.cudnn.benchmark),
            "allow_tf32_cublas": b(torch.backends.cuda.matmul.allow_tf32),
            "allow_tf32_cudnn": b(torch.backends.cudnn.allow_tf32),
            "float32_matmul_precision": torch.get_float32_matmul_precision(),
            "fill": b(fill.fill_uninitialized_memory) if fill else None,
            "intra_op_threads": str(torch.get_num_threads()),
            "inter_op_threads": str(torch.get_num_interop_threads()),
            "cublas_env": os.environ.get("CUBLAS_WORKSPACE_CONFIG")}
"""


class ContractTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = self._tmp.name
        self.out = os.path.join(self.tmp, "out")
        os.mkdir(self.out)

    def tearDown(self):
        self._tmp.cleanup()

    def record(self):
        with open(os.path.join(self.out, lockstep.TRAINER_FILE)) as f:
            return json.load(f)

    @needs_torch
    def test_strict_sets_and_reads_back_every_flag(self):
        code = READ_TORCH_STATE + """
import lockstep
ctx = lockstep.apply_contract()
print(json.dumps({"contract": ctx.contract, "torch": torch_state(), "seed": ctx.seed, "out": str(ctx.out),
                  "device": ctx.device, "steps": ctx.steps, "data_only": ctx.data_only, "mode": ctx.mode}))
"""
        got, err = run_snippet(code, protocol_env(self.out, CUBLAS_WORKSPACE_CONFIG=None))
        self.assertEqual(err, "")  # no note: every variable was set
        has_fill = got["torch"]["fill"] is not None
        expected = {
            "mode": "strict", "cublas_workspace_config": ":4096:8",
            "deterministic_algorithms": "true", "deterministic_algorithms_warn_only": "false",
            "cudnn_deterministic": "true", "cudnn_benchmark": "false",
            "allow_tf32_cublas": "false", "allow_tf32_cudnn": "false",
            "float32_matmul_precision": "highest",
            "fill_uninitialized_memory": "true" if has_fill
            else "unsupported (torch < 2.1: no torch.utils.deterministic)",
            "intra_op_threads": "2", "inter_op_threads": "1",
        }
        self.assertEqual(got["contract"], expected)
        self.assertEqual(list(got["contract"]), CONTRACT_KEYS)
        # What torch itself reports after the call agrees with the record.
        for k, v in got["torch"].items():
            if k in expected:
                self.assertEqual(v, expected[k], k)
        self.assertEqual(got["torch"]["cublas_env"], ":4096:8")  # set because it was unset
        self.assertEqual((got["seed"], got["out"], got["device"], got["steps"], got["data_only"], got["mode"]),
                         (20260425, self.out, "cpu", 10, False, "strict"))

        rec = self.record()
        self.assertEqual(list(rec), ["schema", "helper", "contract", "fingerprint"])
        self.assertEqual(rec["schema"], "lockstep.trainer/1")
        self.assertEqual(rec["helper"], {"version": lockstep.__version__,
                                         "path": str(pathlib.Path(lockstep.__file__).resolve().parent)})
        self.assertEqual(rec["contract"], expected)
        fp = rec["fingerprint"]
        for name, field in fp.items():
            self.assertEqual(sorted(field), ["relevant", "value"], name)
            self.assertIsInstance(field["value"], str, name)
            self.assertIsInstance(field["relevant"], bool, name)
        relevant = {k: v["relevant"] for k, v in fp.items()}
        for name in ("python.version", "python.torch", "python.torch.cuda", "python.torch.cudnn",
                     "python.torch.config_xxh3", "python.numpy"):
            self.assertTrue(relevant[name], name)
        for name in ("python.implementation", "python.executable", "loader.num_workers", "trainer.pass"):
            self.assertFalse(relevant[name], name)
        import platform

        self.assertEqual(fp["python.version"]["value"], platform.python_version())
        self.assertEqual(fp["python.numpy"]["value"], np.__version__)
        self.assertRegex(fp["python.torch.config_xxh3"]["value"], r"^[0-9a-f]{16}$")
        self.assertEqual(fp["loader.num_workers"]["value"], "(not registered)")
        self.assertEqual(fp["trainer.pass"]["value"], "train")
        self.assertEqual(fp["python.module.torch"]["value"], fp["python.torch"]["value"])
        packages = [k for k in fp if k.startswith("python.packages.")]
        self.assertTrue(packages)
        # Relevant exactly when imported: numpy and torch are, by now.
        self.assertTrue(fp["python.packages.numpy"]["relevant"])
        self.assertTrue(fp["python.packages.torch"]["relevant"])
        self.assertTrue(fp["python.packages.xxhash"]["relevant"])
        self.assertTrue(any(not fp[k]["relevant"] for k in packages))  # something installed, never imported
        self.assertTrue(all(k == k.lower() for k in packages))

    def test_a_distribution_without_record_is_relevant_when_its_module_is_imported(self):
        # Debian 13's and sid's python3-torch and python3-numpy ship dist-info
        # without RECORD or top_level.txt: packages_distributions() cannot map
        # them, so the distribution's own name is matched to the imported
        # top-level modules.
        site = os.path.join(self.tmp, "site")
        for name, version in (("plainmod", "1.0"), ("otherdist", "2.0"), ("lockstep", "0.1.0")):
            info = os.path.join(site, "%s-%s.dist-info" % (name, version))
            os.makedirs(info)
            with open(os.path.join(info, "METADATA"), "w") as f:
                f.write("Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version))
        os.makedirs(os.path.join(site, "plainmod"))
        open(os.path.join(site, "plainmod", "__init__.py"), "w").close()
        code = """
import json, sys
sys.path.insert(0, %r)
import plainmod, lockstep
fp = lockstep.stack_fingerprint()
print(json.dumps({k: fp[k] for k in ("python.packages.plainmod", "python.packages.otherdist",
                                       "python.packages.lockstep")}))
""" % site
        got, _ = run_snippet(code, protocol_env(self.out))
        # lockstep's own wheel, imported by every trainer, is the gate: never
        # a stack change (its helper's version is checked apart).
        self.assertEqual(got, {"python.packages.plainmod": {"value": "1.0", "relevant": True},
                               "python.packages.otherdist": {"value": "2.0", "relevant": False},
                               "python.packages.lockstep": {"value": "0.1.0", "relevant": False}})

    @needs_torch
    def test_keeps_a_deterministic_cublas_value_and_refuses_others(self):
        code = "import json, lockstep; print(json.dumps(lockstep.apply_contract().contract))"
        got, _ = run_snippet(code, protocol_env(self.out, CUBLAS_WORKSPACE_CONFIG=":16:8"))
        self.assertEqual(got["cublas_workspace_config"], ":16:8")
        _, err = run_snippet(code, protocol_env(self.out, CUBLAS_WORKSPACE_CONFIG=":0:0"), expect_rc=3)
        self.assertIn("CUBLAS_WORKSPACE_CONFIG=:0:0", err)
        env = protocol_env(self.out, CUBLAS_WORKSPACE_CONFIG=":0:0", LOCKSTEP_DETERMINISM="default")
        got, _ = run_snippet(code, env)
        self.assertEqual(got["cublas_workspace_config"], ":0:0")  # default mode records what it finds

    @needs_torch
    def test_default_mode_records_the_flags_as_found(self):
        code = READ_TORCH_STATE + """
import lockstep
before = torch_state()
ctx = lockstep.apply_contract()
print(json.dumps({"before": before, "after": torch_state(), "contract": ctx.contract}))
"""
        got, _ = run_snippet(code, protocol_env(self.out, LOCKSTEP_DETERMINISM="default",
                                                LOCKSTEP_INTRA_OP_THREADS="1", CUBLAS_WORKSPACE_CONFIG=None))
        c, before = got["contract"], got["before"]
        self.assertEqual(c["mode"], "default")
        self.assertEqual(c["cublas_workspace_config"], "(unset)")
        self.assertIsNone(got["after"]["cublas_env"])
        for k in ("deterministic_algorithms", "deterministic_algorithms_warn_only", "cudnn_deterministic",
                  "cudnn_benchmark", "allow_tf32_cublas", "allow_tf32_cudnn", "float32_matmul_precision"):
            self.assertEqual(c[k], before[k], k)
            self.assertEqual(got["after"][k], before[k], k)
        self.assertEqual(c["deterministic_algorithms"], "false")  # torch's default
        self.assertEqual((c["intra_op_threads"], c["inter_op_threads"]), ("1", "1"))  # threads pinned in both modes
        self.assertEqual(self.record()["contract"], c)

    @needs_torch
    def test_without_lockstep_uses_defaults_and_says_so_once(self):
        env = protocol_env(self.out)
        for k in list(env):
            if k.startswith("LOCKSTEP_"):
                del env[k]
        code = """
import json, lockstep
a = lockstep.apply_contract()
b = lockstep.apply_contract()
print(json.dumps({"seed": a.seed, "out": str(a.out), "mode": a.mode, "threads": [a.intra_op_threads,
                  a.inter_op_threads], "device": a.device, "steps": a.steps, "data_only": a.data_only,
                  "contract": a.contract, "same_out": str(b.out) == str(a.out)}))
"""
        got, err = run_snippet(code, env, cwd=self.tmp)
        expected_out = os.path.join(os.path.realpath(self.tmp), "lockstep-out")
        self.assertEqual(os.path.realpath(got["out"]), expected_out)
        self.assertTrue(os.path.isfile(os.path.join(expected_out, lockstep.TRAINER_FILE)))
        self.assertEqual((got["seed"], got["mode"], got["threads"], got["device"], got["steps"], got["data_only"]),
                         (0, "strict", [1, 1], "cpu", 10, False))
        self.assertEqual(got["contract"]["deterministic_algorithms"], "true")
        self.assertEqual(err.count("lockstep: not run by lockstep"), 1, err)
        self.assertIn("SEED=0, OUT=%s" % expected_out, err)

    def test_bad_values_exit_2_naming_the_variable(self):
        bad = [("LOCKSTEP_SEED", "abc"), ("LOCKSTEP_SEED", "-1"), ("LOCKSTEP_SEED", str(2**64)),
               ("LOCKSTEP_SEED", "1e3"), ("LOCKSTEP_SEED", " 1"), ("LOCKSTEP_DETERMINISM", "fast"),
               ("LOCKSTEP_INTRA_OP_THREADS", "0"), ("LOCKSTEP_INTER_OP_THREADS", "two"),
               ("LOCKSTEP_DEVICE", "mps"), ("LOCKSTEP_STEPS", "-3"), ("LOCKSTEP_PASS", "eval")]
        for name, value in bad:
            with self.subTest(name=name, value=value), \
                    mock.patch.dict(os.environ, protocol_env(self.out, **{name: value}), clear=True), \
                    mock.patch("sys.stderr") as stderr:
                with self.assertRaises(SystemExit) as cm:
                    lockstep.apply_contract()
                self.assertEqual(cm.exception.code, 2)
                self.assertIsInstance(cm.exception, lockstep.LockstepError)
                self.assertIn(name, str(cm.exception))
                self.assertIn(repr(value), str(cm.exception))
                printed = "".join(c.args[0] for c in stderr.write.call_args_list)
                self.assertIn(name, printed)
        # The largest seed is valid.
        env = protocol_env(self.out, LOCKSTEP_SEED=str(2**64 - 1))
        self.assertEqual(lockstep.contract._parse_env(env)["seed"], 2**64 - 1)

    def test_lr_scale_is_one_unless_planted_and_strict(self):
        self.assertEqual(lockstep.lr_scale({}), 1.0)
        self.assertEqual(lockstep.lr_scale({"LOCKSTEP_LR_SCALE": "1.001"}), 1.001)
        for value in ("0", "-1", "nan", "inf", "x", "1e400"):
            with self.subTest(value=value), mock.patch("sys.stderr"):
                with self.assertRaises(SystemExit) as cm:
                    lockstep.lr_scale({"LOCKSTEP_LR_SCALE": value})
                self.assertEqual(cm.exception.code, 2)
                self.assertIn("LOCKSTEP_LR_SCALE", str(cm.exception))

    @needs_torch
    def test_a_perturbed_repeat_makes_its_heap_hole_and_refuses_a_malformed_variation(self):
        # LOCKSTEP_VARY (check's second repeat): the hole is made with a
        # guard right above it, so it cannot merge back into the free heap.
        code = """
        import json, lockstep
        ctx = lockstep.apply_contract()
        import lockstep.contract as c
        print(json.dumps({"guards": len(c._hole_guard)}))
        """
        env = protocol_env(self.out, LOCKSTEP_VARY="allocator=70000,malloc-perturb=7,affinity=0,env-order,thread-warmup")
        result, _ = run_snippet(code, env)
        self.assertEqual(result, {"guards": 1})
        result, _ = run_snippet(code, protocol_env(self.out))
        self.assertEqual(result, {"guards": 0})
        for spec, message in [("allocator=100", "LOCKSTEP_VARY: allocator must be a byte count in [65536, 131071], got '100'"),
                              ("heap", "LOCKSTEP_VARY: unknown kind 'heap' (allocator, malloc-perturb, affinity, "
                                       "env-order, thread-warmup)"),
                              ("env-order,,thread-warmup", "LOCKSTEP_VARY: unknown kind '' (allocator, malloc-perturb, "
                                                           "affinity, env-order, thread-warmup)"),
                              ("allocator=70000,allocator=70000", "LOCKSTEP_VARY: allocator given twice"),
                              ("malloc-perturb=0", "LOCKSTEP_VARY: malloc-perturb must be a byte value in [1, 255], "
                                                   "got '0'"),
                              ("affinity=zzz", "LOCKSTEP_VARY: affinity must be CPU numbers joined by '+', got 'zzz'"),
                              ("env-order=x", "LOCKSTEP_VARY: env-order takes no value, got 'x'")]:
            with self.subTest(spec=spec):
                _, err = run_snippet("import lockstep; lockstep.apply_contract()",
                                     protocol_env(self.out, LOCKSTEP_VARY=spec), expect_rc=2)
                self.assertEqual(err.strip(), "lockstep: " + message)

    def test_bad_seed_in_a_trainer_process_exits_2(self):
        env = protocol_env(self.out, LOCKSTEP_SEED="abc")
        _, err = run_snippet("import lockstep; lockstep.apply_contract()", env, expect_rc=2)
        self.assertEqual(err.strip(), "lockstep: LOCKSTEP_SEED must be a decimal integer in [0, %d], got 'abc'"
                         % (2**64 - 1))

    @needs_torch
    def test_generator_and_global_seeding_are_reproducible(self):
        code = """
import json, os, random, numpy as np, torch, lockstep
def draws(ctx):
    return {"perm": torch.randperm(50, generator=ctx.generator).tolist(), "torch": torch.rand(3).tolist(),
            "numpy": np.random.rand(3).tolist(), "random": random.random(),
            "gen_seed": ctx.generator.initial_seed()}
a = draws(lockstep.apply_contract())
b = draws(lockstep.apply_contract())
os.environ["LOCKSTEP_SEED"] = "7"
c = draws(lockstep.apply_contract())
print(json.dumps([a, b, c]))
"""
        (a, b, c), _ = run_snippet(code, protocol_env(self.out))
        self.assertEqual(a, b)
        for k in ("perm", "torch", "numpy", "random"):
            self.assertNotEqual(a[k], c[k], k)
        self.assertEqual(a["gen_seed"], lockstep.derive_seed(20260425, "sampler"))
        self.assertEqual(sorted(a["perm"]), list(range(50)))

    @needs_torch
    def test_worker_init_fn_seeds_each_worker(self):
        code = """
import json, random, numpy as np, torch, lockstep

class Draws(torch.utils.data.Dataset):
    def __len__(self):
        return 8
    def __getitem__(self, i):
        info = torch.utils.data.get_worker_info()
        return {"i": i, "worker": info.id, "worker_seed": info.seed, "numpy": int(np.random.randint(2**31)),
                "random": random.getrandbits(31), "torch": int(torch.randint(2**31, ()))}

def run(ctx, init):
    ctx.generator.manual_seed(lockstep.derive_seed(ctx.seed, "sampler"))
    loader = torch.utils.data.DataLoader(Draws(), batch_size=None, num_workers=2, generator=ctx.generator,
                                         worker_init_fn=init)
    ctx.register_loader(loader)
    return [{k: int(v) for k, v in d.items()} for d in loader]

if __name__ == "__main__":  # the workers of forkserver and spawn import this file
    ctx = lockstep.apply_contract()
    print(json.dumps({"a": run(ctx, ctx.worker_init_fn), "b": run(ctx, ctx.worker_init_fn), "none": run(ctx, None),
                      "num_workers": ctx.fingerprint["loader.num_workers"]["value"]}))
"""
        got, _ = run_snippet(code, protocol_env(self.out))
        a, b, none = got["a"], got["b"], got["none"]
        self.assertEqual(a, b)  # reproducible
        self.assertEqual(got["num_workers"], "2")
        self.assertEqual(self.record()["fingerprint"]["loader.num_workers"]["value"], "2")
        first = {}
        for d in a:
            first.setdefault(d["worker"], d)
        self.assertEqual(sorted(first), [0, 1])
        for w, d in first.items():
            s = lockstep.derive_seed(d["worker_seed"], "worker")
            self.assertEqual(d["numpy"], np.random.RandomState([s & 0xFFFFFFFF, s >> 32]).randint(2**31), w)
            import random as pyrandom

            self.assertEqual(d["random"], pyrandom.Random(s).getrandbits(31), w)
        for k in ("numpy", "random", "torch"):
            self.assertNotEqual(first[0][k], first[1][k], k)  # workers do not share a stream
            self.assertNotEqual([d[k] for d in a], [d[k] for d in none], k)  # the function has an effect
        self.assertEqual([d["worker_seed"] for d in a], [d["worker_seed"] for d in none])

    @needs_torch
    def test_data_pass_and_rewrite(self):
        code = """
import json, torch, lockstep
ctx = lockstep.apply_contract(num_workers=3)
first = json.load(open(ctx.record_path))["fingerprint"]["loader.num_workers"]["value"]
ctx.register_loader(torch.utils.data.DataLoader(list(range(4)), num_workers=0))
print(json.dumps({"data_only": ctx.data_only, "first": first}))
"""
        got, _ = run_snippet(code, protocol_env(self.out, LOCKSTEP_PASS="data"))
        self.assertEqual(got, {"data_only": True, "first": "3"})
        fp = self.record()["fingerprint"]
        self.assertEqual((fp["loader.num_workers"]["value"], fp["trainer.pass"]["value"]), ("0", "data"))
        self.assertEqual(sorted(os.listdir(self.out)), [lockstep.TRAINER_FILE])  # no temporary file left

    @needs_torch
    def test_a_flag_undone_after_apply_contract_is_recorded_at_exit(self):
        # Trainer code that turns benchmark on or deterministic algorithms off
        # after apply_contract(): lockstep must see it (and refuse: exit 3).
        code = """
import torch, lockstep
ctx = lockstep.apply_contract()
torch.backends.cudnn.benchmark = True
torch.use_deterministic_algorithms(False)
torch.use_deterministic_algorithms(True)   # back on before any write: the flags are read when the file is written
"""
        run_snippet(code, protocol_env(self.out))
        c = self.record()["contract"]
        self.assertEqual((c["cudnn_benchmark"], c["deterministic_algorithms"]), ("true", "true"))
        code = """
import torch, lockstep
ctx = lockstep.apply_contract()
torch.use_deterministic_algorithms(False)
"""
        run_snippet(code, protocol_env(self.out))
        self.assertEqual(self.record()["contract"]["deterministic_algorithms"], "false")

    @needs_torch
    def test_cuda_asked_for_without_cuda_exits_3(self):
        code = "import torch, lockstep, sys\nif torch.cuda.is_available(): sys.exit(3)\nlockstep.apply_contract()"
        _, err = run_snippet(code, protocol_env(self.out, LOCKSTEP_DEVICE="cuda"), expect_rc=3)
        self.assertTrue(err == "" or "LOCKSTEP_DEVICE=cuda" in err, err)  # "" on a machine with CUDA

    def test_numpy_only_trainer(self):
        code = """
import sys
sys.modules["torch"] = None  # import torch now raises ImportError
import json, random, numpy as np, lockstep
a = lockstep.apply_contract(); ra = [random.random(), float(np.random.rand())]
b = lockstep.apply_contract(); rb = [random.random(), float(np.random.rand())]
print(json.dumps({"gen": a.generator is None, "same": ra == rb, "contract": a.contract,
                  "torch": a.fingerprint["python.torch"]["value"]}))
"""
        got, err = run_snippet(code, protocol_env(self.out))
        self.assertTrue(got["gen"])
        self.assertTrue(got["same"])
        self.assertEqual(got["torch"], "(absent: torch not installed)")
        self.assertEqual(list(got["contract"]), CONTRACT_KEYS)
        self.assertEqual(got["contract"]["mode"], "strict")
        self.assertEqual(got["contract"]["deterministic_algorithms"], "unsupported (torch not installed)")
        self.assertEqual(self.record()["contract"], got["contract"])


class SeedStreamTest(unittest.TestCase):
    def test_pinned_values_of_the_cpp_tests(self):
        # tests/determinism/seed_streams_test.cpp
        self.assertEqual(lockstep.seeds._splitmix64_mix(0x9E3779B97F4A7C15), 0xE220A8397B1DCDAF)
        self.assertEqual("%016x" % lockstep.derive_seed(0, "init"), "b2e285533d16ac3e")
        self.assertEqual("%016x" % lockstep.derive_seed(20261129, "augment", 0, 17), "a0ab66a0cb59d24f")
        self.assertEqual("%016x" % lockstep.derive_seed(4294967295, "sampler", 3), "c91057f196de2dcf")
        self.assertEqual("%016x" % lockstep.derive_seed(2**64 - 1, "dropout"), "30fbd4358c89f3b3")
        with self.assertRaises(ValueError):
            lockstep.derive_seed(-1, "init")


class WriterTest(unittest.TestCase):
    def test_metrics_lines(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "metrics.jsonl")
            with lockstep.MetricsWriter(path) as m:
                m.log(0, loss=np.float32(2.5), grad_norm=0.1, lr=1)
                m.log(1, loss=float("nan"), grad_norm=np.array([math.inf]))
                with open(path) as f:  # flushed per line
                    self.assertEqual(len(f.read().splitlines()), 2)
                for bad in ({"loss": "1.0"}, {"ok": True}, {"loss": np.zeros(2)}):
                    with self.assertRaises((TypeError, ValueError)):
                        m.log(2, **bad)
                with self.assertRaises(TypeError):
                    m.log(-1, loss=1.0)
            with open(path) as f:
                text = f.read()
        self.assertEqual(text, '{"step": 0, "loss": 2.5, "grad_norm": 0.1, "lr": 1}\n'
                               '{"step": 1, "loss": NaN, "grad_norm": Infinity}\n')

    @needs_torch
    def test_metrics_from_tensors_keep_float32_bits(self):
        import torch

        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "m.jsonl")
            x = torch.tensor(0.1, dtype=torch.float32)
            with lockstep.MetricsWriter(path) as m:
                m.log(3, loss=x)
            with open(path) as f:
                v = json.loads(f.read())["loss"]
        self.assertEqual(np.float32(v), np.float32(0.1))
        self.assertEqual(v, float(np.float32(0.1)))  # the exact float32 value, widened

    def test_probe_writer_counts_batches(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "p.jsonl")
            with lockstep.ProbeWriter(path, first_batch=4) as w:
                w.write(np.ones((2, 3), np.float32), np.arange(2), [10, 11])
                p = w.write(np.ones((2, 3), np.float32), np.arange(2), [12, 13])
            with open(path) as f:
                lines = [json.loads(line) for line in f]
        self.assertEqual([line["batch"] for line in lines], [4, 5])
        self.assertEqual(lines[1], p)
        self.assertEqual(p["sample_index_hash"],
                         xxhash.xxh3_64_hexdigest(np.array([12, 13], dtype="<i8").tobytes()))
        with self.assertRaises(TypeError):
            lockstep.probe(np.ones(2), np.ones(2), [0.5, 1.5])
        with self.assertRaises(TypeError):
            lockstep.tensor_stats(np.ones(2, dtype=np.complex64))


if __name__ == "__main__":
    unittest.main(verbosity=2)
