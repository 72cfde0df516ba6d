"""Ops that sum or normalise over Dims: `reduce`, `matmul`, `softmax`, `log_softmax`.

Each masks the padded frames of the dynamic dims it crosses, so a padded batch
gives the same result as each sequence computed alone.
"""

from __future__ import annotations

from typing import Optional, Sequence, Union

from ..tensor import Data, Dim, Tensor
from ._dispatch import backend_for
from .array import masked, permute, product_of_sizes, sequence_mask
from .math import cast, combine, stop_gradient, where
from .run_ctx import get_run_ctx

REDUCE_MODES = ("sum", "mean", "max", "min", "prod", "logsumexp", "any", "all", "argmax", "argmin")


def _as_list(axis: Union[Dim, Sequence[Dim]]):
    return [axis] if isinstance(axis, Dim) else list(axis)


def _neutral(mode: str, dtype: str):
    """The value that padded frames take so they do not change a reduction of `mode`."""
    if mode in ("sum", "mean"):
        return 0
    if mode == "prod":
        return 1
    if mode == "any":
        return False
    if mode == "all":
        return True
    highest = mode in ("min", "argmin")
    if dtype.startswith(("float", "bfloat")):
        return float("inf") if highest else float("-inf")
    import numpy as np

    info = np.iinfo(dtype)
    return int(info.max if highest else info.min)


def masked_dims(x: Tensor, axes: Sequence[Dim]) -> list:
    """The dynamic dims of `x` whose padding a reduction over `axes` would mix in: those reduced, and all
    when the batch is reduced (padding varies along the batch)."""
    batch_reduced = any(d.is_batch for d in axes)
    return [d for d in x.dims if d.is_dynamic and not d.is_batch and (d in axes or batch_reduced)]


def reduce(x: Tensor, *, mode: str, axis: Union[Dim, Sequence[Dim]], use_mask: bool = True) -> Tensor:
    """`x` reduced over `axis` (one Dim or several) with `mode` (see REDUCE_MODES; argmax/argmin: one Dim,
    the result is int32 and sparse over it)."""
    if mode not in REDUCE_MODES:
        raise ValueError(f"unknown reduce mode {mode!r}")
    axes = _as_list(axis)
    backend = backend_for(x)
    out_dims = tuple(d for d in x.dims if d not in axes)
    roles = {role: (getattr(x.data, role) if getattr(x.data, role) in out_dims else None)
             for role in ("time_dim", "feature_dim")}
    pad_dims = masked_dims(x, axes) if use_mask else []
    mask = sequence_mask(pad_dims, like=x) if mode == "mean" and pad_dims else None
    if mask is not None:
        total = _masked_sum(x, mask, axes)
        count = _count(cast(mask, x.dtype), x, axes)
        return Tensor(Data(x.name, out_dims, x.dtype, **roles), permute(total / count, out_dims).raw)
    if pad_dims:
        x = masked(x, pad_dims, _neutral(mode, x.dtype))
    raw = backend.reduce_raw(x.raw, mode, [x.axis_of(d) for d in axes])
    if mode in ("argmax", "argmin"):
        return Tensor(Data(x.name, out_dims, "int32", sparse_dim=axes[0], **roles), raw)
    return Tensor(Data(x.name, out_dims, x.dtype, sparse_dim=x.sparse_dim if mode in ("max", "min") else None,
                       **roles), raw)


def _count(ones: Tensor, x: Tensor, axes):
    """How many valid frames each reduced slice of `x` has: the mask's ones summed over the reduced axes
    (broadcast over the reduced dims the mask lacks)."""
    counted = reduce(ones, mode="sum", axis=[d for d in axes if ones.has_dim(d)], use_mask=False)
    static = 1  # the static lengths multiply in as one constant of the right dtype (no cast op)
    for d in axes:
        if not ones.has_dim(d):
            value = get_run_ctx().dim_value(d)
            if isinstance(value, int):
                static *= value
            else:
                counted = counted * cast(Tensor(Data("size", (), "int32"), value), x.dtype)
    return counted if static == 1 else counted * float(static)


def _masked_sum(x: Tensor, mask: Tensor, axes) -> Tensor:
    """The sum of `x` over `axes` where `mask` holds: first over the axes the mask lacks, then the partial sums
    masked (no broadcast of the mask to all of `x`) and summed over the rest."""
    inner = [d for d in axes if not mask.has_dim(d)]
    if inner:
        x = reduce(x, mode="sum", axis=inner, use_mask=False)
    return reduce(where(mask, x, 0), mode="sum", axis=[d for d in axes if d not in inner], use_mask=False)


def reduce_sum(x: Tensor, *, axis, use_mask: bool = True) -> Tensor:
    return reduce(x, mode="sum", axis=axis, use_mask=use_mask)


def reduce_mean(x: Tensor, *, axis, use_mask: bool = True) -> Tensor:
    return reduce(x, mode="mean", axis=axis, use_mask=use_mask)


def reduce_max(x: Tensor, *, axis, use_mask: bool = True) -> Tensor:
    return reduce(x, mode="max", axis=axis, use_mask=use_mask)


def reduce_min(x: Tensor, *, axis, use_mask: bool = True) -> Tensor:
    return reduce(x, mode="min", axis=axis, use_mask=use_mask)


def reduce_argmax(x: Tensor, *, axis: Dim, use_mask: bool = True) -> Tensor:
    return reduce(x, mode="argmax", axis=axis, use_mask=use_mask)


