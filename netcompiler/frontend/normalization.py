"""Normalization as RETURNN's frontend has it: functions `layer_norm`, `rms_norm`, `normalize`, modules
`LayerNorm` (scale 1, bias 0, eps 1e-6), `RMSNorm` (no bias by default), `GroupNorm` (RETURNN's: statistics over
the channels of each group, at each position), `Normalize`, `BatchNorm`.

`BatchNorm` (RETURNN's defaults: affine, momentum 0.1, eps 1e-3, running statistics tracked) normalizes over every
dim but `in_dim` with the statistics of the batch in training -- over valid frames only (masking; `use_mask=False`
counts the padded frames too, as other frameworks do) -- and moves the running statistics (auxiliary parameters
`running_mean`, `running_variance`, biased variance) by `momentum` towards them; outside training it uses the
running statistics. A batch without valid frames leaves them as they were. (In a traced TF step the updates are
stateful ops that TF's automatic control dependencies run.)
"""

from __future__ import annotations

from typing import Optional, Sequence, Union

from ..tensor import Dim, Tensor
from ._dispatch import backend_for
from .array import merge_dims, permute, split_dims
from .math import is_finite, rsqrt, where
from .model_parameter import Parameter
from .module import Module, check_input_dim
from .reduce import moments, reduce_mean
from .run_ctx import get_run_ctx

Dims = Union[Dim, Sequence[Dim]]


def _dims(dims: Dims) -> list:
    return [dims] if isinstance(dims, Dim) else list(dims)


def layer_norm(x: Tensor, *, in_dim: Dims, scale: Tensor, bias: Optional[Tensor], eps: float) -> Tensor:
    """(x - mean) / sqrt(variance + eps) over `in_dim`, times `scale`, plus `bias`."""
    fused = fused_layer_norm(x, in_dim=in_dim, scale=scale, bias=bias, eps=eps)
    if fused is not None:
        return fused
    mean, variance = moments(x, axis=_dims(in_dim))
    out = (x - mean) * rsqrt(variance + eps) * scale
    return out if bias is None else out + bias


def fused_layer_norm(x: Tensor, *, in_dim: Dims, scale: Tensor, bias: Optional[Tensor],
                     eps: float) -> Optional[Tensor]:
    """`layer_norm` through the backend's one kernel (`layer_norm_raw`) where it has one and `in_dim` is one static
    dim, the last of `x`, with `scale` and `bias` over just that dim; else None (the caller composes it: over a
    dynamic dim the statistics must leave out the padded frames, which the kernel would count)."""
    dims = _dims(in_dim)
    if len(dims) != 1 or dims[0].is_dynamic or not x.dims or x.dims[-1] != dims[0] or scale.dims != (dims[0],) or \
            (bias is not None and bias.dims != (dims[0],)):
        return None
    raw = backend_for(x).layer_norm_raw(x.raw, scale.raw, None if bias is None else bias.raw, float(eps))
    return None if raw is None else Tensor(x.data, raw)


def rms_norm(x: Tensor, *, in_dim: Dims, scale: Tensor, bias: Optional[Tensor], eps: float) -> Tensor:
    """x / sqrt(mean(x^2) + eps) over `in_dim`, times `scale`, plus `bias`."""
    out = x * rsqrt(reduce_mean(x * x, axis=_dims(in_dim)) + eps) * scale
    return out if bias is None else out + bias


def normalize(a: Tensor, *, axis: Dims, epsilon: float = 1e-6) -> Tensor:
    """(a - mean) / sqrt(variance + epsilon) over `axis` (valid frames only)."""
    mean, variance = moments(a, axis=_dims(axis))
    return (a - mean) * rsqrt(variance + epsilon)


class _ScaleBias(Module):
    """A scale (ones) and optionally a bias (zeros) over `in_dim` (one dim or several)."""

    def __init__(self, in_dim: Dims, *, eps: float, with_bias: bool):
        super().__init__()
        self.in_dim, self.eps = in_dim, eps
        self.scale = Parameter(_dims(in_dim), initial=1.0)
        self.bias = Parameter(_dims(in_dim), initial=0.0) if with_bias else None

    def _check(self, x: Tensor) -> None:
        for dim in _dims(self.in_dim):
            check_input_dim(self, x, dim)


class LayerNorm(_ScaleBias):
    """Layer normalization over the feature dim `in_dim` (zero mean, unit variance, then scale and bias)."""

    def __init__(self, in_dim: Dims, *, eps: float = 1e-6, with_bias: bool = True):
        super().__init__(in_dim, eps=eps, with_bias=with_bias)

    def __call__(self, x: Tensor) -> Tensor:
        self._check(x)
        return layer_norm(x, in_dim=self.in_dim, scale=self.scale, bias=self.bias, eps=self.eps)


