"""Convolution modules of RETURNN's frontend: `Conv1d`, `Conv2d`, `Conv3d` (over `rf.conv`) and
`TransposedConv1d`, `TransposedConv2d` (over `rf.transposed_conv`).

Parameters as RETURNN has them: `filter` [out_dim, in_dim (/ groups), *window] for a convolution, [in_dim, out_dim,
*window] for a transposed one (Glorot, fans counted over the window), `bias` [out_dim] (zeros). The window dims
are made here, one per spatial dim ("filter-dim0", ...), unless given as Dims.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple, Union

from ..tensor import SPATIAL, Dim, Tensor
from .array import replace_dim
from .conv import conv
from .init import Glorot
from .linear import weight_in_dim
from .model_parameter import Parameter
from .module import Module, check_input_dim
from .conv_transposed import transposed_conv

IntOrInts = Union[int, Sequence[int]]


class _ConvBase(Module):
    """Parameters and argument checks shared by convolutions and transposed convolutions."""

    nd: Optional[int] = None
    transposed = False

    def __init__(self, in_dim: Dim, out_dim: Dim, filter_size, *, padding: str, with_bias: bool, groups: int = 1):
        super().__init__()
        name = type(self).__name__
        if not isinstance(in_dim, Dim) or not isinstance(out_dim, Dim) or in_dim.size is None or out_dim.size is None:
            raise TypeError(f"{name}: in_dim and out_dim must be static Dims, not {in_dim!r}, {out_dim!r}")
        if isinstance(filter_size, (int, Dim)):
            filter_size = [filter_size] * (self.nd or 1)
        filter_size = list(filter_size)
        if self.nd is not None and len(filter_size) != self.nd:
            raise ValueError(f"{name}: filter_size {filter_size} needs {self.nd} entries")
        self.nd = len(filter_size)
        groups = groups or 1
        if in_dim.size % groups or out_dim.size % groups:
            raise ValueError(f"{name}: groups={groups} must divide in_dim {in_dim} and out_dim {out_dim}")
        self.in_dim, self.out_dim, self.padding, self.groups, self.with_bias = in_dim, out_dim, padding, groups, \
            with_bias
        self.filter_size = [s if isinstance(s, Dim) else Dim(s, SPATIAL, f"filter-dim{i}")
                            for i, s in enumerate(filter_size)]
        if groups > 1:
            self.filter_in_dim = Dim(in_dim.size // groups, in_dim.kind, f"{in_dim.description}//{groups}")
        else:
            self.filter_in_dim = weight_in_dim(in_dim, out_dim)
        channels = [self.filter_in_dim, out_dim] if self.transposed else [out_dim, self.filter_in_dim]
        self.filter = Parameter(channels + self.filter_size)
        self.filter.initial = Glorot()
        self.bias = None
        if with_bias:
            self.bias = Parameter([out_dim])
            self.bias.initial = 0.0

    def __repr__(self):
        return f"<{type(self).__name__} {self.in_dim} -> {self.out_dim}, window {[d.size for d in self.filter_size]}>"

    def _source(self, source: Tensor, in_spatial_dims: Sequence[Dim]) -> Tensor:
        """`source` checked, and with `filter_in_dim` in place of `in_dim` where the filter needs another dim."""
        check_input_dim(self, source, self.in_dim)
        if len(in_spatial_dims) != self.nd:
            raise ValueError(f"{self!r}: needs {self.nd} spatial dims, got {list(in_spatial_dims)}")
        for dim in in_spatial_dims:
            check_input_dim(self, source, dim, what="spatial dim")
        return source

    def _in_channels(self) -> Dim:
        """The input channel dim the op sees: `in_dim` (or its copy in the filter, when in_dim is out_dim)."""
        return self.filter_in_dim if self.groups == 1 else self.in_dim


class _Conv(_ConvBase):
    """N-D convolution: `rf.conv` with this module's filter and bias."""

    def __init__(self, in_dim: Dim, out_dim: Dim, filter_size, *, padding: str, strides: Optional[IntOrInts] = None,
                 dilation_rate: Optional[IntOrInts] = None, groups: Optional[int] = None, with_bias: bool = True):
        super().__init__(in_dim, out_dim, filter_size, padding=padding, with_bias=with_bias, groups=groups or 1)
        self.strides = strides or 1
        self.dilation_rate = dilation_rate or 1

    def __call__(self, source: Tensor, *, in_spatial_dims: Sequence[Dim],
                 out_spatial_dims: Optional[Sequence[Dim]] = None) -> Tuple[Tensor, List[Dim]]:
        source = _renamed(self._source(source, in_spatial_dims), self.in_dim, self._in_channels())
        return conv(source, in_dim=self._in_channels(), out_dim=self.out_dim, in_spatial_dims=in_spatial_dims,
                    out_spatial_dims=out_spatial_dims, filter=self.filter, filter_size=self.filter_size,
                    padding=self.padding, strides=self.strides, dilation_rate=self.dilation_rate, groups=self.groups,
                    bias=self.bias)


