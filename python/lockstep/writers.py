"""The files a trainer writes for lockstep, one JSON line per entry, flushed
per line: batch probes (:class:`ProbeWriter`) and per-step metrics
(:class:`MetricsWriter`).

    with ProbeWriter(ctx.out / "probes.jsonl") as probes:
        probes.write(inputs, labels, indices)
"""

import json
import os
import pathlib

from ._errors import _fail
from .probes import probe


def _write_atomic(path, text):
    """Writes ``text`` to ``path`` (str or Path) through a temporary file
    beside it and os.replace: a reader sees the old file or the new one,
    never a part. Exit 3 (LockstepError) when it cannot be written."""
    path = str(path)
    tmp = os.path.join(os.path.dirname(path), ".%s.tmp-%d" % (os.path.basename(path), os.getpid()))
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        _fail("cannot write %s: %s" % (path, e.strerror), code=3)


class _Closing:
    """Context-manager protocol for the writers: ``with`` closes them."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _json_line(p):
    # Key order and separators as nlohmann::json::dump() writes them; the
    # doubles are Python's shortest round-trip repr (lockstep parses the
    # value, so any round-trip form gives the same bits).
    return json.dumps(p, sort_keys=True, separators=(",", ":"), allow_nan=False)


class ProbeWriter(_Closing):
    """Writes one BatchProbe per line (JSONL) to ``path``, flushed per line.

    The batch index is counted by the writer, from ``first_batch`` (a run
    resumed at step K passes K, so its probes keep their indices in the pass).

    Args:
        path: file to write (str or Path); truncated unless ``append``.
        first_batch: int >= 0, index of the first batch written.
        append: add to an existing file instead of truncating it.
    Use as a context manager or call :meth:`close`.
    """

    def __init__(self, path, first_batch=0, append=False):
        self.path = pathlib.Path(path)
        self.batch = int(first_batch)
        if self.batch < 0:
            raise ValueError("ProbeWriter: first_batch must be >= 0")
        self._file = open(self.path, "a" if append else "w", encoding="utf-8")

    def write(self, inputs, labels, indices):
        """Probes the next batch, writes its line and returns the probe dict
        (see :func:`probe` for the arguments)."""
        p = probe(inputs, labels, indices, batch=self.batch)
        self._file.write(_json_line(p) + "\n")
        self._file.flush()
        self.batch += 1
        return p

    def close(self):
        """Closes the file (idempotent)."""
        if not self._file.closed:
            self._file.close()


# ---- metrics ------------------------------------------------------------------


def _metric_value(name, v):
    if hasattr(v, "item") and callable(v.item):  # torch tensor or numpy scalar/array of one element
        try:
            v = v.item()
        except (ValueError, RuntimeError) as e:
            raise ValueError("MetricsWriter: metric %r is not a single number: %s" % (name, e)) from None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError("MetricsWriter: metric %r must be a number, got %s" % (name, type(v).__name__))
    return v


class MetricsWriter(_Closing):
    """Writes per-step metrics as JSON lines: ``{"step": N, "loss": ..., ...}``.

    Each :meth:`log` call writes one line and flushes it, so a crashed
    trainer leaves every completed step on disk. Floats are written with
    Python's shortest round-trip repr (a float32 tensor's ``.item()`` is
    its exact value widened to float64); NaN and infinities as the bare
    tokens NaN, Infinity, -Infinity, which lockstep's JSONL reader accepts.

    Args:
        path: file to write (str or Path); truncated unless ``append``.
        append: add to an existing file instead of truncating it.
    Use as a context manager or call :meth:`close`.
    """

    def __init__(self, path, append=False):
        self.path = pathlib.Path(path)
        self._file = open(self.path, "a" if append else "w", encoding="utf-8")

    def log(self, step, **values):
        """Writes the metrics of optimiser step ``step`` (int >= 0).

        Values: Python numbers, numpy scalars or one-element tensors (read
        with ``.item()``), written in the order given. Raises TypeError or
        ValueError for a non-number, a bool or a multi-element tensor.
        """
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise TypeError("MetricsWriter.log: step must be an int >= 0, got %r" % (step,))
        record = {"step": step}
        for k, v in values.items():
            record[k] = _metric_value(k, v)
        self._file.write(json.dumps(record, allow_nan=True) + "\n")
        self._file.flush()

    def close(self):
        """Closes the file (idempotent)."""
        if not self._file.closed:
            self._file.close()
