"""Training-time ops: `dropout`, random values."""

from __future__ import annotations

from typing import Any, Optional, Sequence

from ..tensor import Data, Dim, Tensor
from ._dispatch import backend_for
from .array import shape_of
from .run_ctx import get_run_ctx


def dropout(x: Tensor, drop_prob: float, *, axis: Optional[Sequence[Dim]] = None, on_forward: bool = False) -> Tensor:
    """In training (or with `on_forward`): each value zeroed with probability `drop_prob`, the kept ones scaled by
    1/(1 - drop_prob). `axis`: the dims along which the mask varies (default all; it is shared along the others)."""
    if drop_prob <= 0 or not (get_run_ctx().training or on_forward):
        return x
    backend = backend_for(x)
    noise_shape = None
    if axis is not None and axis is not False:  # RETURNN: one Dim, several, or None/False for all
        varying = [axis] if isinstance(axis, Dim) else list(axis)
        if any(not x.has_dim(d) for d in varying):
            raise ValueError(f"dropout: axis {varying} not all among the dims of {x.data.describe()}")
        shape = backend.get_shape_tuple_raw(x.raw)
        noise_shape = [shape[i] if d in varying else 1 for i, d in enumerate(x.dims)]
    return Tensor(x.data, backend.dropout_raw(x.raw, float(drop_prob), noise_shape))


def random(dims: Sequence[Dim], *, distribution: str = "uniform", dtype: str = "float32", **kwargs: Any) -> Tensor:
    """Random values laid out as `dims`: uniform (minval, maxval), normal or truncated_normal (mean, stddev)."""
    raw = backend_for().random_raw(shape_of(dims), distribution, dtype, **kwargs)
    return Tensor(Data("random", tuple(dims), dtype), raw)


def random_uniform(dims: Sequence[Dim], *, minval: Any = 0.0, maxval: Any = 1.0, dtype: str = "float32") -> Tensor:
    return random(dims, distribution="uniform", dtype=dtype, minval=minval, maxval=maxval)


def random_normal(dims: Sequence[Dim], *, mean: float = 0.0, stddev: float = 1.0, dtype: str = "float32") -> Tensor:
    return random(dims, distribution="normal", dtype=dtype, mean=mean, stddev=stddev)
