"""Control flow on Tensors: `cond` and `while_loop` (nests of Tensors in and out, templates kept); run-time
checks (`assert_equal`) and what must wait for them (`with_dependencies`)."""

from __future__ import annotations

from typing import Any, Callable, List, Sequence

from ..tensor import Tensor
from ._dispatch import backend_for
from .array import permute


def _flatten(nest: Any) -> List[Tensor]:
    if isinstance(nest, Tensor):
        return [nest]
    if isinstance(nest, (list, tuple)):
        return [t for item in nest for t in _flatten(item)]
    if isinstance(nest, dict):
        return [t for key in sorted(nest) for t in _flatten(nest[key])]
    raise TypeError(f"loop and cond values must be Tensors or lists, tuples and dicts of them, not {type(nest)}")


def _pack(structure: Any, flat: List[Tensor]) -> Any:
    it = iter(flat)

    def build(node):
        if isinstance(node, Tensor):
            return next(it)
        if isinstance(node, (list, tuple)):
            return type(node)(build(item) for item in node)
        return {key: build(node[key]) for key in sorted(node)}

    return build(structure)


def _rewrap(templates: List[Tensor], raws) -> List[Tensor]:
    return [Tensor(t.data, r) for t, r in zip(templates, raws)]


def cond(pred: Any, true_fn: Callable[[], Any], false_fn: Callable[[], Any]) -> Any:
    """`true_fn()` if `pred` else `false_fn()`; both must return the same structure of Tensors with the same
    templates. A Python bool chooses at once."""
    if isinstance(pred, bool):
        return true_fn() if pred else false_fn()
    backend = backend_for(pred)
    structure = {}

    def branch(fn, key):
        def run():
            out = fn()
            structure[key] = out
            return [t.raw for t in _flatten(out)]
        return run

    raws = backend.cond_raw(pred.raw, branch(true_fn, "true"), branch(false_fn, "false"))
    out = structure["true"]
    return _pack(out, _rewrap(_flatten(out), raws))


def while_loop(cond: Callable[[Any], Any], body: Callable[[Any], Any], initial: Any) -> Any:
    """Runs `state = body(state)` while `cond(state)`; the state is a nest of Tensors whose templates do not
    change from step to step."""
    backend = backend_for(*_flatten(initial))
    templates = _flatten(initial)

    def unpack(raws):
        return _pack(initial, _rewrap(templates, raws))

    def raw_cond(*raws):
        result = cond(unpack(raws))
        return result.raw if isinstance(result, Tensor) else result

    def raw_body(*raws):
        new = _flatten(body(unpack(raws)))
        for before, after in zip(templates, new):
            if before.dims != after.dims or before.dtype != after.dtype:
                raise ValueError(f"while_loop: the state {before.data.describe()} became {after.data.describe()}")
        return [t.raw for t in new]

    raws = backend.while_loop_raw(raw_cond, raw_body, [t.raw for t in templates])
    return unpack(raws)


def assert_equal(a: Tensor, b: Tensor, *, message: str) -> Any:
    """A check that `a` and `b` (the same dims, any order) are equal everywhere, failing with `message` when it
    runs. Returns the check for `with_dependencies` (None where it ran at once, in eager mode)."""
    backend = backend_for(a, b)
    return backend.assert_equal_raw(a.raw, permute(b, a.dims).raw, message)


def with_dependencies(x: Tensor, checks: Sequence[Any]) -> Tensor:
    """`x`, available only after `checks` (from `assert_equal`) have passed."""
    checks = [c for c in checks if c is not None]
    if not checks:
        return x
    return Tensor(x.data, backend_for(x).with_dependencies_raw(x.raw, checks))
