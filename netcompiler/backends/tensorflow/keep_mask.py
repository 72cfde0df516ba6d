"""Dropout's keep masks from 16 random bits per entry.

TensorFlow's ``RandomUniform`` spends 32 bits of Philox output on every float it draws, and dropout was a quarter
of a Transformer's train step, most of it those numbers (the attention weights' alone are B x H x T x T). A keep
decision needs far fewer bits: here each 32-bit draw of ``StatelessRandomUniformFullIntV2`` gives two 16-bit
numbers, and an entry is kept where its number is at least the rate times 2^16 (rounded), so half the random
numbers are drawn. The rate is then a multiple of 2^-16 (0.1 becomes 0.100006): kept values are still scaled by
1 / (1 - rate), as ``tf.nn.dropout`` and RETURNN scale them, so the expected value is off by at most 2^-17 /
(1 - rate) of the input (``tf.nn.dropout``'s own floats have 2^-23 steps).

The stateless kernel needs a key and a counter. Each traced graph draws one seed per run with TF's stateful
generator (which follows ``tf.random.set_seed``, as ``tf.random.uniform`` does) and derives its counter from it;
every mask of the graph has a key of its own (1, 2, 3, ... in tracing order), so that two masks of one step are
independent and one mask differs from step to step. A loop body is a graph of its own: its seed is drawn anew in
every iteration. Eagerly, every mask draws its own seed.

XLA's CPU code for the stateless kernels is slow (a step with them took 5x longer than with ``RandomUniform``):
a step traced for XLA (`float_masks`) draws a float per entry, as ``tf.nn.dropout`` does.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, Optional, Sequence, Tuple

import tensorflow as tf

from .graph_memo import graph_constant, graph_memo, graph_once

_PHILOX = 1  # the stateless kernels' algorithm id for Philox
_LEVELS = 1 << 16
_float_masks = [False]  # set while a step is traced for XLA


@contextlib.contextmanager
def float_masks() -> Iterator[None]:
    """Masks made inside draw a float per entry (for steps that XLA compiles: see the module doc)."""
    before, _float_masks[0] = _float_masks[0], True
    try:
        yield
    finally:
        _float_masks[0] = before


def _key_counter() -> Tuple[Any, Any]:
    """A key and a counter for this mask: see the module doc."""
    if tf.executing_eagerly():
        return _drawn_key_counter()
    counter = graph_once("random counter", lambda: _drawn_key_counter()[1])
    memo = graph_memo()
    memo["random keys"] = memo.get("random keys", 0) + 1
    return graph_constant((memo["random keys"],), tf.uint64), counter


def _drawn_key_counter() -> Tuple[Any, Any]:
    seed = tf.random.uniform([2], maxval=2 ** 31 - 1, dtype=tf.int32)
    return tf.raw_ops.StatelessRandomGetKeyCounter(seed=seed)


def _halved(shape: Any, axis: int, rank: int) -> Any:
    """`shape` with the size at `axis` halved; while tracing, once per shape tensor and axis (masks of one shape,
    e.g. of a chain of layers, share it)."""
    divisor = graph_constant(tuple(2 if i == axis else 1 for i in range(rank)), tf.int32)
    return graph_once(("halved", shape.ref(), axis), lambda: shape // divisor)


def keep_mask(shape: Any, static: Sequence[Optional[int]], rate: float) -> Any:
    """A bool mask of `shape`, True where an entry is kept (with probability 1 - rate). `shape` is the mask's
    shape as an int32 tensor, `static` its sizes where known (None elsewhere)."""
    threshold = min(int(round(rate * _LEVELS)), _LEVELS - 1)
    axis = next((i for i in reversed(range(len(static))) if static[i] is not None and static[i] % 2 == 0), None)
    if axis is None or _float_masks[0]:  # (no axis known to be of even size to draw half as many numbers along)
        return tf.random.uniform(shape) >= graph_constant(rate, tf.float32)
    if all(n is not None for n in static):
        half = graph_constant(tuple(n // 2 if i == axis else n for i, n in enumerate(static)), tf.int32)
    else:
        half = _halved(shape, axis, len(static))
    key, counter = _key_counter()
    bits = tf.raw_ops.StatelessRandomUniformFullIntV2(shape=half, key=key, counter=counter,
                                                     alg=graph_constant(_PHILOX, tf.int32), dtype=tf.uint32)
    numbers = tf.reshape(tf.bitcast(bits, tf.uint16), shape)  # any arrangement of independent bits is one
    return numbers >= graph_constant(threshold, tf.uint16)


__all__ = ["float_masks", "keep_mask"]
