"""The PyTorch backend's ops over the frames of one axis."""

from __future__ import annotations

from typing import Any

import torch


class SequenceOps:
    """Sliding windows like `tf.signal.frame` (whole windows only)."""

    @classmethod
    def frame_raw(cls, raw: Any, size: int, stride: int, axis: int) -> Any:
        axis = axis % raw.dim()
        length = raw.shape[axis]
        if length < size:  # no whole window: zero of them
            shape = list(raw.shape)
            shape[axis:axis + 1] = [0, size]
            return raw.new_zeros(shape)
        return torch.movedim(raw.unfold(axis, size, stride), -1, axis + 1)
