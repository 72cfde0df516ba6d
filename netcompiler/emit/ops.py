"""Small TF helpers that work on tensors laid out as a template (a `Data`) says."""

from __future__ import annotations

from typing import Callable, Sequence

import tensorflow as tf

from ..tensor import Data, Dim


def move_axis(x: tf.Tensor, source: int, destination: int) -> tf.Tensor:
    rank = x.shape.rank
    source %= rank
    destination %= rank
    if source == destination:
        return x
    perm = [i for i in range(rank) if i != source]
    perm.insert(destination, source)
    return tf.transpose(x, perm)


def shape_list(x: tf.Tensor) -> list:
    """The shape of `x`: Python ints where static, scalar int32 tensors where not."""
    dynamic = tf.shape(x)
    return [n if n is not None else dynamic[i] for i, n in enumerate(x.shape.as_list())]


def apply_on_axis(x: tf.Tensor, axis: int, fn: Callable[[tf.Tensor], tf.Tensor]) -> tf.Tensor:
    """`fn` applied with `axis` moved last (where TF's softmax & co. work), moved back after."""
    last = x.shape.rank - 1
    return move_axis(fn(move_axis(x, axis, last)), last, axis)


def add_on_axis(x: tf.Tensor, vector: tf.Tensor, axis: int) -> tf.Tensor:
    """`x + vector`, the vector broadcast along `axis` of `x`."""
    shape = [1] * x.shape.rank
    shape[axis] = -1
    return x + tf.reshape(vector, shape)


def transpose_to(x: tf.Tensor, have: Sequence[Dim], want: Sequence[Dim]) -> tf.Tensor:
    """`x` with dims `have` reordered to `want` (the same set of dims)."""
    have, want = list(have), list(want)
    if have == want:
        return x
    perm = [have.index(d) for d in want]
    return tf.transpose(x, perm)


def broadcast_to_dims(x: tf.Tensor, have: Sequence[Dim], want: Sequence[Dim]) -> tf.Tensor:
    """`x` (dims `have`, a subset of `want`) reordered and expanded with size-1 axes to be broadcastable to `want`."""
    have = list(have)
    missing = [d for d in want if d not in have]
    if not all(d in want for d in have):
        raise ValueError(f"cannot broadcast dims {have} to {list(want)}")
    ordered = transpose_to(x, have, [d for d in want if d in have])
    shape = tf.shape(ordered)
    out_shape = []
    i = 0
    for d in want:
        if d in missing:
            out_shape.append(1)
        else:
            out_shape.append(shape[i])
            i += 1
    return tf.reshape(ordered, tf.stack(out_shape)) if missing else ordered


def matmul_on_feature(data: Data, x: tf.Tensor, weights: tf.Tensor) -> tf.Tensor:
    """Contracts the feature axis of `x` (laid out as `data`) with `weights` [in, out]; the new axis stays in place."""
    axis = data.feature_dim_axis
    last = x.shape.rank - 1
    y = tf.linalg.matmul(move_axis(x, axis, last), weights) if x.shape.rank == 2 else tf.tensordot(
        move_axis(x, axis, last), weights, axes=[[last], [0]])
    return move_axis(y, last, axis)
