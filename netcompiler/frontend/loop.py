"""Per-step values of a `while_loop` whose length is not known before it runs, stacked afterwards.

    stack = rf.step_stack(template)                  # empty; carried in the loop's state
    stack = rf.step_stack_write(stack, i, value)     # in the loop body, at step i
    values = rf.step_stack_stack(stack, time_dim)    # after the loop: [time_dim, *template dims]

(`rf.scan` covers loops over a Dim whose length is known; this is for loops that stop by a condition.)
"""

from __future__ import annotations

from ..tensor import Data, Dim, Tensor
from ._dispatch import backend_for
from .array import permute


def step_stack(template: Data) -> Tensor:
    """An empty stack of per-step values laid out as `template` (a `while_loop` may carry it in its state)."""
    return Tensor(template, backend_for().step_stack_new_raw(template.dtype))


def step_stack_write(stack: Tensor, index: Tensor, value: Tensor) -> Tensor:
    """`stack` with `value` (the template's dims, any order) as entry `index` (a scalar int32 Tensor)."""
    if set(value.dims) != set(stack.dims) or value.dtype != stack.dtype:
        raise ValueError(f"step_stack_write: {value.data.describe()} {value.dtype} does not fit the stack's "
                         f"{stack.data.describe()} {stack.dtype}")
    backend = backend_for(index, value)
    return Tensor(stack.data, backend.step_stack_write_raw(stack.raw, index.raw, permute(value, stack.dims).raw))


def step_stack_stack(stack: Tensor, dim: Dim) -> Tensor:
    """The entries written, stacked along `dim` in front (its length: the number of steps written)."""
    raw = backend_for().step_stack_stack_raw(stack.raw)
    return Tensor(stack.data.copy(dims=(dim,) + stack.dims, time_dim=dim), raw)
