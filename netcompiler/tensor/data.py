"""`Data`: the template of a tensor (its dims, dtype and roles), without values."""

from __future__ import annotations

from typing import Any, Dict, Iterable, Optional, Sequence, Tuple

from .dim import BATCH, FEATURE, SPATIAL, Dim

DTYPES = (
    "float16", "bfloat16", "float32", "float64",
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "bool", "string", "complex64", "complex128",
)

FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")
INT_DTYPES = tuple(d for d in DTYPES if d.startswith(("int", "uint")))

_DEFAULT = object()


class Data:
    """A tensor template: name, ordered dims, dtype, optional sparse dim.

    `sparse_dim` is set for tensors of class indices (its size is the number
    of classes). Several dims may be of batch kind (the batch and a beam,
    `[B, beam, T, F]`); `batch_dim_axis` is the first of them, and a merged
    batch x beam dim (`merge_dims([batch_dim, beam], kind=BATCH)`) is one. Which dim is time and which is feature is chosen by default
    from the dims' kinds (see `_default_time_dim`, `_default_feature_dim`) and
    can be set explicitly. Everything RETURNN calls `batch_dim_axis`,
    `time_dim_axis`, `feature_dim_axis`, `shape`, `batch_shape` and `dim` is
    derived from these.
    """

    __slots__ = ("name", "dims", "dtype", "sparse_dim", "_time_dim", "_feature_dim")

    def __init__(
        self,
        name: str,
        dims: Sequence[Dim],
        dtype: str = "float32",
        *,
        sparse_dim: Optional[Dim] = None,
        time_dim: Any = _DEFAULT,
        feature_dim: Any = _DEFAULT,
    ):
        dims = tuple(dims)
        for d in dims:
            if not isinstance(d, Dim):
                raise TypeError(f"Data {name!r}: dims must be Dim objects, got {d!r}")
        if len(set(dims)) != len(dims):
            raise ValueError(f"Data {name!r}: the same dim appears twice in {list(dims)}")
        if dtype not in DTYPES:
            raise ValueError(f"Data {name!r}: unknown dtype {dtype!r}")
        self.name = name
        self.dims: Tuple[Dim, ...] = dims
        self.dtype = dtype
        self.sparse_dim = sparse_dim
        self._time_dim = self._default_time_dim() if time_dim is _DEFAULT else time_dim
        self._feature_dim = self._default_feature_dim() if feature_dim is _DEFAULT else feature_dim
        for role, d in (("time", self._time_dim), ("feature", self._feature_dim)):
            if d is not None and d not in dims:
                raise ValueError(f"Data {name!r}: {role} dim {d} is not one of its dims {list(dims)}")

    # default roles ----------------------------------------------------------
    def _default_time_dim(self) -> Optional[Dim]:
        """The first dynamic spatial dim; as in RETURNN, data without one has no time dim (no static fallback)."""
        return next((d for d in self.dims if d.kind == SPATIAL and d.is_dynamic), None)

    def _default_feature_dim(self) -> Optional[Dim]:
        if self.sparse_dim is not None:
            return None
        features = [d for d in self.dims if d.kind == FEATURE]
        if features:
            return features[-1]
        candidates = [d for d in self.dims if not d.is_batch and d != self._time_dim and not d.is_dynamic]
        return candidates[-1] if candidates else None

    # roles and derived properties ---------------------------------------------
    @property
    def time_dim(self) -> Optional[Dim]:
        return self._time_dim

    @property
    def feature_dim(self) -> Optional[Dim]:
        return self._feature_dim

    @property
    def has_batch(self) -> bool:
        return any(d.is_batch for d in self.dims)

    @property
    def batch_ndim(self) -> int:
        return len(self.dims)

    @property
    def sparse(self) -> bool:
        return self.sparse_dim is not None

    @property
    def batch_dim_axis(self) -> Optional[int]:
        return next((i for i, d in enumerate(self.dims) if d.is_batch), None)

    @property
    def time_dim_axis(self) -> Optional[int]:
        return None if self._time_dim is None else self.dims.index(self._time_dim)

    @property
    def feature_dim_axis(self) -> Optional[int]:
        return None if self._feature_dim is None else self.dims.index(self._feature_dim)

    @property
    def dim(self) -> Optional[int]:
        """Number of classes if sparse, else the feature size (None if there is none)."""
        if self.sparse_dim is not None:
            return self.sparse_dim.size
        return None if self._feature_dim is None else self._feature_dim.size

    @property
    def batch_shape(self) -> Tuple[Optional[int], ...]:
        return tuple(d.size for d in self.dims)

    @property
    def shape(self) -> Tuple[Optional[int], ...]:
        """The sizes without the batch dim, None where dynamic."""
        return tuple(d.size for d in self.dims if not d.is_batch)

    @property
    def dynamic_dims(self) -> Tuple[Dim, ...]:
        return tuple(d for d in self.dims if d.is_dynamic and not d.is_batch)

    # axes -------------------------------------------------------------------
    def axis_of(self, dim: Dim) -> int:
        """The axis that carries `dim`; ValueError if none does."""
        try:
            return self.dims.index(dim)  # Dim.__eq__ (the same axis), identity first
        except ValueError:
            raise ValueError(f"{dim} is not a dim of {self.name!r} {self.describe()}") from None

    def has_dim(self, dim: Dim) -> bool:
        return dim in self.dims

    # copies -------------------------------------------------------------------
    def copy(self, **changes) -> "Data":
        """A new template with some fields changed; roles stay where their dims still are."""
        dims = tuple(changes.pop("dims", self.dims))
        sparse_dim = changes.pop("sparse_dim", self.sparse_dim)
        # a role deliberately left empty stays empty while the dims stay the same
        same_dims = set(dims) == set(self.dims)
        keep_time = self._time_dim in dims or (self._time_dim is None and same_dims)
        time_dim = changes.pop("time_dim", self._time_dim if keep_time else _DEFAULT)
        keep_feature = sparse_dim is None and (
            self._feature_dim in dims or (self._feature_dim is None and same_dims and self.sparse_dim is None))
        feature_dim = changes.pop("feature_dim", self._feature_dim if keep_feature else _DEFAULT)
        name = changes.pop("name", self.name)
        dtype = changes.pop("dtype", self.dtype)
        if changes:
            raise TypeError(f"Data.copy got unknown fields {sorted(changes)}")
        return Data(name, dims, dtype, sparse_dim=sparse_dim, time_dim=time_dim, feature_dim=feature_dim)

    def copy_replace_dim(self, old: Dim, new: Dim, **changes) -> "Data":
        """A copy with the axis of `old` now carrying `new` (roles move along)."""
        axis = self.axis_of(old)
        dims = self.dims[:axis] + (new,) + self.dims[axis + 1:]
        changes.setdefault("time_dim", (None if new.is_batch else new) if self._time_dim == old else self._time_dim)
        changes.setdefault("feature_dim", new if self._feature_dim == old else self._feature_dim)
        return self.copy(dims=dims, **changes)

    def copy_without_dims(self, removed: Iterable[Dim], **changes) -> "Data":
        removed = list(removed)
        return self.copy(dims=[d for d in self.dims if d not in removed], **changes)

    def copy_with_batch_first(self) -> "Data":
        """The same dims with the batch dims (in their order) first."""
        batch = tuple(d for d in self.dims if d.is_batch)
        if self.dims[:len(batch)] == batch:
            return self
        return self.copy(dims=batch + tuple(d for d in self.dims if not d.is_batch))

    # display -----------------------------------------------------------------
    def dim_label(self, dim: Dim) -> str:
        """`B`, `B|'beam'(4)`, `T|'time:data'`, `F|'out:feature'(2)` or `'window'(5)`."""
        if dim.is_batch:
            return dim.short_repr()
        label = dim.short_repr()
        if dim == self._time_dim:
            return "T|" + label
        if dim == self._feature_dim:
            return "F|" + label
        return label

    def describe(self) -> str:
        """`[B, T|'time:data', F|'output:feature'(2)]`, plus the sparse dim if any."""
        text = "[" + ", ".join(self.dim_label(d) for d in self.dims) + "]"
        if self.sparse_dim is not None:
            text += f" sparse {self.sparse_dim.short_repr()}"
        return text

    def to_json(self) -> Dict[str, Any]:
        return {
            "dims": [
                {"kind": d.kind, "size": d.size, "dynamic": d.is_dynamic, "description": d.description}
                for d in self.dims
            ],
            "dtype": self.dtype,
            "sparse": self.sparse,
            "sparse_dim": None if self.sparse_dim is None else self.sparse_dim.description,
            "dim": self.dim,
            "shape": list(self.shape),
            "batch_shape": list(self.batch_shape),
            "batch_dim_axis": self.batch_dim_axis,
            "time_dim_axis": self.time_dim_axis,
            "feature_dim_axis": self.feature_dim_axis,
        }

    def __repr__(self):
        return f"Data({self.name!r}, {self.describe()}, {self.dtype})"


__all__ = ["Data", "DTYPES", "FLOAT_DTYPES", "INT_DTYPES", "BATCH", "SPATIAL", "FEATURE"]
