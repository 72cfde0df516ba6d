"""The TensorFlow backend's per-step accumulation for loops of unknown length: `tf.TensorArray`."""

from __future__ import annotations

from typing import Any

import tensorflow as tf


class LoopOps:
    """A stack of per-step values that a `tf.while_loop` carries as one of its loop variables."""

    @classmethod
    def step_stack_new_raw(cls, dtype: str) -> Any:
        return tf.TensorArray(tf.as_dtype(dtype), size=0, dynamic_size=True, clear_after_read=False)

    @classmethod
    def step_stack_write_raw(cls, stack: Any, index: Any, value: Any) -> Any:
        return stack.write(index, value)

    @classmethod
    def step_stack_stack_raw(cls, stack: Any) -> Any:
        return stack.stack()

    @classmethod
    def step_frames_raw(cls, x: Any) -> Any:
        # a TensorArray's gradient is one frame per read (a tf.gather's is all of x at every step)
        return tf.TensorArray(x.dtype, size=tf.shape(x)[0], element_shape=x.shape[1:]).unstack(x)

    @classmethod
    def step_frame_raw(cls, frames: Any, index: Any) -> Any:
        return frames.read(index)
