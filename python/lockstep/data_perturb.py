"""A planted change of one data sample: the data-only pass's negative control
(``lockstep run --perturb data``, ``lockstep selftest``). A data pass whose
probes do not follow the samples' content (indices or labels only, a tensor
taken before the dataset's transform) passes every check while the data
changes under it; this change shows whether it can.

With ``LOCKSTEP_PERTURB=data`` in the data-only pass (LOCKSTEP_PASS=data),
rank 0's :meth:`Context.register_loader` arranges that the first sample of
the loader's first batch reaches the trainer changed:

- the loader's (batch) sampler marks the first index it yields, once per
  process, as a :class:`PerturbedIndex` (an ``int``; it travels to
  DataLoader workers with the batch's other indices);
- the dataset, given a marked index, returns its sample with the first
  finite floating-point value (depth first through tuples, lists and
  dicts of tensors, arrays and Python numbers) moved one ULP towards
  +inf; a sample without one has its first integer value's lowest bit
  flipped (a token id, a label).

    ctx = lockstep.apply_contract()
    loader = ctx.register_loader(DataLoader(ds, batch_size=32, generator=ctx.generator))

The classes of the sampler and dataset objects are swapped for subclasses
(``__slots__ = ()``), so the DataLoader keeps the objects it was built
with (the dataset pickles into workers started by "spawn" or "forkserver"
as its plain copy, rewrapped on load). Not possible, and said in
lockstep-trainer.json's "perturbed" field instead: an IterableDataset (no
sample index), a sampler that yields keys other than integers, a dataset
or sampler class that cannot take a subclass.
"""

import copy
import math
import sys

import numpy as np

from . import _planted


class PerturbedIndex(int):
    """A dataset index the perturbing dataset changes the sample of."""

    __slots__ = ()

    def __repr__(self):
        return "PerturbedIndex(%d)" % int(self)


def _nudge_float_array(a):
    """(``a`` (a numpy float array) copied with its first finite element one
    ULP towards +inf, that element's flat index), or (None, -1) when it has
    none."""
    flat = np.array(a, copy=True).reshape(-1)
    finite = np.flatnonzero(np.isfinite(flat))
    if finite.size == 0:
        return None, -1
    k = int(finite[0])
    flat[k] = np.nextafter(flat[k], np.array(np.inf, dtype=flat.dtype))
    return flat.reshape(np.shape(a)), k


def _nudge_float_tensor(torch, t):
    """(``t`` (a torch floating tensor) copied with its first finite element
    one ULP towards +inf, that element's flat index), or (None, -1) when it
    has none. Works on the integer view of the bits (half, bfloat16 and
    float64 alike)."""
    bits_dtype = {2: torch.int16, 4: torch.int32, 8: torch.int64}.get(t.element_size())
    if bits_dtype is None or t.numel() == 0:
        return None, -1
    out = t.detach().clone(memory_format=torch.contiguous_format)
    flat = out.view(-1)
    finite = torch.nonzero(torch.isfinite(flat)).view(-1)
    if finite.numel() == 0:
        return None, -1
    k = int(finite[0])
    bits = flat[k:k + 1].view(bits_dtype)
    if float(flat[k]) == 0.0:
        bits.fill_(1)  # +0 and -0 alike: the smallest positive subnormal
    elif float(flat[k]) > 0:
        bits.add_(1)
    else:
        bits.sub_(1)
    return out, k


def _nudge_int(torch, leaf):
    """``leaf`` (an integer tensor, array or Python int) copied with its first
    value's lowest bit flipped (a bool negated), or None when empty."""
    if torch is not None and isinstance(leaf, torch.Tensor):
        if leaf.numel() == 0:
            return None
        out = leaf.detach().clone(memory_format=torch.contiguous_format)
        flat = out.view(-1)
        flat[0] = ~flat[0] if out.dtype == torch.bool else flat[0] ^ 1
        return out
    if isinstance(leaf, np.ndarray) or isinstance(leaf, np.generic):
        a = np.array(leaf, copy=True)
        if a.size == 0:
            return None
        flat = a.reshape(-1)
        flat[0] = ~flat[0] if a.dtype == np.bool_ else flat[0] ^ 1
        return a if isinstance(leaf, np.ndarray) else a.reshape(())[()]
    return (not leaf) if isinstance(leaf, bool) else leaf ^ 1