class _TransposedConv(_ConvBase):
    """N-D transposed convolution: `rf.transposed_conv` with this module's filter and bias."""

    transposed = True

    def __init__(self, in_dim: Dim, out_dim: Dim, filter_size, *, padding: str, remove_padding: IntOrInts = 0,
                 output_padding: Optional[IntOrInts] = None, strides: Optional[IntOrInts] = None,
                 with_bias: bool = True):
        super().__init__(in_dim, out_dim, filter_size, padding=padding, with_bias=with_bias)
        self.strides, self.remove_padding, self.output_padding = strides, remove_padding, output_padding

    def __call__(self, source: Tensor, *, in_spatial_dims: Sequence[Dim],
                 out_spatial_dims: Optional[Sequence[Dim]] = None) -> Tuple[Tensor, List[Dim]]:
        source = _renamed(self._source(source, in_spatial_dims), self.in_dim, self.filter_in_dim)
        return transposed_conv(source, in_dim=self.filter_in_dim, out_dim=self.out_dim,
                               in_spatial_dims=in_spatial_dims, out_spatial_dims=out_spatial_dims, filter=self.filter,
                               filter_size=self.filter_size, padding=self.padding,
                               remove_padding=self.remove_padding, output_padding=self.output_padding,
                               strides=self.strides, bias=self.bias)


class _OneSpatialDim:
    """The 1-D call form: `module(source, in_spatial_dim=..., out_spatial_dim=None)` -> (out, out_spatial_dim)."""

    def __call__(self, source: Tensor, *, in_spatial_dim: Dim, out_spatial_dim: Optional[Dim] = None
                 ) -> Tuple[Tensor, Dim]:
        out, (out_dim,) = super().__call__(source, in_spatial_dims=[in_spatial_dim],
                                           out_spatial_dims=None if out_spatial_dim is None else [out_spatial_dim])
        return out, out_dim


class Conv1d(_OneSpatialDim, _Conv):
    """1-D convolution over one spatial dim."""

    nd = 1


class Conv2d(_Conv):
    """2-D convolution over two spatial dims."""

    nd = 2


class Conv3d(_Conv):
    """3-D convolution over three spatial dims."""

    nd = 3


class TransposedConv1d(_OneSpatialDim, _TransposedConv):
    """1-D transposed convolution (upsampling by the stride) over one spatial dim."""

    nd = 1


class TransposedConv2d(_TransposedConv):
    """2-D transposed convolution over two spatial dims."""

    nd = 2


def _renamed(source: Tensor, in_dim: Dim, channels: Dim) -> Tensor:
    """`source` with its axis `in_dim` carrying `channels` (the same Dim unless in_dim is also the out dim)."""
    if channels is in_dim:
        return source
    return replace_dim(source, in_dim=in_dim, out_dim=channels)
