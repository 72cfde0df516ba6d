"""Small tensors made once per traced graph: a chain of layers would otherwise trace the same Const (a dropout
rate, a zero, a [-1, n] reshape target) or the same Shape once per layer, and each traced op costs tracing,
instantiation and memory (about 0.3 ms and 7 KB per op on the benchmarks' 5000-layer chain)."""

from __future__ import annotations

import weakref
from typing import Any

import tensorflow as tf

_OF_GRAPH: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()


def _memo() -> dict:
    return _OF_GRAPH.setdefault(tf.compat.v1.get_default_graph(), {})


def graph_constant(value: Any, dtype: Any) -> Any:
    """A constant of `value` (a number, or a tuple of numbers) as `dtype`: while tracing, the graph's one Const of
    that value and dtype, made outside any control dependencies so that every user may share it; eagerly a new
    tensor."""
    if tf.executing_eagerly():
        return tf.constant(value, dtype)
    memo = _memo()
    key = ("constant", tf.as_dtype(dtype).name, repr(value))  # repr: -0.0 and 0.0, 1 and True stay apart
    if key not in memo:
        with tf.compat.v1.get_default_graph().control_dependencies(None):
            memo[key] = tf.constant(value, dtype)
    return memo[key]


def graph_shape(raw: Any) -> Any:
    """``tf.shape(raw)``; while tracing, one Shape op per tensor, shared with the tensors `same_shape` named."""
    if tf.executing_eagerly():
        return tf.shape(raw)
    memo = _memo()
    key = ("shape", raw.ref())
    if key not in memo:
        like = memo.get(("like", raw.ref()))
        memo[key] = tf.shape(raw) if like is None else graph_shape(like)
    return memo[key]


def same_shape(raw: Any, like: Any) -> None:
    """Notes that `raw` has `like`'s shape (an elementwise op's result): `graph_shape(raw)` is then like's, made
    when first asked for."""
    if not tf.executing_eagerly():
        _memo()[("like", raw.ref())] = like


__all__ = ["graph_constant", "graph_shape", "same_shape"]
