"""The PyTorch backend's ops over the frames of one axis."""

from __future__ import annotations

from typing import Any

import torch


class _GatherInvolution(torch.autograd.Function):
    """torch.gather along `axis` by an index that is its own inverse (each sequence reversed within its length):
    the gradient is the same gather of the incoming gradient (gather's own backward scatter-adds into zeros)."""

    @staticmethod
    def forward(ctx, raw, axis, index):
        ctx.axis = axis
        ctx.save_for_backward(index)
        return torch.gather(raw, axis, index)

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        return torch.gather(grad, ctx.axis, index), None, None


class SequenceOps:
    """Sliding windows like `tf.signal.frame` (whole windows only); each sequence reversed within its length."""

    @classmethod
    def frame_raw(cls, raw: Any, size: int, stride: int, axis: int) -> Any:
        axis = axis % raw.dim()
        length = raw.shape[axis]
        if length < size:  # no whole window: zero of them
            shape = list(raw.shape)
            shape[axis:axis + 1] = [0, size]
            return raw.new_zeros(shape)
        return torch.movedim(raw.unfold(axis, size, stride), -1, axis + 1)

    @classmethod
    def reverse_sequence_raw(cls, raw: Any, lengths: Any, seq_axis: int, batch_axis: int) -> Any:
        steps = raw.shape[seq_axis]
        lengths = lengths.to(torch.int64).reshape(-1, 1)
        if steps and bool(torch.all(lengths >= steps)):  # every sequence full: one flip
            return torch.flip(raw, [seq_axis])
        pos = torch.arange(steps).reshape(1, -1)
        source = torch.where(pos < lengths, lengths - 1 - pos, pos)  # [B, T]
        shape = [1] * raw.dim()
        shape[batch_axis], shape[seq_axis] = source.shape[0], steps
        if batch_axis > seq_axis:
            source = source.t()
        return _GatherInvolution.apply(raw, seq_axis, source.reshape(shape).expand(raw.shape))
