"""Dimension tags: the identity of an axis.

Two axes are the same axis only when they carry the same `Dim` (or Dims that
were declared the same). A Dim has a kind (batch, spatial or feature), a
description used in messages, and a static size or none (dynamic). The
per-sequence sizes of a dynamic Dim are not stored here: at run time they live
in the run's size table, keyed by Dim.

Derived dims (a strided conv over time, a merge of two axes, ...) are made by
the functions at the bottom of this module. They are cached, so deriving the
same thing twice yields the very same Dim, and a derived Dim knows how to
compute its sizes from its parents' (`Dim.compute_size`).
"""

from __future__ import annotations

import itertools
import weakref
from typing import Any, Callable, Optional, Sequence, Tuple

BATCH = "batch"
SPATIAL = "spatial"
FEATURE = "feature"
KINDS = (BATCH, SPATIAL, FEATURE)


class Derivation:
    """How a derived Dim's size follows from its parents' sizes.

    `op` names the arithmetic, `parents` are Dims, `args` are ints. The size
    rule is written with `+ - * //` and `maximum` only, so the same rule
    evaluates on Python ints, NumPy arrays and TF tensors.
    """

    __slots__ = ("op", "parents", "args")

    def __init__(self, op: str, parents: Tuple["Dim", ...], args: Tuple[Any, ...] = ()):
        self.op = op
        self.parents = parents
        self.args = args

    def key(self):
        return (self.op, tuple(p.root_id() for p in self.parents), self.args)

    def evaluate(self, parent_sizes: Sequence[Any], maximum: Callable[[Any, Any], Any] = max):
        rule = _SIZE_RULES[self.op]
        return rule(parent_sizes, self.args, maximum)


