"""Activation functions of RETURNN's frontend that the elementwise ops (`math.py`) do not name: `swish` (= silu),
`selu`, `relu_square`, `identity`, `log1p`, `expm1`, `floor`, `ceil`, `round`, `safe_log`, and
`gating` (GLU: one half of a dim times a gate of the other half)."""

from __future__ import annotations

from typing import Callable, Optional, Tuple

from ..tensor import Dim, Tensor
from .array import split
from .math import activation, clip_by_value, exp, log, relu, sigmoid, silu, square

swish = silu

_TINY = {"float16": 6e-08, "bfloat16": 9.1835e-41, "float32": 1.4013e-45, "float64": 4.9407e-324}
"""The smallest positive value of each float dtype: `safe_log` clips to it."""


def identity(x: Tensor) -> Tensor:
    return x


def selu(x: Tensor) -> Tensor:
    return activation(x, "selu")


def log1p(x: Tensor) -> Tensor:
    return activation(x, "log1p")


def floor(x: Tensor) -> Tensor:
    return activation(x, "floor")


def ceil(x: Tensor) -> Tensor:
    return activation(x, "ceil")


def round(x: Tensor) -> Tensor:  # noqa: A001 - RETURNN's name
    return activation(x, "round")


def expm1(x: Tensor) -> Tensor:
    """exp(x) - 1."""
    return exp(x) - 1.0


def relu_square(x: Tensor) -> Tensor:
    """relu(x) ** 2."""
    return square(relu(x))


def safe_log(x: Tensor, *, eps: Optional[float] = None) -> Tensor:
    """log of `x` clipped below to `eps` (default: the dtype's smallest positive value), so log(0) is finite."""
    if eps is None:
        eps = _TINY[x.dtype]
    return log(clip_by_value(x, eps, float("inf")))


def gating(x: Tensor, *, axis: Optional[Dim] = None, gate_func: Callable = sigmoid, act_func: Callable = identity,
           out_dim: Optional[Dim] = None) -> Tuple[Tensor, Dim]:
    """act_func(a) * gate_func(b) of the two halves a, b of `axis` (default the feature dim), and the half dim."""
    axis = axis or x.feature_dim
    if axis is None or axis.size is None or axis.size % 2:
        raise ValueError(f"gating: needs a static axis of even size; got {axis} of {x.data.describe()}")
    out_dim = out_dim or Dim(axis.size // 2, axis.kind, f"{axis.description}/2")
    a, b = split(x, axis=axis, out_dims=[out_dim, out_dim])
    return act_func(a) * gate_func(b), out_dim
