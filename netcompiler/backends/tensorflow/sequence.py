"""The TensorFlow backend's ops over the frames of one axis."""

from __future__ import annotations

from typing import Any

import tensorflow as tf


class SequenceOps:
    """Sliding windows with `tf.signal.frame`."""

    @classmethod
    def frame_raw(cls, raw: Any, size: int, stride: int, axis: int) -> Any:
        return tf.signal.frame(raw, size, stride, axis=axis)
