"""Which backend runs an op, and how plain values become Tensors next to a Tensor."""

from __future__ import annotations

from typing import Any, Optional, Sequence

from ..backends import backend_of
from ..tensor import Data, Dim, Tensor
from .run_ctx import current_run_ctx


def backend_for(*values: Any):
    """The backend of the first Tensor with a raw value among `values`, else the run context's."""
    for value in values:
        if isinstance(value, Tensor) and value.raw is not None:
            backend = backend_of(value.raw)
            if backend is not None:
                return backend
    ctx = current_run_ctx()
    if ctx is None:
        raise RuntimeError("no backend: none of the values is a backend tensor and no run context is active")
    return ctx.backend


def as_tensor(value: Any, like: Optional[Tensor] = None, backend=None, dtype: Optional[str] = None) -> Tensor:
    """`value` as a Tensor: a Tensor stays; a Python number or NumPy scalar becomes a scalar constant of
    `dtype`, or else of `like`'s dtype (as in RETURNN: `x + 1` keeps x's dtype)."""
    if isinstance(value, Tensor):
        return value
    backend = backend or backend_for(like)
    if dtype is None:
        dtype = like.dtype if like is not None else default_dtype(value)
    return Tensor(Data("constant", (), dtype), backend.convert_to_raw(value, dtype))


def default_dtype(value: Any) -> str:
    """The dtype a plain value gets: bool, int32 for ints, float32 for floats, else the NumPy dtype."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int32"
    if isinstance(value, float):
        return "float32"
    import numpy as np

    return np.asarray(value).dtype.name


def aligned_raw(x: Tensor, out_dims: Sequence[Dim], backend) -> Any:
    """The raw value of `x` arranged to broadcast against a tensor with `out_dims`: its dims in their order
    there, with size-1 axes where it lacks one (none are added in front: broadcasting aligns from the right)."""
    present = [d for d in out_dims if x.has_dim(d)]
    if len(present) != len(x.dims):
        missing = [d for d in x.dims if d not in out_dims]
        raise ValueError(f"cannot broadcast {x.data.describe()} to {list(out_dims)}: {missing} not among them")
    raw = x.raw
    perm = [x.axis_of(d) for d in present]
    raw = backend.transpose_raw(raw, perm)
    if not present:
        return raw
    first = list(out_dims).index(present[0])
    for i in range(first, len(out_dims)):
        if out_dims[i] not in present:
            raw = backend.expand_dims_raw(raw, i - first)
    return raw


def result_roles(out_dims: Sequence[Dim], *sources: Tensor) -> dict:
    """Time and feature roles for a result with `out_dims`: the first source's, where its dims survive."""
    roles = {}
    for role in ("time_dim", "feature_dim"):
        for src in sources:
            dim = getattr(src.data, role)
            if dim is not None and dim in out_dims:
                roles[role] = dim
                break
        else:
            roles[role] = None
    return roles
