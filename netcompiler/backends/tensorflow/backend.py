"""`TensorFlowBackend`: the `Backend` interface on TensorFlow, one mixin per family of operations."""

from ..base import Backend
from .conv import ConvOps
from .core import CoreOps
from .loop import LoopOps
from .losses import LossOps
from .params import ParamOps
from .recurrent import RecurrentOps
from .sequence import SequenceOps
from .user_code import UserCodeOps


class TensorFlowBackend(CoreOps, ConvOps, LoopOps, LossOps, ParamOps, RecurrentOps, SequenceOps, UserCodeOps,
                        Backend):
    """Raw tensors are `tf.Tensor`s; runs eagerly or inside `tf.function` (graph)."""

    name = "tensorflow"
