"""Flattening a tensor to its valid frames, for losses and metrics that must ignore padding."""

from __future__ import annotations

import tensorflow as tf

from ..tensor import Data
from . import ops


def frame_dims(data: Data):
    """The dims that index frames: all but the feature dim."""
    return [d for d in data.dims if d != data.feature_dim]


def valid_frames(ctx, data: Data, x: tf.Tensor) -> tf.Tensor:
    """`x` (laid out as `data`) as [N, feature] (or [N] without a feature dim): only the valid frames,
    batch-major, in time order."""
    frames = frame_dims(data)
    order = frames + ([data.feature_dim] if data.feature_dim is not None else [])
    x = ops.transpose_to(x, data.dims, order)
    frame_data = data.copy(dims=frames, feature_dim=None, sparse_dim=None)
    mask = tf.ones(tf.shape(x)[:len(frames)], dtype=tf.bool)
    for dim in frame_data.dynamic_dims:
        mask = tf.logical_and(mask, ctx.sequence_mask(frame_data, dim, x))
    return tf.boolean_mask(x, mask)
