"""Parameter initialisation (`rf.init`, names and defaults as in RETURNN): `Normal`, `VarianceScaling` and its
special cases `Glorot`, `He` (= `HeNormal`), `HeUniform`.

An initializer called with a parameter's dims and dtype returns its initial value as a NumPy array, drawn from
the random state of `random_state.py` (so equal on every backend for the same seed). Fans follow RETURNN: for 1
dim both fans are its size; for 2 dims [in, out]; for more, a conv filter [out, in, window...]: fan_in = in x
window, fan_out = out x window.
"""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from ..tensor import Dim, Tensor
from .random_state import generator

__all__ = ["ParamInit", "ParamInitType", "Normal", "VarianceScaling", "Glorot", "He", "HeNormal", "HeUniform"]

_TRUNCATED_STDDEV = 0.87962566103423978
"""The standard deviation of a standard normal truncated to [-2, 2]: VarianceScaling divides by it."""


class ParamInit:
    """An initial value for a parameter, made when the parameter's dims and dtype are known."""

    def __call__(self, dims: Sequence[Dim], dtype: str, *, sparse_dim: Optional[Dim] = None,
                 device: Optional[str] = None, out: Optional[Tensor] = None) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__} does not say how to make an initial value")


ParamInitType = Union[Tensor, int, float, np.ndarray, ParamInit]


class Normal(ParamInit):
    """Normal values of mean 0 and `stddev`, redrawn outside 2 stddev if `truncated` (the default)."""

    def __init__(self, stddev: float, *, truncated: bool = True, dtype: Optional[str] = None):
        if not stddev > 0.0:
            raise ValueError(f"rf.init.Normal: stddev must be a positive float, not {stddev!r}")
        self.stddev = float(stddev)
        self.truncated = bool(truncated)
        self.dtype = dtype or "float32"

    def __call__(self, dims, dtype=None, *, sparse_dim=None, device=None, out=None) -> np.ndarray:
        shape = _shape(dims)
        draw = truncated_normal(shape) if self.truncated else generator().standard_normal(shape)
        return (draw * self.stddev).astype(dtype or self.dtype)

    def __repr__(self):
        return f"rf.init.Normal({self.stddev}, truncated={self.truncated})"


class VarianceScaling(ParamInit):
    """Random values whose variance is `scale` / n, n the fan in, the fan out or their mean (`mode`); drawn
    uniformly, or normal ("normal" is truncated as "truncated_normal"; "untruncated_normal" is not)."""

    scale = 1.0
    mode = "fan_in"
    distribution = "truncated_normal"

    def __init__(self, scale: Optional[float] = None, mode: Optional[str] = None, distribution: Optional[str] = None,
                 dtype: Optional[str] = None):
        if scale is not None:
            self.scale = scale
        if mode is not None:
            self.mode = mode
        if distribution is not None:
            self.distribution = distribution
        self.dtype = dtype or "float32"
        name = type(self).__name__
        if not self.scale > 0.0:
            raise ValueError(f"rf.init.{name}: scale must be a positive float, not {self.scale!r}")
        if self.mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError(f"rf.init.{name}: mode must be 'fan_in', 'fan_out' or 'fan_avg', not {self.mode!r}")
        if self.distribution not in ("normal", "truncated_normal", "untruncated_normal", "uniform"):
            raise ValueError(f"rf.init.{name}: distribution must be 'normal', 'truncated_normal', "
                             f"'untruncated_normal' or 'uniform', not {self.distribution!r}")

    def variance(self, dims: Sequence[Dim]) -> float:
        fan_in, fan_out = compute_fans(dims)
        fan = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        return self.scale / max(1.0, fan)

    def __call__(self, dims, dtype=None, *, sparse_dim=None, device=None, out=None) -> np.ndarray:
        shape, variance = _shape(dims), self.variance(dims)
        if self.distribution == "uniform":
            limit = math.sqrt(3.0 * variance)
            value = generator().uniform(-limit, limit, shape)
        elif self.distribution == "untruncated_normal":
            value = generator().standard_normal(shape) * math.sqrt(variance)
        else:
            value = truncated_normal(shape) * (math.sqrt(variance) / _TRUNCATED_STDDEV)
        return value.astype(dtype or self.dtype)

    def __repr__(self):
        return f"rf.init.{type(self).__name__}(scale={self.scale}, mode={self.mode!r}, " \
               f"distribution={self.distribution!r})"


class Glorot(VarianceScaling):
    """Xavier Glorot's: uniform, variance 1 / mean of the fans."""

    scale = 1.0
    mode = "fan_avg"
    distribution = "uniform"


class He(VarianceScaling):
    """Kaiming He's: (truncated) normal, variance 2 / fan in."""

    scale = 2.0
    mode = "fan_in"
    distribution = "normal"


HeNormal = He


class HeUniform(He):
    """He's variance, drawn uniformly."""

    distribution = "uniform"


def compute_fans(dims: Sequence[Dim]) -> Tuple[float, float]:
    """(fan in, fan out) of a parameter with `dims` (see the module docstring)."""
    sizes = _shape(dims)
    if not sizes:
        return 1, 1
    if len(sizes) == 1:
        return sizes[0], sizes[0]
    if len(sizes) == 2:
        return sizes[0], sizes[1]
    window = int(np.prod(sizes[2:]))
    return sizes[1] * window, sizes[0] * window


def truncated_normal(shape: Sequence[int]) -> np.ndarray:
    """Standard normal values, each outside [-2, 2] redrawn until it is inside."""
    value = generator().standard_normal(shape)
    outside = np.abs(value) > 2.0
    while outside.any():
        value[outside] = generator().standard_normal(int(outside.sum()))
        outside = np.abs(value) > 2.0
    return value


def _shape(dims: Sequence[Any]) -> list:
    sizes = []
    for dim in dims:
        if not isinstance(dim, Dim) or dim.size is None:
            raise ValueError(f"an initial value needs static Dims, not {dim!r} (in {list(dims)})")
        sizes.append(dim.size)
    return sizes
