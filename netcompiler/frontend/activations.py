"""Activation functions of RETURNN's frontend that the elementwise ops (`math.py`) do not name: `swish` (= silu),
`selu`, `relu_square`, `identity`, `log1p`, `expm1`, `floor`, `ceil`, `round`, `safe_log`, and
`gating` (GLU: one half of a dim times a gate of the other half)."""

from __future__ import annotations

import math
from typing import Callable, Optional, Tuple

from ..tensor import Dim, Tensor
from .array import split
from .math import activation, exp, log, relu, sigmoid, silu, square, where

swish = silu

_TINY = {"float16": 6.1035e-05, "bfloat16": 1.1755e-38, "float32": 1.1755e-38, "float64": 2.2251e-308}
"""The smallest normal value of each float dtype (`safe_log`'s default floor; smaller, subnormal values may be
flushed to zero, as TensorFlow's CPU kernels do)."""


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
    """log of `x`, with values below `eps` (default: the dtype's smallest normal value) taken as `eps`: finite,
    and a zero gradient there (also in float32, where 1 / eps would overflow)."""
    if eps is None:
        eps = _TINY[x.dtype]
    large = x >= eps
    return where(large, log(where(large, x, 1.0)), math.log(eps))


def gating(x: Tensor, *, axis: Optional[Dim] = None, gate_func: Callable = sigmoid, act_func: Callable = identity,
           out_dim: Optional[Dim] = None) -> Tuple[Tensor, Dim]:
    """act_func(a) * gate_func(b) of the two halves a, b of `axis` (default the feature dim), and the half dim."""
    axis = axis or x.feature_dim
    if axis is None or axis.size is None or axis.size % 2:
        raise ValueError(f"gating: needs a static axis of even size; got {axis} of {x.data.describe()}")
    out_dim = out_dim or Dim(axis.size // 2, axis.kind, f"{axis.description}/2")
    a, b = split(x, axis=axis, out_dims=[out_dim, out_dim])
    return act_func(a) * gate_func(b), out_dim
