"""The TensorFlow backend: raw tensors are `tf.Tensor`s (eager, or symbolic inside `tf.function`)."""

from .backend import TensorFlowBackend

__all__ = ["TensorFlowBackend"]