def _ceildiv(a, b):
    return -(-a // b)


def _conv_size(sizes, args, maximum):
    (size,) = sizes
    filter_size, stride, dilation, padding = args
    if padding == "same":
        return _ceildiv(size, stride)
    return maximum(_ceildiv(size - (filter_size - 1) * dilation, stride), 0)


def _sum_size(sizes, args, maximum):
    total = args[0] if args else 0
    for s in sizes:
        total = total + s
    return total


def _product_size(sizes, args, maximum):
    total = 1
    for s in sizes:
        total = total * s
    return total


_SIZE_RULES = {
    # one parent; args: (filter_size, stride, dilation, "same"|"valid")
    "conv": _conv_size,
    # sum of parents plus a constant (concat, padding, slicing by a constant)
    "add": _sum_size,
    # product of parents (merge of axes)
    "mul": _product_size,
    # one parent divided by a constant, rounded up (split with padding)
    "ceildiv": lambda sizes, args, maximum: _ceildiv(sizes[0], args[0]),
    # one parent divided by a constant that divides it
    "floordiv": lambda sizes, args, maximum: sizes[0] // args[0],
    # slice [start:end:step] of one parent; args: (start, end, step) with None allowed
    "slice": lambda sizes, args, maximum: _slice_size(sizes[0], args, maximum),
}


def _slice_size(size, args, maximum):
    start, end, step = args
    step = step or 1
    if step < 0:
        raise NotImplementedError("negative slice steps on dynamic dims")
    start = start or 0
    if start < 0:
        start = maximum(size + start, 0)
    stop = size if end is None else (maximum(size + end, 0) if end < 0 else end)
    length = maximum(_minimum(stop, size, maximum) - start, 0)
    return _ceildiv(length, step)


def _minimum(a, b, maximum):
    # min written via maximum, so that `maximum` alone chooses the backend
    return -maximum(-a, -b)


_ids = itertools.count()


_NO_SIZE: Any = object()  # a Dim's size not given (None is a size: dynamic)


class DimTypes:
    """RETURNN's `Dim.Types`: the kinds by their RETURNN names (Time is Spatial, as in RETURNN)."""

    Unspecified = None
    Batch = BATCH
    Spatial = SPATIAL
    Time = SPATIAL
    Feature = FEATURE


class Dim:
    """An axis identity: kind, description, static size or dynamic.

    Equality is identity, up to `declare_same_as`. A Dim is hashable and can
    key dicts (such as the run's size table).
    """

    __slots__ = ("kind", "description", "size", "derivation", "_id", "_same_as", "__weakref__")

    # set by netcompiler.frontend: the module whose `current_run_ctx()` holds the sizes of dynamic dims in the
    # current run (read by `dyn_size_ext`); this module stays free of frontend imports
    _runs: Any = None

    def __init__(
        self,
        size: Optional[int] = _NO_SIZE,
        kind: Optional[str] = SPATIAL,
        description: Optional[str] = None,
        *,
        name: Optional[str] = None,
        dimension: Optional[int] = _NO_SIZE,
        derivation: Optional[Derivation] = None,
    ):
        """`Dim(size, kind, description)`, or RETURNN's forms `Dim(None, name="time")`, `Dim(9, name="in")`
        (`name` is the description; the kind stays spatial unless given: a template takes its last static
        dim as the feature dim) and `Dim(kind=Dim.Types.Spatial, description="time", dimension=None)`
        (`dimension` is the size, dynamic when not given; `Dim.Types.Unspecified`, None, is spatial too)."""
        if size is not _NO_SIZE and dimension is not _NO_SIZE:
            raise TypeError("Dim: give the size once, as the first argument or as `dimension` (None: dynamic)")
        size = dimension if size is _NO_SIZE else size
        size = None if size is _NO_SIZE else size  # RETURNN's DimensionTag(kind=..., description=...): dynamic
        kind = SPATIAL if kind is None else kind
        if name is not None:
            if description is not None and description != name:
                raise ValueError(f"Dim: give the description once, as `name` or `description`, not both "
                                 f"({name!r} vs {description!r})")
            description = name
        if kind not in KINDS:
            raise ValueError(f"Dim kind must be one of {KINDS}, not {kind!r}")
        if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 0):
            raise ValueError(f"Dim size must be a non-negative int or None, not {size!r}")
        self.kind = kind
        self.size = size
        self._id = next(_ids)
        self.description = description or f"{kind}{self._id}"
        self.derivation = derivation
        self._same_as: Optional[Dim] = None

    # identity -------------------------------------------------------------
    def root(self) -> "Dim":
        d = self
        while d._same_as is not None:
            d = d._same_as
        return d

    def root_id(self) -> int:
        return self.root()._id

    def declare_same_as(self, other: "Dim") -> None:
        """From now on, `self` and `other` are the same axis.

        Declare before using either as a dict key: the hash follows the root.
        """
        mine, theirs = self.root(), other.root()
        if mine is theirs:
            return
        if mine.size is not None and theirs.size is not None and mine.size != theirs.size:
            raise ValueError(f"cannot declare {self} the same as {other}: sizes differ")
        mine._same_as = theirs

    # __eq__ and __hash__ run hundreds of times per eager step: the root walk is written out in them
    def __eq__(self, other):
        if self is other:
            return True
        if not isinstance(other, Dim):
            return False
        mine, theirs = self, other
        while mine._same_as is not None:
            mine = mine._same_as
        while theirs._same_as is not None:
            theirs = theirs._same_as
        return mine is theirs

    def __copy__(self):
        return self  # an axis identity: a copy of a model keeps its dims

    def __deepcopy__(self, memo):
        return self

    def __hash__(self):
        root = self
        while root._same_as is not None:
            root = root._same_as
        return hash(root._id)

    # properties -----------------------------------------------------------
    @property
    def is_dynamic(self) -> bool:
        return self.size is None

    @property
    def is_batch(self) -> bool:
        return self.kind == BATCH

    @property
    def is_feature(self) -> bool:
        return self.kind == FEATURE

    @property
    def is_spatial(self) -> bool:
        return self.kind == SPATIAL

    def compute_size(self, size_of: Callable[["Dim"], Any], maximum: Callable[[Any, Any], Any] = max):
        """This Dim's size, given a function that returns the size of any other Dim.

        For a static Dim that is its `size`; for a derived one the derivation
        rule applied to the parents' sizes (ints, arrays or tensors); for a
        dynamic Dim that is not derived, whatever `size_of` says.
        """
        if self.size is not None:
            return self.size
        if self.derivation is None:
            return size_of(self)
        parents = [p.compute_size(size_of, maximum) for p in self.derivation.parents]
        return self.derivation.evaluate(parents, maximum)

    @property
    def dyn_size_ext(self):
        """RETURNN's name for the sizes of this dim in the current run: a Tensor (dims [batch] for a time dim;
        `.raw_tensor` is the backend's int tensor), or None for a static dim or outside a run. A dynamic dim
        whose sizes the run does not know yet gets an empty sizes Tensor there, whose `raw_tensor` model code
        may set (as RETURNN's forward steps set the sizes of an expected output)."""
        if self.size is not None or Dim._runs is None:
            return None
        run = Dim._runs.current_run_ctx()
        return None if run is None else run.dyn_size_ext(self)

    @dyn_size_ext.setter
    def dyn_size_ext(self, sizes) -> None:
        run = None if Dim._runs is None else Dim._runs.current_run_ctx()
        if run is None:
            raise RuntimeError(f"{self!r}: dyn_size_ext can only be set inside a run (a train or forward step)")
        run.set_size(self, sizes)

    def short_repr(self) -> str:
        """The form used in `dump-net`: `'time:data'`, `'lin:feature'(512)`; `B` for the batch, and
        `B|'beam'(4)` or `B|'batch*beam'` for other batch dims."""
        if self.is_batch:
            return "B" if self == batch_dim else f"B|'{self.description}'" + (
                "" if self.size is None else f"({self.size})")
        return f"'{self.description}'" + ("" if self.size is None else f"({self.size})")

    def __repr__(self):
        size = "?" if self.size is None else self.size
        return f"Dim({self.description!r}, {self.kind}, {size})"


