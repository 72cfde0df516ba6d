"""Reshapes that must keep each sequence's valid frames together: `merge_dims_packed`."""

from __future__ import annotations

from typing import Optional, Sequence, Tuple, Union

from ..tensor import Data, Dim, Tensor
from ._dispatch import backend_for
from .array import gather, merge_dims
from .math import maximum
from .run_ctx import get_run_ctx


def merge_dims_packed(x: Tensor, *, dims: Sequence[Dim], out_dim: Optional[Dim] = None) -> Tuple[Tensor, Dim]:
    """Like `merge_dims`, but on the merged axis each sequence's valid frames come first, in the order that
    flattening the sequence alone gives (its padding follows them).

    A plain reshape gives that order when no dim after the first of `dims` is dynamic; otherwise (e.g. [F, T])
    it would interleave padding with valid frames, so the frames are gathered: merged position j of a sequence
    is read out as digits in the sequence's own sizes and put together again in the padded lengths.
    """
    dims = list(dims)
    if all(d.size is not None for d in dims[1:]):
        return merge_dims(x, dims=dims, out_dim=out_dim)
    backend = backend_for(x)
    shape = backend.get_shape_tuple_raw(x.raw)
    lengths = [_scalar(shape[x.axis_of(d)]) for d in dims]
    y, out_dim = merge_dims(x, dims=dims, out_dim=out_dim)
    total = backend.get_shape_tuple_raw(y.raw)[y.axis_of(out_dim)]
    rest = Tensor(Data(f"range:{out_dim.description}", (out_dim,), "int32"), backend.range_raw(total, "int32"))
    run = get_run_ctx()
    index, stride = None, 1
    for i in reversed(range(len(dims))):
        size = run.size(dims[i])
        if isinstance(size, Tensor):
            size = maximum(size, 1)  # an empty sequence has no valid frames; and no division by zero
        digit = rest % size
        term = digit if isinstance(stride, int) and stride == 1 else digit * stride
        index = term if index is None else index + term
        if i > 0:
            rest = rest // size
            stride = stride * lengths[i]
    return gather(y, indices=index, axis=out_dim), out_dim


def _scalar(length) -> Union[int, Tensor]:
    """A padded length: an int if static, else a scalar int32 Tensor."""
    return length if isinstance(length, int) else Tensor(Data("length", (), "int32"), length)
