"""Nests of Tensors (Tensors in lists, tuples and dicts, as loops carry their state): flattening to a list and
packing a list back into the same structure. Dicts go by sorted key; a dict subclass (an `rf.State`) stays one."""

from __future__ import annotations

from typing import Any, List

from .tensor import Tensor


def flatten_tensors(nest: Any) -> List[Tensor]:
    """The Tensors of `nest` in a fixed order (lists and tuples in order, dicts by sorted key)."""
    if isinstance(nest, Tensor):
        return [nest]
    if isinstance(nest, (list, tuple)):
        return [t for item in nest for t in flatten_tensors(item)]
    if isinstance(nest, dict):
        return [t for key in sorted(nest) for t in flatten_tensors(nest[key])]
    raise TypeError(f"loop and cond values must be Tensors or lists, tuples and dicts of them, not {type(nest)}")


def pack_tensors(structure: Any, flat: List[Tensor]) -> Any:
    """`structure` with its Tensors replaced by `flat`, in `flatten_tensors`'s order."""
    it = iter(flat)

    def build(node):
        if isinstance(node, Tensor):
            return next(it)
        if isinstance(node, (list, tuple)):
            return type(node)(build(item) for item in node)
        if isinstance(node, dict):
            return type(node)({key: build(node[key]) for key in sorted(node)})
        return node  # a leaf that is no Tensor (None) stays

    return build(structure)
