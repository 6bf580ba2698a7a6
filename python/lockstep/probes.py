"""lockstep's batch probes, bit for bit the values the C++ computes
(src/data/tensor_stats.h, src/record/batch_probe.cpp): XXH3 hashes and
fixed-order float64 statistics of a batch's inputs and labels.

    p = probe(inputs, labels, indices, batch=3)   # {"batch", "inputs", "labels", "sample_index_hash"}
"""

import math
import sys

import numpy as np
from . import _xxh as xxhash

# dtype names as record/batch_probe.h lists them.
_NUMPY_DTYPES = {
    np.dtype(np.float32): "float32",
    np.dtype(np.float64): "float64",
    np.dtype(np.float16): "float16",
    np.dtype(np.int64): "int64",
    np.dtype(np.int32): "int32",
    np.dtype(np.int16): "int16",
    np.dtype(np.int8): "int8",
    np.dtype(np.uint8): "uint8",
    np.dtype(np.bool_): "bool",
}
_LANES = 8
_ROWS_PER_CHUNK = 1 << 16  # 512 Ki elements per cumulative-sum chunk


def _torch_dtype_name(torch, dtype):
    names = {
        torch.float32: "float32",
        torch.float64: "float64",
        torch.float16: "float16",
        torch.bfloat16: "bfloat16",
        torch.int64: "int64",
        torch.int32: "int32",
        torch.int16: "int16",
        torch.int8: "int8",
        torch.uint8: "uint8",
        torch.bool: "bool",
    }
    if dtype not in names:
        raise TypeError("lockstep: unsupported dtype %s (supported: %s)" % (dtype, ", ".join(names.values())))
    return names[dtype]


def _as_probe_arrays(x):
    """(dtype name, shape, raw bytes as a flat uint8 array, float64 values flat)."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        t = x.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        t = t.contiguous()
        name = _torch_dtype_name(torch, t.dtype)
        shape = list(t.shape)
        if t.dtype == torch.bfloat16:  # numpy has no bfloat16: hash its 16-bit patterns
            raw = t.reshape(-1).view(torch.int16).numpy().view(np.uint8)
        else:
            raw = t.reshape(-1).numpy().view(np.uint8)
        values = t.reshape(-1).to(torch.float64).numpy()
        return name, shape, raw, values
    a = np.asarray(x)
    if a.dtype not in _NUMPY_DTYPES:
        if a.dtype.newbyteorder("=") in _NUMPY_DTYPES:
            a = a.astype(a.dtype.newbyteorder("="))  # byte-swapped input: hash native bytes
        else:
            raise TypeError(
                "lockstep: unsupported dtype %s (supported: %s)"
                % (a.dtype, ", ".join(sorted(set(_NUMPY_DTYPES.values()))))
            )
    if sys.byteorder != "little":
        raise RuntimeError("lockstep: probes are defined on little-endian bytes")
    name = _NUMPY_DTYPES[a.dtype]
    shape = [int(d) for d in a.shape]
    flat = np.ascontiguousarray(a).reshape(-1)
    return name, shape, flat.view(np.uint8), flat.astype(np.float64)


def _lane_sums(terms):
    """Per-lane sums of a (rows, 8) float64 array, each lane added in row
    order starting from +0.0: np.cumsum (ufunc accumulate) is strictly
    sequential, unlike np.sum's pairwise summation."""
    acc = np.zeros(_LANES)
    for start in range(0, terms.shape[0], _ROWS_PER_CHUNK):
        block = terms[start:start + _ROWS_PER_CHUNK]
        tmp = np.empty((block.shape[0] + 1, _LANES))
        tmp[0] = acc
        tmp[1:] = block
        with np.errstate(over="ignore", invalid="ignore"):  # float64 overflow is part of the definition
            np.cumsum(tmp, axis=0, out=tmp)
        acc = tmp[-1].copy()
    return [float(v) for v in acc]


def _pairwise(lanes):
    l0, l1, l2, l3, l4, l5, l6, l7 = lanes
    return ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7))


def _lane_extreme(lanes2d, smallest):
    """Per-lane min (or max) as `x < lo ? x : lo` in index order, then across
    lanes 0..7 the same way. Non-finite entries must already be +inf (min) or
    -inf (max). The values equal np.min/np.max; only a zero's sign depends
    on the order (the first zero of the lane wins), so it is taken from the
    lane's first zero."""
    ext = lanes2d.min(axis=0) if smallest else lanes2d.max(axis=0)
    per_lane = []
    for j in range(_LANES):
        v = float(ext[j])
        if v == 0.0:
            col = lanes2d[:, j]
            v = float(col[int(np.argmax(col == 0.0))])
        per_lane.append(v)
    out = per_lane[0]
    for v in per_lane[1:]:
        if (v < out) if smallest else (v > out):
            out = v
    return out


