"""Parameters: Tensors whose raw value is a backend variable, created from a shape and an initializer."""

from __future__ import annotations

from typing import Any, Sequence

from ..tensor import Data, Dim, Tensor


def create_parameter(backend, name: str, dims: Sequence[Dim], *, init: Any, dtype: str = "float32",
                     seed: int = 0, trainable: bool = True, layer: str = "", option: str = "") -> Tensor:
    """A new parameter `name` with static `dims`, initialised by `init` (a number, an initializer name, a call
    string or a dict; random ones drawn with `seed`)."""
    shape = [d.size for d in dims]
    value = backend.initial_value_raw(init, shape, dtype, seed, layer or name, option or name)
    raw = backend.create_parameter_raw(name, shape, dtype, value, trainable)
    return Tensor(Data(name, tuple(dims), dtype), raw)
