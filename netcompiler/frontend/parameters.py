"""Parameters: Tensors whose raw value is a backend variable, created from a shape and an initializer;
`parameter_assign` updates one inside a pass (running statistics)."""

from __future__ import annotations

from typing import Any, Sequence

from ..tensor import Data, Dim, Tensor
from ._dispatch import backend_for
from .array import permute


def create_parameter(backend, name: str, dims: Sequence[Dim], *, init: Any, dtype: str = "float32",
                     seed: int = 0, trainable: bool = True, layer: str = "", option: str = "",
                     initial_value: Any = None) -> Tensor:
    """A new parameter `name` with static `dims`, initialised by `init` (a number, an initializer name, a call
    string or a dict; random ones drawn with `seed`), or with `initial_value` where given (a raw value the backend
    drew for `init`: `initial_values_raw`)."""
    shape = [d.size for d in dims]
    value = initial_value if initial_value is not None else \
        backend.initial_value_raw(init, shape, dtype, seed, layer or name, option or name)
    raw = backend.create_parameter_raw(name, shape, dtype, value, trainable)
    return Tensor(Data(name, tuple(dims), dtype), raw)


def parameter_assign(param: Tensor, value: Tensor, *, op: str = "assign") -> Any:
    """Inside a pass: sets the parameter `param` to `value` (its dims, any order; op "assign") or adds `value`
    to it (op "add"). Returns the update for `with_dependencies` (None where it ran at once, in eager mode); reads
    of `param` made before this call see the old value."""
    if op not in ("assign", "add"):
        raise ValueError(f"parameter_assign: op must be 'assign' or 'add', not {op!r}")
    if value.dtype != param.dtype:
        raise TypeError(f"parameter_assign: {value.dtype} value for the {param.dtype} parameter {param.name!r}")
    return backend_for(param).parameter_assign_raw(param.raw, permute(value, param.dims).raw, op)