def matmul(a: Tensor, b: Tensor, *, reduce: Union[Dim, Sequence[Dim]], use_mask: bool = True,  # noqa: A002
           bias: Optional[Tensor] = None) -> Tensor:
    """Sum over `reduce` of a * b. Dims in both (other than `reduce`) are shared (batched); the result has the
    shared dims, then a's own, then b's own. Padding of a dynamic reduced dim is masked out. `bias` (not in
    RETURNN's rf.matmul) is added to the result, in the matmul's kernel where the backend has one for it
    (`matmul_add_raw`: torch's addmm) and the bias is over b's one own dim."""
    red = _as_list(reduce)
    backend = backend_for(a, b)
    if use_mask:
        pad = [d for d in red if d.is_dynamic and not d.is_batch]
        if pad:
            a = masked(a, pad, 0)
    shared = [d for d in a.dims if d not in red and b.has_dim(d)]
    a_only = [d for d in a.dims if d not in red and d not in shared]
    b_only = [d for d in b.dims if d not in red and d not in shared]
    a_raw = permute(a, shared + a_only + red).raw
    b_raw = permute(b, shared + red + b_only).raw
    ns, na, nr = len(shared), len(a_only), len(red)
    if nr == 1 and na <= 1 and len(b_only) <= 1:  # at most a size-1 axis to add on each side: no shapes needed
        a2 = a_raw if na else backend.expand_dims_raw(a_raw, ns)
        b2 = b_raw if b_only else backend.expand_dims_raw(b_raw, ns + 1)
        raw = backend.squeeze_raw(backend.matmul_raw(a2, b2), ([] if na else [ns]) + ([] if b_only else [ns + 1]))
    else:
        b_shape = list(backend.get_shape_tuple_raw(b_raw))
        r_shape, b_own = b_shape[ns:ns + nr], b_shape[ns + nr:]
        a_shape = list(backend.get_known_shape_raw(a_raw))
        # the result has a's shape where b maps the one reduced dim onto one as large: then a's dynamic sizes are
        # not needed as scalars (a's shape is taken whole, and the merged size is -1), which saves ops per layer
        same_shape = len(b_own) == 1 and len(r_shape) == 1 and all(isinstance(n, int) and n > 0 for n in
                                                                    a_shape[:ns] + r_shape + b_own) \
            and r_shape[0] == b_own[0]
        if not same_shape:
            a_shape = list(backend.get_shape_tuple_raw(a_raw))
        s_shape, a_own = a_shape[:ns], a_shape[ns:ns + na]
        a2 = backend.reshape_raw(a_raw, _merged_shape(s_shape, a_own, r_shape)) if (na != 1 or nr != 1) else a_raw
        b2 = backend.reshape_raw(b_raw, s_shape + [product_of_sizes(r_shape), product_of_sizes(b_own)]) \
            if (nr != 1 or len(b_only) != 1) else b_raw
        raw = backend.matmul_add_raw(a2, b2, bias.raw) \
            if bias is not None and ns == 0 and bias.dims == tuple(b_only) else None
        if raw is None:
            raw = backend.matmul_raw(a2, b2)
        else:
            bias = None  # added in the kernel
        if na != 1 or len(b_only) != 1:
            raw = backend.reshape_like_raw(raw, a_raw) if same_shape else \
                backend.reshape_raw(raw, s_shape + a_own + b_own)
    out_dims = tuple(shared + a_only + b_only)
    roles = {role: next((getattr(t.data, role) for t in (a, b) if getattr(t.data, role) in out_dims), None)
             for role in ("time_dim", "feature_dim")}
    out = Tensor(Data(a.name, out_dims, a.dtype, **roles), raw)
    return out if bias is None else combine(out, "add", bias)


def _merged_shape(s_shape, a_own, r_shape):
    """The shape s_shape + [product of a_own, product of r_shape], with -1 for a_own's product where that is
    the only size not known statically (the reshape then needs no shape ops)."""
    static = [n for n in s_shape + r_shape if isinstance(n, int)]
    if len(static) == len(s_shape) + len(r_shape) and product_of_sizes(static) > 0 \
            and not all(isinstance(n, int) for n in a_own):
        return s_shape + [-1, product_of_sizes(r_shape)]
    return s_shape + [product_of_sizes(a_own), product_of_sizes(r_shape)]


def softmax(x: Tensor, *, axis: Dim, use_mask: bool = True, log: bool = False) -> Tensor:
    """softmax over `axis`; padded frames of a dynamic `axis` get probability 0 (log: -inf)."""
    backend = backend_for(x)
    if use_mask and axis.is_dynamic and not axis.is_batch:
        x = masked(x, [axis], float("-inf"))
    return Tensor(x.data, backend.softmax_raw(x.raw, x.axis_of(axis), log))


def log_softmax(x: Tensor, *, axis: Dim, use_mask: bool = True) -> Tensor:
    return softmax(x, axis=axis, use_mask=use_mask, log=True)


def moments(x: Tensor, *, axis: Union[Dim, Sequence[Dim]], use_mask: bool = True):
    """(mean, variance) of `x` over `axis` (the population variance); with `use_mask`, over the valid frames only
    (padding of the dims `masked_dims` names; one mask for both)."""
    axes = _as_list(axis)
    mask = sequence_mask(masked_dims(x, axes), like=x) if use_mask else None
    if mask is None:
        mean = reduce(x, mode="mean", axis=axes, use_mask=False)
    else:
        count = _count(cast(mask, x.dtype), x, axes)
        mean = _masked_sum(x, mask, axes) / count
    # no gradient through the mean here: that of the variance is zero (as in tf.nn.moments)
    deviation = combine(x, "squared_difference", stop_gradient(mean))
    if mask is None:
        return mean, reduce(deviation, mode="mean", axis=axes, use_mask=False)
    return mean, _masked_sum(deviation, mask, axes) / count
