"""`TorchBackend`: the `Backend` interface on PyTorch (eager), one mixin per family of operations."""

from ..base import Backend
from .conv import ConvOps
from .core import CoreOps
from .loop import LoopOps
from .losses import LossOps
from .norm import NormOps
from .params import ParamOps
from .recurrent import RecurrentOps
from .sequence import SequenceOps
from .user_code import UserCodeOps


class TorchBackend(CoreOps, ConvOps, LoopOps, LossOps, NormOps, ParamOps, RecurrentOps, SequenceOps, UserCodeOps, Backend):
    """Raw tensors are eager `torch.Tensor`s; control flow runs in Python. Every op computes what the
    TensorFlow backend's op of the same name computes (same dtypes, same gradients)."""

    name = "torch"
    executing_eagerly_always = True
