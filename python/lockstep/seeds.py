"""lockstep's named seed streams (docs/seeding.md), identical to the C++
``derive_seed`` (src/determinism/seed_streams.h).

    s = derive_seed(ctx.seed, "augment", epoch, index)
"""

import numpy as np
from . import _xxh as xxhash

_MASK64 = (1 << 64) - 1
_MASK32 = (1 << 32) - 1


def _splitmix64_mix(z):
    z ^= z >> 30
    z = (z * 0xBF58476D1CE4E5B9) & _MASK64
    z ^= z >> 27
    z = (z * 0x94D049BB133111EB) & _MASK64
    z ^= z >> 31
    return z


def derive_seed(base, stream, *indices):
    """Seed of the named stream ``stream`` at ``indices``, from ``base``.

    lockstep's seeding scheme (docs/seeding.md, identical to the C++
    ``derive_seed``): ``s0 = m(base ^ m(XXH3_64(stream)))``, then
    ``s = m(s + 0x9e3779b97f4a7c15 * (index + 1))`` per index, where ``m``
    is SplitMix64's finaliser and arithmetic is mod 2^64.

    Args:
        base: int in [0, 2^64 - 1], the base seed (``ctx.seed``).
        stream: str, the stream's name ("augment", "sampler", ...).
        *indices: ints in [0, 2^64 - 1] (e.g. epoch, sample index).
    Returns:
        int in [0, 2^64 - 1]; usable by ``torch.Generator.manual_seed`` and
        ``random.seed`` as is (numpy: split into two 32-bit words).
    Raises:
        ValueError: base or an index outside [0, 2^64 - 1].
    """
    for v in (base,) + indices:
        if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= _MASK64:
            raise ValueError("derive_seed: seeds and indices are integers in [0, 2^64-1], got %r" % (v,))
    s = _splitmix64_mix(base ^ _splitmix64_mix(xxhash.xxh3_64_intdigest(stream.encode("utf-8"))))
    for i in indices:
        s = _splitmix64_mix((s + 0x9E3779B97F4A7C15 * (i + 1)) & _MASK64)
    return s


def _seed_numpy_global(seed):
    np.random.seed([seed & _MASK32, seed >> 32])