def _kind(torch, leaf):
    """"float", "int" or None: which rule moves ``leaf``."""
    if torch is not None and isinstance(leaf, torch.Tensor):
        if leaf.is_floating_point():
            return "float"
        return None if leaf.is_complex() else "int"
    if isinstance(leaf, (np.ndarray, np.generic)):
        k = np.asarray(leaf).dtype.kind
        return "float" if k == "f" else "int" if k in "iub" else None
    if isinstance(leaf, float):
        return "float"
    if isinstance(leaf, int):
        return "int"
    return None


def _rebuilt(container, items):
    if isinstance(container, tuple) and hasattr(container, "_fields"):  # a namedtuple
        return type(container)(*items)
    if isinstance(container, tuple):
        return tuple(items)
    return list(items)


def _leaf_words(torch, leaf):
    """"a float32 tensor of shape [1, 8, 8]", "an int64 array ...", "a Python float"."""
    def a(word):
        return ("an " if word[0] in "aeiou" else "a ") + word
    if torch is not None and isinstance(leaf, torch.Tensor):
        return a("%s tensor of shape %s" % (str(leaf.dtype).replace("torch.", ""), list(leaf.shape)))
    if isinstance(leaf, np.ndarray):
        return a("%s array of shape %s" % (leaf.dtype, list(leaf.shape)))
    if isinstance(leaf, np.generic):
        return "a numpy %s" % np.asarray(leaf).dtype
    return "a Python %s" % type(leaf).__name__


def _perturbed(torch, sample, kind, path):
    """``sample`` with its first leaf of ``kind`` moved: (new sample, what
    moved) when one moved, (sample, "") when none could. ``path`` is where
    ``sample`` lies in the whole ("[0]", "['x']")."""
    if isinstance(sample, dict):
        out = dict(sample)
        for key in sample:
            new, what = _perturbed(torch, sample[key], kind, "%s[%r]" % (path, key))
            if what:
                out[key] = new
                return (type(sample)(out) if type(sample) is not dict else out), what
        return sample, ""
    if isinstance(sample, (tuple, list)):
        items = list(sample)
        for i, item in enumerate(items):
            new, what = _perturbed(torch, item, kind, "%s[%d]" % (path, i))
            if what:
                items[i] = new
                return _rebuilt(sample, items), what
        return sample, ""
    if _kind(torch, sample) != kind:
        return sample, ""
    k = 0
    if kind == "float":
        if torch is not None and isinstance(sample, torch.Tensor):
            new, k = _nudge_float_tensor(torch, sample)
        elif isinstance(sample, float):
            new = math.nextafter(sample, math.inf) if math.isfinite(sample) else None
        else:
            new, k = _nudge_float_array(sample)
            if new is not None and isinstance(sample, np.generic):
                new = new.reshape(())[()]
    else:
        new = _nudge_int(torch, sample)
    if new is None:
        return sample, ""
    where = "sample%s, %s" % (path, _leaf_words(torch, sample))
    if kind == "float":
        return new, "%s: its element %d one ULP towards +inf" % (where, k)
    return new, "%s (no float in the sample): its element 0's lowest bit flipped" % where


def perturb_sample_saying(sample):
    """(``sample`` with one value moved, what moved: "sample[0], a float32
    tensor of shape [1, 8, 8]: its element 0 one ULP towards +inf"). The
    rule of :func:`perturb_sample`."""
    torch = sys.modules.get("torch")
    for kind in ("float", "int"):
        new, what = _perturbed(torch, sample, kind, "")
        if what:
            return new, what
    raise ValueError("lockstep: LOCKSTEP_PERTURB=data: the marked sample holds no number to move (a %s)"
                     % type(sample).__name__)


def perturb_sample(sample):
    """``sample`` with one value moved: the first finite floating-point value
    one ULP towards +inf, else the first integer value's lowest bit flipped.
    Never changes ``sample`` in place. Raises ValueError when the sample
    holds no number (its type named)."""
    return perturb_sample_saying(sample)[0]


