"""Work on a loop-invariant tensor done once, before the loop: inside a `while_loop_raw` body, an op on a tensor
of the graph around the loop (e.g. the encoder an attention decoder reads in every step; the body would capture
it) is made in that graph, and the body captures its result instead (`transpose_raw`, `expand_dims_raw`).
Without this, the attention decoder of configs/attention-copy.py transposed the whole encoder, and its gradient
back, in every decoder step, and gave the encoder's mask a unit axis twice per step. Also
`in_loop_body`, for ops whose choice depends on running once per step."""

from __future__ import annotations

from typing import Any, Callable, Hashable, Iterator

import tensorflow as tf

from .graph_memo import graph_memo, graph_once

_BODY = "loop body"
"""Graph memo key: set in the body graphs of `while_loop_raw`."""


def loop_body(body: Callable) -> Callable:
    """`body` marking the graph it is traced into as a loop body (where `hoisted` may move work out)."""
    def marked(*args):
        if not tf.executing_eagerly():
            graph_memo()[_BODY] = True
        return body(*args)
    return marked


def hoisted(key: Hashable, raw: Any, make: Callable[[Any], Any]) -> Any:
    """`make(raw)`. In a loop body, where `raw` is a tensor of a graph around the loop (the body captures it when
    an op uses it) with only loops between, `make` runs in that graph, once per `key` and tensor; the body then
    captures the result."""
    if tf.executing_eagerly() or not isinstance(raw, tf.Tensor) or not hasattr(raw, "graph"):
        return make(raw)
    graph = tf.compat.v1.get_default_graph()
    if raw.graph is graph or not _inside_loop_of(graph, raw.graph):
        return make(raw)
    return graph_once(("hoisted", key, raw.ref()), lambda: make(raw), graph=raw.graph)


def in_loop_body() -> bool:
    """Whether the graph being traced is a loop body, or inside one (a `cond` branch in it): what runs there runs
    in every step, so a kernel's per-call overhead counts once per step."""
    return not tf.executing_eagerly() and any(map(_is_body, _outward(tf.compat.v1.get_default_graph())))


def _inside_loop_of(graph: Any, outer: Any) -> bool:
    """Whether `graph` is a loop body inside `outer`, with only loop bodies between them (hoisting out of a
    `cond` branch would run the op when the branch does not)."""
    for inner in _outward(graph):
        if inner is outer:
            return True
        if not _is_body(inner):
            return False
    return False


def _outward(graph: Any) -> Iterator[Any]:
    """`graph` and the graphs around it, innermost first."""
    while graph is not None:
        yield graph
        graph = getattr(graph, "outer_graph", None)


def _is_body(graph: Any) -> bool:
    return graph_memo(graph).get(_BODY, False)


__all__ = ["hoisted", "in_loop_body", "loop_body"]
