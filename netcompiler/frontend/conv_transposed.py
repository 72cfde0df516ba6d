"""Transposed convolution over spatial Dims: `transposed_conv` (name and arguments as in RETURNN's frontend).

Each input frame i adds its window, times the filter, at the output frames i * stride ... i * stride + window - 1
(the gradient of a convolution). The backend computes that unpadded, (n - 1) * stride + window frames per axis
of n frames; the result is then cut as TF's conv_transpose cuts it: "valid" keeps n * stride + max(window -
stride, 0) frames, "same" keeps n * stride frames, dropping (window - stride) // 2 on the left. Both only depend
on the window and the stride, so every sequence of a ragged batch gets exactly what it would get alone: padded
input frames are zeroed first, and no valid output frame reads past its sequence's end.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple, Union

from ..tensor import SPATIAL, Dim, Tensor, merge_dims, pad_dim
from .array import masked, permute
from .conv import _Layout, _padding, _per_axis, _adopt_out_dims

IntOrInts = Union[int, Sequence[int]]

_stride_dims: Dict[int, Dim] = {}
"""Stride -> a static Dim of that size, so that the output dim of one input dim and stride is always the same."""


def transposed_conv(source: Tensor, *, in_dim: Dim, out_dim: Dim, in_spatial_dims: Sequence[Dim],
                    out_spatial_dims: Optional[Sequence[Dim]] = None, filter: Tensor,  # noqa: A002
                    filter_size: Sequence[Dim], padding: str, remove_padding: IntOrInts = 0,
                    output_padding: Optional[IntOrInts] = None, strides: Optional[IntOrInts] = None,
                    bias: Optional[Tensor] = None) -> Tuple[Tensor, List[Dim]]:
    """Transposed convolution of `source` over `in_spatial_dims` with `filter` (dims `in_dim`, `out_dim` and the
    window `filter_size`, any order), plus `bias` [out_dim]; `strides` default to the window (as in RETURNN).
    Returns the result (batch dims, output spatial dims, `out_dim`) and the output spatial dims."""
    spatial = list(in_spatial_dims)
    window = [d.size for d in filter_size]
    strides = window if strides is None else _per_axis(strides, spatial, "strides")
    padding = _padding(padding)
    if any(_per_axis(remove_padding, spatial, "remove_padding")) or output_padding is not None:
        raise NotImplementedError("transposed_conv: remove_padding and output_padding are not supported; crop or pad "
                                  "the result with rf.slice / rf.pad")
    if set(filter.dims) != {in_dim, out_dim, *filter_size}:
        raise ValueError(f"transposed_conv: the filter {filter.data.describe()} needs the dims {in_dim}, {out_dim} "
                         f"and the window {list(filter_size)}")
    for dim in spatial:
        if not source.has_dim(dim):
            raise ValueError(f"transposed_conv: the source {source.data.describe()} has no spatial dim {dim}")
    out_spatial = _out_dims(spatial, window, strides, padding, out_spatial_dims)
    source = masked(source, [d for d in spatial if d.is_dynamic], 0.0)
    layout = _Layout(source, spatial, [in_dim])
    backend = layout.backend
    raw = backend.transposed_conv_raw(layout.raw, permute(filter, list(filter_size) + [in_dim, out_dim]).raw,
                                      strides=strides)
    for axis, (k, s) in enumerate(zip(window, strides), 1):
        excess = k - s - (max(k - s, 0) if padding == "valid" else 0)  # frames beyond the kept ones
        if excess > 0:
            left = excess // 2
            raw = backend.slice_raw(raw, axis, left, left - excess if excess > left else None, None)
        elif excess < 0:
            rank = len(backend.get_known_shape_raw(raw))
            raw = backend.pad_raw(raw, [(0, -excess) if a == axis else (0, 0) for a in range(rank)], "constant", 0)
    y = layout.restore(raw, source, spatial, out_spatial, [out_dim], feature_dim=out_dim)
    if bias is not None:
        y = y + bias
    return y, out_spatial


def transposed_conv_out_dim(dim: Dim, window: int, stride: int, padding: str) -> Dim:
    """The output dim of a transposed conv over `dim`: n * stride (+ max(window - stride, 0) with "valid")."""
    out = dim
    if stride != 1:
        stride_dim = _stride_dims.setdefault(stride, Dim(stride, SPATIAL, f"stride{stride}"))
        out = merge_dims([dim, stride_dim], description=f"{dim.description}*{stride}", kind=dim.kind)
    extra = max(window - stride, 0) if padding == "valid" else 0
    return pad_dim(out, 0, extra)


def _out_dims(spatial, window, strides, padding, given) -> List[Dim]:
    return _adopt_out_dims([transposed_conv_out_dim(d, k, s, padding) for d, k, s in zip(spatial, window, strides)],
                          given)