Dim.Types = DimTypes
DimensionTag = Dim  # RETURNN's older name of Dim
batch_dim = Dim(None, BATCH, "batch")


def SpatialDim(description: str, size: Optional[int] = None, *, dimension: Optional[int] = None) -> Dim:
    """A new spatial dim (dynamic unless a size is given), e.g. `SpatialDim("time")`; RETURNN's keyword
    `dimension` is the size."""
    return Dim(size if dimension is None else dimension, SPATIAL, description)


def FeatureDim(description: str, size: Optional[int] = None, *, dimension: Optional[int] = None) -> Dim:
    """A new feature dim of static size, e.g. `FeatureDim("mel", 40)`; RETURNN's keyword `dimension` is the
    size."""
    size = size if dimension is None else dimension
    if size is None:
        raise ValueError("a feature dim needs a static size")
    return Dim(size, FEATURE, description)


# ---------------------------------------------------------------------------
# Derived dims. Each call with the same arguments returns the same Dim.

_derived_cache: "weakref.WeakValueDictionary[tuple, Dim]" = weakref.WeakValueDictionary()


def _derive(
    op: str,
    parents: Sequence[Dim],
    args: tuple,
    kind: str,
    description: str,
) -> Dim:
    derivation = Derivation(op, tuple(parents), tuple(args))
    key = derivation.key() + (kind,)
    cached = _derived_cache.get(key)
    if cached is not None:
        return cached
    static_sizes = [p.size for p in parents]
    size = derivation.evaluate(static_sizes) if all(s is not None for s in static_sizes) else None
    dim = Dim(size, kind, description, derivation=derivation if size is None else None)
    _derived_cache[key] = dim
    return dim


def conv_out_dim(
    dim: Dim, filter_size: int, stride: int = 1, dilation: int = 1, padding: str = "valid",
    description: Optional[str] = None,
) -> Dim:
    """The dim a convolution, pooling or window with these settings produces from `dim`."""
    padding = padding.lower()
    if padding not in ("same", "valid"):
        raise ValueError(f"padding must be 'same' or 'valid', not {padding!r}")
    if stride == 1 and (padding == "same" or filter_size == 1):
        return dim
    desc = description or (f"{dim.description}:conv{filter_size}s{stride}"
                           + (f"d{dilation}" if dilation != 1 else "") + padding[0])
    return _derive("conv", [dim], (filter_size, stride, dilation, padding), dim.kind, desc)


def merge_dims(dims: Sequence[Dim], description: Optional[str] = None, kind: Optional[str] = None) -> Dim:
    """The dim that flattening `dims` (in this order) into one axis produces; batch kind if one of them is
    (batch x beam), else feature kind if one is, else spatial."""
    dims = list(dims)
    if len(dims) == 1:
        return dims[0]
    if kind is None:
        kind = BATCH if any(d.is_batch for d in dims) else FEATURE if any(d.is_feature for d in dims) else SPATIAL
    desc = description or "*".join(d.description for d in dims)
    return _derive("mul", dims, (), kind, desc)