def _json_double(v):
    """double_to_json (src/core/json_io.cpp): non-finite values as strings."""
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def _stats_of(values):
    """sum, mean, std, min, max, nan_count, inf_count of a flat float64 array
    by the definition in src/data/tensor_stats.h."""
    n = values.size
    finite = np.isfinite(values)
    n_finite = int(np.count_nonzero(finite))
    n_nan = int(np.count_nonzero(np.isnan(values)))
    n_inf = n - n_finite - n_nan
    if n_finite == 0:
        return 0.0, 0.0, 0.0, 0.0, 0.0, n_nan, n_inf
    rows = -(-n // _LANES)

    def lanes(fill, src):
        # Element i goes to lane i % 8 by its index in the whole buffer; a
        # non-finite element keeps its slot, filled with `fill`.
        out = np.empty(rows * _LANES)
        out[:n] = np.where(finite, src, fill)
        out[n:] = fill
        return out.reshape(rows, _LANES)

    # -0.0 is the additive identity for every double (x + -0.0 == x, +0.0
    # included), so filled slots leave the lane sums as if skipped.
    total = _pairwise(_lane_sums(lanes(-0.0, values)))
    mean = total / n_finite
    lo = _lane_extreme(lanes(math.inf, values), smallest=True)
    hi = _lane_extreme(lanes(-math.inf, values), smallest=False)
    with np.errstate(invalid="ignore", over="ignore"):
        d = values - mean
        sq = d * d  # two roundings: numpy never fuses these into an FMA
    std = math.sqrt(_pairwise(_lane_sums(lanes(-0.0, sq))) / n_finite)
    return total, mean, std, lo, hi, n_nan, n_inf


def tensor_stats(x):
    """lockstep's TensorStats of one tensor, as the C++ writes it in JSON.

    Args:
        x: a torch.Tensor (any device, any layout; detached, copied to the
           CPU and made C-contiguous) or anything ``numpy.asarray`` accepts.
           dtypes: float32, float64, float16, bfloat16 (torch only), int64,
           int32, int16, int8, uint8, bool.
    Returns:
        dict with the keys of ``to_json(TensorStats)``:
        ``shape`` (list of int), ``dtype`` (str), ``xxh3_128`` (XXH3-128 of
        the raw C-contiguous bytes, 32 lowercase hex digits, big-endian
        canonical), ``sum``, ``mean``, ``std`` (population), ``min``,
        ``max`` (float64 over the finite elements, each converted to float64
        first; int64 to the nearest float64; 0.0 when none is finite;
        "nan"/"inf"/"-inf" strings if a result is not finite, e.g. a float64
        sum that overflows), ``nan_count``, ``inf_count`` (int).
        Finite element i is added to lane i % 8 (i its index in the whole
        buffer), lanes combined ((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7)); std
        sums (x - mean)^2 the same way; min/max per lane, first hit wins.
    Raises:
        TypeError: an unsupported dtype.
    """
    name, shape, raw, values = _as_probe_arrays(x)
    total, mean, std, lo, hi, n_nan, n_inf = _stats_of(values)
    return {
        "dtype": name,
        "inf_count": n_inf,
        "max": _json_double(hi),
        "mean": _json_double(mean),
        "min": _json_double(lo),
        "nan_count": n_nan,
        "shape": shape,
        "std": _json_double(std),
        "sum": _json_double(total),
        "xxh3_128": xxhash.xxh3_128_hexdigest(raw),
    }


def _index_bytes(indices):
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(indices, torch.Tensor):
        indices = indices.detach().cpu().numpy()
    a = np.asarray(indices)
    if a.size == 0:
        return b""
    if a.dtype.kind not in "iu":
        raise TypeError("lockstep: sample indices must be integers, got dtype %s" % a.dtype)
    if a.dtype.kind == "u" and int(a.max()) > np.iinfo(np.int64).max:
        raise ValueError("lockstep: a sample index does not fit int64")
    return np.ascontiguousarray(a.reshape(-1), dtype="<i8").tobytes()


def probe(inputs, labels, indices, batch=0):
    """lockstep's BatchProbe of one batch, as the C++ writes it in JSON.

    Args:
        inputs, labels: tensors or arrays (see :func:`tensor_stats`).
        indices: the dataset indices of the batch's samples, in batch order
            (a tensor, array or sequence of ints; flattened in C order).
        batch: int, the 0-based index of the batch in the pass.
    Returns:
        dict ``{"batch", "inputs", "labels", "sample_index_hash"}``;
        sample_index_hash is the XXH3-64 (seed 0) of the indices as int64
        little-endian, 16 lowercase hex digits.
    Raises:
        TypeError: an unsupported dtype, or non-integer indices.
        ValueError: an index that does not fit int64.
    """
    return {
        "batch": int(batch),
        "inputs": tensor_stats(inputs),
        "labels": tensor_stats(labels),
        "sample_index_hash": xxhash.xxh3_64_hexdigest(_index_bytes(indices)),
    }
