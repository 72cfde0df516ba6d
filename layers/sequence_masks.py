"""Frames within each sequence's length: the sizes of a dynamic axis where they apply to a Tensor, and
comparisons and conditions laid out in that Tensor's dim order (for masks and fill values)."""

import functools
from typing import Any, List, Optional, Sequence

from netcompiler import frontend as rf
from netcompiler.tensor import Dim, Tensor


def sequence_sizes(run: rf.RunContext, x: Tensor, dim: Dim) -> Optional[Tensor]:
    """The sizes of `dim` if its sequences end at their own frames of `x` (a Tensor over dims of `x`, e.g. [B]);
    None if every sequence runs to the end of the axis (a static axis, or no batch axis in `x`)."""
    if not dim.is_dynamic:
        return None
    sizes = run.size(dim)
    if isinstance(sizes, Tensor) and sizes.dims and all(x.has_dim(d) for d in sizes.dims):
        return sizes
    return None


def _order_in(x: Tensor, *parts: Any) -> List[Dim]:
    """The dims of the Tensors among `parts`, in the order they have in `x` (which has them all): a result laid out
    in this order broadcasts against `x` without a transpose."""
    return [d for d in x.dims if any(isinstance(p, Tensor) and p.has_dim(d) for p in parts)]


def compare_in(x: Tensor, a: Any, kind: str, b: Any) -> Tensor:
    """a KIND b (see `rf.compare`), laid out in the order of `x`'s dims."""
    return rf.compare(a, kind, b, dim_order=_order_in(x, a, b))


def all_of(x: Tensor, conditions: Sequence[Tensor]) -> Tensor:
    """The conditions (bool Tensors over dims of `x`) and-ed, laid out in the order of `x`'s dims."""
    return functools.reduce(lambda a, b: rf.combine(a, "logical_and", b, dim_order=_order_in(x, a, b)), conditions)