class RMSNorm(_ScaleBias):
    """Root-mean-square normalization over `in_dim` (no mean subtracted), then scale (and bias)."""

    def __init__(self, in_dim: Dims, *, eps: float = 1e-6, with_bias: bool = False):
        super().__init__(in_dim, eps=eps, with_bias=with_bias)

    def __call__(self, x: Tensor) -> Tensor:
        self._check(x)
        return rms_norm(x, in_dim=self.in_dim, scale=self.scale, bias=self.bias, eps=self.eps)


class GroupNorm(_ScaleBias):
    """`in_dim` split into `num_groups` groups of consecutive channels, each normalized over its channels (at each
    position, as RETURNN's GroupNorm; not pooled over spatial dims), then scale and bias over `in_dim`."""

    def __init__(self, in_dim: Dim, *, num_groups: Union[int, Dim], eps: float = 1e-6):
        groups = num_groups if isinstance(num_groups, Dim) else Dim(num_groups, in_dim.kind, "groups")
        if in_dim.size % groups.size:
            raise ValueError(f"GroupNorm: num_groups {groups.size} must divide in_dim {in_dim}")
        super().__init__(in_dim, eps=eps, with_bias=True)
        self.num_groups = groups
        self.in_group_dim = Dim(in_dim.size // groups.size, in_dim.kind, f"{in_dim.description}/group")

    def __call__(self, x: Tensor) -> Tensor:
        self._check(x)
        grouped = split_dims(x, axis=self.in_dim, dims=[self.num_groups, self.in_group_dim])
        normed, _ = merge_dims(normalize(grouped, axis=self.in_group_dim, epsilon=self.eps),
                               dims=[self.num_groups, self.in_group_dim], out_dim=self.in_dim)
        return normed * self.scale + self.bias


class Normalize(Module):
    """`normalize` over the axis given at the call, times a scale and plus a bias over `param_dims`."""

    def __init__(self, *, param_dims: Dims, epsilon: float = 1e-6, scale: bool = True, bias: bool = True):
        super().__init__()
        self.epsilon = epsilon
        self.scale = Parameter(_dims(param_dims), initial=1.0) if scale else None
        self.bias = Parameter(_dims(param_dims), initial=0.0) if bias else None

    def __call__(self, a: Tensor, *, axis: Dims) -> Tensor:
        out = normalize(a, axis=axis, epsilon=self.epsilon)
        if self.scale is not None:
            out = out * self.scale
        return out if self.bias is None else out + self.bias


class BatchNorm(Module):
    """Batch normalization over every dim but `in_dim` (see the module docstring)."""

    def __init__(self, in_dim: Dim, *, affine: bool = True, momentum: float = 0.1, eps: float = 1e-3,
                 track_running_stats: bool = True, use_mask: Optional[bool] = None):
        super().__init__()
        if not isinstance(in_dim, Dim) or in_dim.size is None:
            raise TypeError(f"BatchNorm: in_dim must be a static Dim, not {in_dim!r}")
        if not 0.0 <= momentum <= 1.0:
            raise ValueError(f"BatchNorm: momentum must be in [0, 1], not {momentum!r}")
        self.in_dim, self.momentum, self.eps, self.affine = in_dim, momentum, eps, affine
        self.use_mask = True if use_mask is None else bool(use_mask)
        self.running_mean = self.running_variance = None
        if track_running_stats:
            self.running_mean = Parameter([in_dim], auxiliary=True, initial=0.0)
            self.running_variance = Parameter([in_dim], auxiliary=True, initial=1.0)
        self.gamma = self.beta = None
        if affine:
            self.gamma = Parameter([in_dim], initial=1.0)
            self.beta = Parameter([in_dim], initial=0.0)

    def __repr__(self):
        return f"<BatchNorm {self.in_dim}>"

    def __call__(self, source: Tensor) -> Tensor:
        check_input_dim(self, source, self.in_dim)
        training = get_run_ctx().training
        if self.running_mean is None or training:
            mean, variance = moments(source, axis=[d for d in source.dims if d != self.in_dim],
                                     use_mask=self.use_mask)
            if self.running_mean is not None:
                self._update_running_stats(mean, variance)
        else:
            mean, variance = self.running_mean, self.running_variance
        out = (source - mean) * rsqrt(variance + self.eps)
        if self.gamma is not None:
            out = out * self.gamma + self.beta
        return out

    def _update_running_stats(self, mean: Tensor, variance: Tensor) -> None:
        """running += momentum * (batch - running), where the batch had valid frames (its mean is finite)."""
        ok = is_finite(mean)
        for stat, new in ((self.running_mean, mean), (self.running_variance, variance)):
            stat.assign_add(permute(where(ok, (new - stat) * self.momentum, 0.0), [self.in_dim]))