def concat_dims(dims: Sequence[Dim], description: Optional[str] = None) -> Dim:
    """The dim of concatenating axes `dims` (in this order) into one."""
    dims = list(dims)
    if len(dims) == 1:
        return dims[0]
    kind = FEATURE if any(d.is_feature for d in dims) else SPATIAL
    desc = description or "+".join(d.description for d in dims)
    return _derive("add", dims, (0,), kind, desc)


def pad_dim(dim: Dim, left: int, right: int, description: Optional[str] = None) -> Dim:
    """`dim` with `left + right` frames added."""
    if left == 0 and right == 0:
        return dim
    desc = description or f"{dim.description}:pad{left},{right}"
    return _derive("add", [dim], (left + right,), dim.kind, desc)


def slice_dim(dim: Dim, start: Optional[int], end: Optional[int], step: Optional[int],
              description: Optional[str] = None) -> Dim:
    """The dim of `x[start:end:step]` along `dim`."""
    if (start in (None, 0)) and end is None and (step in (None, 1)):
        return dim
    desc = description or f"{dim.description}[{start}:{end}:{step}]"
    return _derive("slice", [dim], (start, end, step), dim.kind, desc)


def split_dim(dim: Dim, factor: int, pad: bool, description: Optional[str] = None) -> Dim:
    """The outer dim when `dim` is split into (outer, factor).

    With `pad`, `dim` is padded up to a multiple of `factor` first (the size
    rounds up); without, it must divide evenly.
    """
    if factor == 1:
        return dim
    desc = description or f"{dim.description}//{factor}"
    return _derive("ceildiv" if pad else "floordiv", [dim], (factor,), dim.kind, desc)


def same_size_dim(dim: Dim, description: Optional[str] = None) -> Dim:
    """Another axis with the sizes of `dim` (e.g. the key positions against the query positions `dim`): a
    dynamic `dim` gives a Dim whose sizes follow from `dim`'s, a static one a static Dim of the same size."""
    return _derive("add", [dim], (0,), dim.kind, description or f"{dim.description}:same-size")


def packed_dim(dims: Sequence[Dim], description: Optional[str] = None) -> Dim:
    """The batch dim of the valid frames of `dims` (a batch dim and a dynamic dim, in packing order: [batch, time]
    packs each sequence's frames in turn, [time, batch] frame by frame) packed into one axis, without padding:
    RETURNN's "B&Packed{'time'}" of flatten_batch. Its size, the number of valid frames, is no rule of the
    parents' sizes (it sums lengths), so it has no derivation: the op that packs sets it in the run. The same
    dims in the same order give the same Dim."""
    dims = list(dims)
    key = ("packed", tuple(d.root_id() for d in dims))
    cached = _derived_cache.get(key)
    if cached is None:
        parts = ["Packed(" + d.description + ")" if not d.is_batch else "B" for d in dims]
        cached = Dim(None, BATCH, description or "&".join(parts))
        _derived_cache[key] = cached
    return cached


def padded_dim(dims: Sequence[Dim], description: Optional[str] = None) -> Dim:
    """The batch dim of `dims` (the batch dim first, then the others) flattened into one axis with their padding
    kept: RETURNN's "B&Padded{'time'}" of merge_dims over the batch and time axes (of size batch * max time), or
    "B&F(5)" with a static dim. Its size is the padded product, which no rule of the parents' per-sequence sizes
    gives, so it has no derivation: the op that merges sets it in the run. The sibling of `packed_dim` (which
    drops the padding); the same dims in the same order give the same Dim."""
    dims = list(dims)
    key = ("padded", tuple(d.root_id() for d in dims))
    cached = _derived_cache.get(key)
    if cached is None:
        parts = ["B" if d.is_batch else f"Padded{{{d.description}}}" if d.size is None else f"{d.description}({d.size})"
                 for d in dims]
        cached = Dim(None, BATCH, description or "&".join(parts))
        _derived_cache[key] = cached
    return cached
