"""The inverse of `pack_padded`: `unpack_padded` puts the frames of a packed axis back into their padded places;
`merge_padded` / `split_padded`: the batch and other axes flattened into one batch axis with the padding kept
(a reshape) and back."""

from __future__ import annotations

from typing import Any, Sequence

from ..tensor import Data, Dim, Tensor
from ._dispatch import backend_for
from .array import cumsum, gather, masked, merge_dims, permute, range_over_dim, sequence_mask
from .math import cast
from .reduce import reduce
from .run_ctx import get_run_ctx


def packed_positions(dims: Sequence[Dim]) -> Tensor:
    """For each frame of `dims` (two dims, in packing order as `pack_padded` took them, one of them dynamic): its
    position on the packed axis (int32, dims `dims`); padded frames get the position of the next valid frame."""
    outer, inner = dims
    mask = sequence_mask(dims)
    if mask is None:
        raise ValueError(f"unpack_padded: none of {list(dims)} has padding (a packed axis of them is a reshape)")
    valid = cast(permute(mask, dims), "int32")
    before_inner = cumsum(valid, axis=inner) - valid
    per_outer = reduce(valid, mode="sum", axis=inner, use_mask=False)
    before_outer = cumsum(per_outer, axis=outer) - per_outer
    return permute(before_outer + before_inner, dims)


def unpack_padded(x: Tensor, *, in_dim: Dim, dims: Sequence[Dim], fill: Any = 0) -> Tensor:
    """`x` with its packed axis `in_dim` (the valid frames of `dims` in that order, as `pack_padded` makes it)
    spread back into the axes `dims` (in front of `x`'s other dims), padded frames set to `fill`."""
    dims = list(dims)
    if len(dims) != 2:
        raise ValueError(f"unpack_padded: give the two dims that were packed, not {dims}")
    if sequence_mask(dims) is None:  # no frame is padding (e.g. an eager run of full sequences): a reshape
        return _split_axis(x, in_dim, dims, [get_run_ctx().dim_value(d) for d in dims])
    y = gather(x, indices=packed_positions(dims), axis=in_dim, clip_to_valid=True)
    return masked(y, dims, fill)


def _split_axis(x: Tensor, in_dim: Dim, dims: Sequence[Dim], sizes: Sequence[Any]) -> Tensor:
    """`x` with the axis `in_dim` reshaped into `dims` of lengths `sizes` (ints, raw scalars, or one -1) in its
    place, row-major (`pack_padded` of frames none of which is padding is their merge); the first dynamic
    non-batch dim among them becomes the time dim."""
    backend = backend_for(x)
    index = x.axis_of(in_dim)
    shape = list(backend.get_shape_tuple_raw(x.raw))
    raw = backend.reshape_raw(x.raw, shape[:index] + list(sizes) + shape[index + 1:])
    time = next((d for d in dims if d.size is None and not d.is_batch), x.data.time_dim)
    return Tensor(x.data.copy(dims=x.dims[:index] + tuple(dims) + x.dims[index + 1:], time_dim=time), raw)


def merge_padded(x: Tensor, *, dims: Sequence[Dim], out_dim: Dim) -> Tensor:
    """`x` with `dims` (the batch dim first) flattened into the batch axis `out_dim` where the first of them was, the
    padding kept (a reshape: the padded frames stay between the valid ones); the axis length becomes `out_dim`'s
    size (a scalar) in this run."""
    y, _ = merge_dims(x, dims=dims, out_dim=out_dim)
    get_run_ctx().set_size(out_dim, backend_for(y).get_shape_tuple_raw(y.raw)[y.axis_of(out_dim)], size_dims=())
    return y


def split_padded(x: Tensor, *, in_dim: Dim, dims: Sequence[Dim]) -> Tensor:
    """The inverse of `merge_padded`: the batch axis `in_dim` of `x` split into `dims` (the batch dim first, at most
    one other dim without a static size: its padded length is what remains) in its place."""
    dims = list(dims)
    run = get_run_ctx()
    if not dims[0].is_batch or sum(d.size is None for d in dims[1:]) > 1:
        raise ValueError(f"split_padded: give the batch dim first and at most one other dynamic dim, not {dims}")
    batch_size = run.size(dims[0])
    sizes = [batch_size.raw if isinstance(batch_size, Tensor) else batch_size]
    sizes += [-1 if d.size is None else d.size for d in dims[1:]]
    return _split_axis(x, in_dim, dims, sizes)


def sizes_along_padded(sizes: Tensor, *, merged: Tensor, in_dims: Sequence[Dim], like: Tensor) -> Tensor:
    """The per-sequence `sizes` (dims [batch]) of an axis that stays beside a padded merge of the batch: for each
    entry of the merged axis, the size of its sequence. `merged`: the output of `merge_padded` of `like`'s dims
    `in_dims` (the batch dim among them); the result has the merged dim as its one axis."""
    out_dim = next(d for d in merged.dims if d not in like.dims)
    backend = backend_for(like)
    shape = backend.get_shape_tuple_raw(like.raw)
    position = next(i for i, d in enumerate(in_dims) if d.is_batch)
    index = range_over_dim(out_dim, like=merged)
    inner = 1
    for dim in in_dims[position + 1:]:
        inner = inner * shape[like.axis_of(dim)]
    if not (isinstance(inner, int) and inner == 1):
        index = index // (inner if isinstance(inner, int) else Tensor(Data("inner", (), "int32"), inner))
    if position > 0:  # the batch inside the merge (keep_order): the entries go round the batch
        count = shape[like.axis_of(in_dims[position])]
        index = index % (count if isinstance(count, int) else Tensor(Data("batch", (), "int32"), count))
    return gather(sizes, indices=index, axis=in_dims[position])
