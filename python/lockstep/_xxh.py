"""XXH3 hashes for the helper, from python-xxhash or from libxxhash itself.

The helper hashes batches, tensors and names with XXH3 (64 and 128 bits,
seed 0), bit for bit what the C++ side computes with libxxhash. In a venv
without the ``xxhash`` distribution (a team's image with only torch and
numpy, lockstep installed from its wheel or bundle), the same functions
are called through ctypes in the libxxhash shipped beside the binary
(``<prefix>/lib/lockstep/libxxhash.so.0``) or the system's.

    from . import _xxh as xxhash
    xxhash.xxh3_128_hexdigest(b"abc")   # 32 hex digits, XXH128's canonical (big-endian) form
    xxhash.xxh3_64_intdigest(b"abc")    # an int in [0, 2**64)

Raises ImportError (naming where it looked) when neither is present.
"""

import ctypes
import ctypes.util
import pathlib
import sys

import numpy as np

try:
    import xxhash as _py

    BACKEND = "python-xxhash"

    def xxh3_64_intdigest(data):
        """XXH3-64 of a bytes-like object or a numpy array's bytes, as an int."""
        return _py.xxh3_64_intdigest(_contiguous(data))

    def xxh3_64_hexdigest(data):
        """XXH3-64 as 16 lowercase hex digits (big-endian)."""
        return _py.xxh3_64_hexdigest(_contiguous(data))

    def xxh3_128_hexdigest(data):
        """XXH3-128 as 32 lowercase hex digits (high 64 bits first)."""
        return _py.xxh3_128_hexdigest(_contiguous(data))

except ImportError:
    _py = None


class _Hash128(ctypes.Structure):
    _fields_ = [("low64", ctypes.c_uint64), ("high64", ctypes.c_uint64)]


def _contiguous(data):
    """`data` as something whose buffer is its bytes in order."""
    if isinstance(data, np.ndarray) and not data.flags.c_contiguous:
        return np.ascontiguousarray(data)
    return data


def _candidates():
    """Where libxxhash may be, first the one shipped with this lockstep."""
    here = pathlib.Path(__file__).resolve().parent
    # <root>/share/lockstep/python/lockstep/_xxh.py (bundle, .deb) and
    # <prefix>/lib/pythonX.Y/site-packages/lockstep/_xxh.py (wheel).
    roots = ([here.parents[3]] if len(here.parents) > 3 else []) + [pathlib.Path(sys.prefix),
                                                                   pathlib.Path(sys.base_prefix)]
    seen = []
    for root in roots:
        p = root / "lib" / "lockstep" / "libxxhash.so.0"
        if p not in seen:
            seen.append(p)
    system = ctypes.util.find_library("xxhash")
    return [str(p) for p in seen] + [system or "libxxhash.so.0"]


def load_library(path):
    """libxxhash at `path` (a file or a soname), its XXH3 functions typed."""
    lib = ctypes.CDLL(path)
    lib.XXH3_64bits.restype = ctypes.c_uint64
    lib.XXH3_64bits.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    lib.XXH3_128bits.restype = _Hash128
    lib.XXH3_128bits.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    return lib


def _as_bytes_view(data):
    """(pointer, length, owner) of the bytes of `data` without copying a
    contiguous buffer; owner keeps the memory alive."""
    if isinstance(data, str):
        raise TypeError("XXH3 hashes bytes, not str: encode it first")
    a = np.frombuffer(memoryview(_contiguous(data)).cast("B"), dtype=np.uint8)
    return (a.ctypes.data if a.size else None), a.size, a


class LibxxhashBackend:
    """The three digests through ctypes in libxxhash at `path` (a file or a
    soname). Raises OSError when it cannot be loaded."""

    def __init__(self, path):
        self.path = path
        self._lib = load_library(path)

    def xxh3_64_intdigest(self, data):
        ptr, n, _owner = _as_bytes_view(data)
        return int(self._lib.XXH3_64bits(ptr, n))

    def xxh3_64_hexdigest(self, data):
        return "%016x" % self.xxh3_64_intdigest(data)

    def xxh3_128_hexdigest(self, data):
        ptr, n, _owner = _as_bytes_view(data)
        h = self._lib.XXH3_128bits(ptr, n)
        return "%016x%016x" % (h.high64, h.low64)


if _py is None:
    _tried = []
    _backend = None
    for _path in _candidates():
        try:
            _backend = LibxxhashBackend(_path)
            break
        except OSError as e:
            _tried.append("%s (%s)" % (_path, e))
    if _backend is None:
        raise ImportError("lockstep's helper needs XXH3: neither the python xxhash distribution nor libxxhash was "
                          "found; looked for " + "; ".join(_tried) + ". Install lockstep from its wheel or bundle "
                          "(which ship libxxhash), or python3-xxhash / `pip install xxhash`")
    BACKEND = "libxxhash (" + _backend.path + ")"
    xxh3_64_intdigest = _backend.xxh3_64_intdigest
    xxh3_64_hexdigest = _backend.xxh3_64_hexdigest
    xxh3_128_hexdigest = _backend.xxh3_128_hexdigest