def _is_index(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _kind_of(item):
    """"str", "lists of str", ...: what a sampler yields, for a message."""
    if isinstance(item, (list, tuple)) and item:
        return "%ss of %s" % (type(item).__name__, type(item[0]).__name__)
    return type(item).__name__


def _marked(item, batched):
    """(the sampler's item with the index of its first sample marked, that
    index), or (item, why not). ``batched``: the item is a batch sampler's
    list of indices, each fetched alone (DataLoader's auto-collation);
    otherwise it goes to the dataset whole."""
    if batched and isinstance(item, (list, tuple)) and item and _is_index(item[0]):
        marked = [PerturbedIndex(int(item[0]))] + list(item[1:])
        return (marked if isinstance(item, list) else tuple(marked)), int(item[0])
    if not batched and _is_index(item):
        return PerturbedIndex(int(item)), int(item)
    if not batched and isinstance(item, (list, tuple)):
        return item, ("nothing: the dataset is handed whole batches of indices (%s, batch_size=None): no one "
                      "sample to move" % _kind_of(item))
    return item, "nothing: the loader's sampler yields %s, not integer indices" % _kind_of(item)


def _swap_class(obj, name, cls):
    try:
        obj.__class__ = cls
    except TypeError as e:
        raise TypeError("its %s (%s) cannot take a subclass: %s" % (name, type(obj).__name__, e))


def _subclass(base, methods):
    return type(base.__name__, (base,), dict(methods, __slots__=(), __module__=base.__module__,
                                             __qualname__=base.__qualname__))


def _moved(sample):
    """The marked sample moved, and what moved said (_planted), from the
    process that fetched it (a DataLoader worker, often). A sample without
    a number is handed on as it is, and "nothing: ..." said."""
    try:
        new, what = perturb_sample_saying(sample)
    except ValueError:
        _planted.say("nothing: the sample holds no number to move (%s)" % _leaf_words(sys.modules.get("torch"),
                                                                                      sample))
        return sample
    _planted.say(what)
    return new


_DATASET_CLASSES = {}


def _perturbing_dataset_class(base):
    """The subclass of ``base`` (a map-style dataset class) whose
    ``__getitem__`` (and ``__getitems__``, torch >= 2.1's batched fetch)
    perturbs the sample of a :class:`PerturbedIndex`. One per base class;
    an instance pickles as its base-class copy rewrapped on load, so
    DataLoader workers started by "spawn" or "forkserver" (Python 3.14's
    default) get the perturbing dataset too."""
    cls = _DATASET_CLASSES.get(base)
    if cls is not None:
        return cls

    def __getitem__(self, index):
        sample = base.__getitem__(self, index)
        return _moved(sample) if type(index) is PerturbedIndex else sample

    def __reduce_ex__(self, protocol):
        self.__class__ = base
        try:
            plain = copy.copy(self)
        finally:
            self.__class__ = cls
        return (_rewrap_dataset, (plain,))

    methods = {"__getitem__": __getitem__, "__reduce_ex__": __reduce_ex__}
    if getattr(base, "__getitems__", None):
        def __getitems__(self, indices):
            samples = base.__getitems__(self, indices)
            return [_moved(s) if type(i) is PerturbedIndex else s for i, s in zip(indices, samples)]
        methods["__getitems__"] = __getitems__
    cls = _DATASET_CLASSES[base] = _subclass(base, methods)
    return cls


def _rewrap_dataset(plain):
    """Unpickling a perturbing dataset: its base-class copy, rewrapped."""
    plain.__class__ = _perturbing_dataset_class(type(plain))
    return plain


def install(loader, on_marked):
    """Makes ``loader`` hand the trainer its first batch's first sample
    perturbed (the module docstring). ``on_marked(index, why_not)`` is
    called in this process when the sampler yields its first item: the
    index marked and "", or None and why none was ("nothing: ..."). Returns
    "" when installed, else why not (for lockstep-trainer.json's
    "perturbed" field)."""
    torch = sys.modules.get("torch")
    dataset = getattr(loader, "dataset", None)
    if torch is not None and isinstance(dataset, torch.utils.data.IterableDataset):
        return "nothing: an IterableDataset has no sample index to perturb"
    batched = getattr(loader, "batch_sampler", None) is not None
    sampler = getattr(loader, "batch_sampler", None) or getattr(loader, "sampler", None)
    if sampler is None or dataset is None:
        return "nothing: the loader has no sampler or no dataset (not a torch DataLoader?)"
    state = {"marked": False}
    sampler_base, dataset_base = type(sampler), type(dataset)

    def __iter__(self):
        it = sampler_base.__iter__(self)
        if state["marked"]:
            yield from it
            return
        for item in it:
            if not state["marked"]:
                state["marked"] = True
                item, index = _marked(item, batched)
                if isinstance(index, int):
                    on_marked(index, "")
                else:
                    on_marked(None, index)
            yield item

    try:
        _swap_class(dataset, "dataset", _perturbing_dataset_class(dataset_base))
    except TypeError as e:
        return "nothing: %s" % e
    try:
        _swap_class(sampler, "sampler", _subclass(sampler_base, {"__iter__": __iter__}))
    except TypeError as e:
        dataset.__class__ = dataset_base
        return "nothing: %s" % e
    return ""
