"""Small tensors made once per traced graph: a chain of layers would otherwise trace the same Const (a dropout
rate, a zero, a [-1, n] reshape target) or the same Shape once per layer, and each traced op costs tracing,
instantiation and memory (about 0.3 ms and 7 KB per op on the benchmarks' 5000-layer chain). The per-graph memo
(`graph_memo`) also holds what other modules note about a graph: keep_mask's key count, loop_invariant's
loop-body mark and hoisted tensors."""

from __future__ import annotations

from typing import Any, Callable

import tensorflow as tf


def graph_memo(graph: Any = None) -> dict:
    """The memo of `graph` (default: the graph being traced), kept on the graph itself: it goes when the graph
    goes."""
    graph = tf.compat.v1.get_default_graph() if graph is None else graph
    memo = getattr(graph, "_netcompiler_memo", None)
    if memo is None:
        memo = graph._netcompiler_memo = {}
    return memo


def graph_once(key: Any, make: Callable[[], Any], graph: Any = None) -> Any:
    """`make()`; while tracing, made once per graph for `key` (outside any control dependencies, so that every
    user may share it) and kept in the graph's memo. `graph`: made there (default: the graph being traced)."""
    if tf.executing_eagerly():
        return make()
    graph = tf.compat.v1.get_default_graph() if graph is None else graph
    memo = graph_memo(graph)
    if key not in memo:
        with graph.as_default(), graph.control_dependencies(None):
            memo[key] = make()
    return memo[key]


def graph_constant(value: Any, dtype: Any) -> Any:
    """A constant of `value` (a number, or a tuple of numbers) as `dtype`: while tracing, the graph's one Const of
    that value and dtype (`graph_once`); eagerly a new tensor."""
    # repr: -0.0 and 0.0, 1 and True stay apart
    return graph_once(("constant", tf.as_dtype(dtype).name, repr(value)), lambda: tf.constant(value, dtype))


def graph_shape(raw: Any) -> Any:
    """``tf.shape(raw)``; while tracing, one Shape op per tensor, shared with the tensors `same_shape` named
    (followed without recursion: a chain of thousands of layers may name one another)."""
    if tf.executing_eagerly():
        return tf.shape(raw)
    memo = graph_memo()
    chain = []
    while ("shape", raw.ref()) not in memo:
        like = memo.get(("like", raw.ref()))
        if like is None:
            with tf.compat.v1.get_default_graph().control_dependencies(None):
                memo[("shape", raw.ref())] = tf.shape(raw)
            break
        chain.append(raw)
        raw = like
    shape = memo[("shape", raw.ref())]
    for tensor in chain:
        memo[("shape", tensor.ref())] = shape
    return shape


def same_shape(raw: Any, like: Any) -> None:
    """Notes that `raw` has `like`'s shape (an elementwise op's result): `graph_shape(raw)` is then like's, made
    when first asked for."""
    if not tf.executing_eagerly():
        graph_memo()[("like", raw.ref())] = like


__all__ = ["graph_constant", "graph_memo", "graph_once", "graph_shape", "same_shape"]
