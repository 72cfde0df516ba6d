"""Pooling with the signatures of RETURNN's frontend: `max_pool`, `max_pool1d`, `pool1d`, `pool2d`, `pool3d`, over
`rf.pool` (frames that padding adds never count; see `conv.py`). Strides default to the window; the output's
padded frames are zero."""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple, Union

from ..tensor import Dim, Tensor
from .array import masked
from .conv import pool

IntOrInts = Union[int, Sequence[int]]


def _pool_nd(nd: int, source: Tensor, *, mode: str, pool_size: IntOrInts, padding: str, dilation_rate: IntOrInts,
             strides: Optional[IntOrInts], in_spatial_dims, out_spatial_dims) -> Tuple[Tensor, List[Dim]]:
    if isinstance(in_spatial_dims, Dim):
        in_spatial_dims = [in_spatial_dims]
    if isinstance(out_spatial_dims, Dim):
        out_spatial_dims = [out_spatial_dims]
    in_spatial_dims = list(in_spatial_dims)
    if nd and len(in_spatial_dims) != nd:
        raise ValueError(f"pool{nd}d: needs {nd} spatial dims, got {in_spatial_dims}")
    for dim in in_spatial_dims:
        if not source.has_dim(dim):
            raise ValueError(f"pooling: the source {source.data.describe()} has no spatial dim {dim}")
    out, out_dims = pool(source, mode=mode, pool_size=pool_size, padding=padding, dilation_rate=dilation_rate,
                         strides=strides or None, in_spatial_dims=in_spatial_dims, out_spatial_dims=out_spatial_dims)
    return masked(out, [d for d in out_dims if d.is_dynamic], 0.0), out_dims


def max_pool(source: Tensor, *, pool_size: IntOrInts, padding: str = "valid", dilation_rate: IntOrInts = 1,
             strides: Optional[IntOrInts] = None, in_spatial_dims: Union[Dim, Sequence[Dim]],
             out_spatial_dims: Optional[Union[Dim, Sequence[Dim]]] = None) -> Tuple[Tensor, List[Dim]]:
    """Max pooling over `in_spatial_dims`; (out, out spatial dims)."""
    return _pool_nd(0, source, mode="max", pool_size=pool_size, padding=padding, dilation_rate=dilation_rate,
                    strides=strides, in_spatial_dims=in_spatial_dims, out_spatial_dims=out_spatial_dims)


def pool1d(source: Tensor, *, mode: str, pool_size: int, padding: str = "valid", dilation_rate: int = 1,
           strides: Optional[int] = None, in_spatial_dim: Dim, out_spatial_dim: Optional[Dim] = None
           ) -> Tuple[Tensor, Dim]:
    """Max or average ("max", "avg") pooling over one spatial dim; (out, out spatial dim)."""
    out, (out_dim,) = _pool_nd(1, source, mode=mode, pool_size=pool_size, padding=padding,
                               dilation_rate=dilation_rate, strides=strides, in_spatial_dims=[in_spatial_dim],
                               out_spatial_dims=None if out_spatial_dim is None else [out_spatial_dim])
    return out, out_dim


def max_pool1d(source: Tensor, *, pool_size: int, padding: str = "valid", dilation_rate: int = 1,
               strides: Optional[int] = None, in_spatial_dim: Dim, out_spatial_dim: Optional[Dim] = None
               ) -> Tuple[Tensor, Dim]:
    """`pool1d` with mode "max"."""
    return pool1d(source, mode="max", pool_size=pool_size, padding=padding, dilation_rate=dilation_rate,
                  strides=strides, in_spatial_dim=in_spatial_dim, out_spatial_dim=out_spatial_dim)


def pool2d(source: Tensor, *, mode: str, pool_size: IntOrInts, padding: str = "valid", dilation_rate: IntOrInts = 1,
           strides: Optional[IntOrInts] = None, in_spatial_dims: Sequence[Dim],
           out_spatial_dims: Optional[Sequence[Dim]] = None) -> Tuple[Tensor, List[Dim]]:
    """Max or average pooling over two spatial dims; (out, out spatial dims)."""
    return _pool_nd(2, source, mode=mode, pool_size=pool_size, padding=padding, dilation_rate=dilation_rate,
                    strides=strides, in_spatial_dims=in_spatial_dims, out_spatial_dims=out_spatial_dims)


def pool3d(source: Tensor, *, mode: str, pool_size: IntOrInts, padding: str = "valid", dilation_rate: IntOrInts = 1,
           strides: Optional[IntOrInts] = None, in_spatial_dims: Sequence[Dim],
           out_spatial_dims: Optional[Sequence[Dim]] = None) -> Tuple[Tensor, List[Dim]]:
    """Max or average pooling over three spatial dims; (out, out spatial dims)."""
    return _pool_nd(3, source, mode=mode, pool_size=pool_size, padding=padding, dilation_rate=dilation_rate,
                    strides=strides, in_spatial_dims=in_spatial_dims, out_spatial_dims=out_spatial_dims)
