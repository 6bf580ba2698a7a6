#!/usr/bin/env python3
"""The helper's XXH3 (python/lockstep/_xxh.py) through libxxhash by ctypes
gives python-xxhash's digests bit for bit (64-bit int and hex, 128-bit
hex) for bytes, numpy arrays (contiguous or not) and empty input, so a
venv without the xxhash distribution hashes batches as the C++ does; a
missing library is an ImportError naming where it looked.

    python3 test_xxh.py

Needs numpy and xxhash (exit 77, "skipped" for CTest, without them).
"""
import os
import subprocess
import sys
import unittest

try:
    import numpy as np
    import xxhash
except ImportError as e:
    print("skipped: %s" % e)
    sys.exit(77)

HELPER = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "python"))
sys.path.insert(0, HELPER)
from lockstep import _xxh  # noqa: E402


class LibxxhashBackendTest(unittest.TestCase):
    def setUp(self):
        try:
            self.lib = _xxh.LibxxhashBackend("libxxhash.so.0")
        except OSError as e:
            self.skipTest("no libxxhash.so.0: %s" % e)

    def test_digests_match_python_xxhash(self):
        rng = np.random.default_rng(7)
        inputs = [b"", b"a", b"abc", bytes(range(256)) * 5, rng.integers(0, 256, 100003, dtype=np.uint8).tobytes()]
        for data in inputs:
            self.assertEqual(self.lib.xxh3_64_intdigest(data), xxhash.xxh3_64_intdigest(data))
            self.assertEqual(self.lib.xxh3_64_hexdigest(data), xxhash.xxh3_64_hexdigest(data))
            self.assertEqual(self.lib.xxh3_128_hexdigest(data), xxhash.xxh3_128_hexdigest(data))
        # Known value: XXH3-64 of the empty input.
        self.assertEqual(self.lib.xxh3_64_hexdigest(b""), "2d06800538d394c2")

    def test_numpy_arrays_hash_their_bytes_in_order(self):
        a = np.arange(24, dtype=np.float32).reshape(4, 6)
        self.assertEqual(self.lib.xxh3_128_hexdigest(a.view(np.uint8)), xxhash.xxh3_128_hexdigest(a.tobytes()))
        column = a[:, 1]  # not contiguous: hashed as its values in order
        self.assertEqual(self.lib.xxh3_128_hexdigest(column), xxhash.xxh3_128_hexdigest(column.tobytes()))
        self.assertEqual(_xxh.xxh3_128_hexdigest(column), xxhash.xxh3_128_hexdigest(column.tobytes()))

    def test_str_is_refused(self):
        with self.assertRaises(TypeError):
            self.lib.xxh3_64_intdigest("text")

    def test_without_python_xxhash_the_helper_uses_libxxhash(self):
        # A fresh interpreter where `import xxhash` fails, as in a venv
        # with only torch and numpy.
        code = ("import sys; sys.modules['xxhash'] = None; sys.path.insert(0, %r); "
                "from lockstep import _xxh; print(_xxh.BACKEND); print(_xxh.xxh3_128_hexdigest(b'lockstep'))" % HELPER)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
        self.assertTrue(out[0].startswith("libxxhash ("), out)
        self.assertEqual(out[1], xxhash.xxh3_128_hexdigest(b"lockstep"))

    def test_no_library_is_an_import_error_naming_where_it_looked(self):
        code = ("import sys, ctypes.util; sys.modules['xxhash'] = None; ctypes.util.find_library = lambda n: "
                "'/nonexistent/libxxhash.so.0'; sys.path.insert(0, %r); import lockstep._xxh" % HELPER)
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=dict(os.environ, LD_LIBRARY_PATH="/nonexistent"))
        # The system's libxxhash.so.0 is still found by soname when the
        # candidates before it are missing; only a wholly missing one fails.
        if r.returncode == 0:
            self.skipTest("libxxhash.so.0 is on the loader's path")
        self.assertIn("neither the python xxhash distribution nor libxxhash was found", r.stderr)


if __name__ == "__main__":
    unittest.main()
