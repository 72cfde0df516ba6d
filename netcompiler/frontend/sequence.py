"""Ops over the frames of one axis: `take_frames` (gather that keeps the layout), `window` (sliding windows)."""

from __future__ import annotations

from ..tensor import Dim, Tensor
from ._dispatch import backend_for
from .array import clipped_indices_raw, gather


def take_frames(x: Tensor, *, indices: Tensor, axis: Dim, clip_to_valid: bool = False) -> Tensor:
    """The frames `indices` of `x` along `axis`. Indices over one dim of their own (the same frames for every
    sequence) take the place of `axis`, the other axes staying where they are (no transposes); indices that
    also have dims of `x` (per-sequence frames, e.g. [B, N]) are a `gather` with those as batch dims.
    `clip_to_valid` clips the indices into the padded axis."""
    if len(indices.dims) != 1 or (x.has_dim(indices.dims[0]) and indices.dims[0] != axis):
        return gather(x, indices=indices, axis=axis, clip_to_valid=clip_to_valid)
    backend = backend_for(x, indices)
    index = x.axis_of(axis)
    idx_raw = indices.raw
    if clip_to_valid:
        idx_raw = clipped_indices_raw(backend, idx_raw, indices.dtype, backend.get_shape_tuple_raw(x.raw)[index])
    raw = backend.gather_raw(x.raw, idx_raw, index, 0)
    return Tensor(x.data.copy_replace_dim(axis, indices.dims[0]), raw)


def window(x: Tensor, *, axis: Dim, window_dim: Dim, out_dim: Dim, stride: int = 1) -> Tensor:
    """The windows of `window_dim.size` consecutive frames along `axis`, every `stride` frames, taken from `x`
    as it is (only whole windows: pad `x` first for others): `axis` becomes `out_dim` (one frame per window) and
    the new axis `window_dim` follows it right after."""
    index = x.axis_of(axis)
    raw = backend_for(x).frame_raw(x.raw, window_dim.size, stride, index)
    data = x.data.copy_replace_dim(axis, out_dim)
    return Tensor(data.copy(dims=data.dims[:index + 1] + (window_dim,) + data.dims[index + 1:]), raw)
