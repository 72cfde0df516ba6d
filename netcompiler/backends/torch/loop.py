"""The PyTorch backend's per-step accumulation for loops of unknown length: a Python list."""

from __future__ import annotations

from typing import Any

import torch


class LoopOps:
    """A stack of per-step values: a tuple of tensors (a new one per write, so earlier states stay valid)."""

    @classmethod
    def step_stack_new_raw(cls, dtype: str) -> Any:
        return ()

    @classmethod
    def step_stack_write_raw(cls, stack: Any, index: Any, value: Any) -> Any:
        index = int(index)
        if index == len(stack):
            return stack + (value,)
        if index > len(stack):
            raise IndexError(f"step stack: write at {index} after only {len(stack)} entries")
        return stack[:index] + (value,) + stack[index + 1:]

    @classmethod
    def step_stack_stack_raw(cls, stack: Any) -> Any:
        return torch.stack(list(stack), dim=0)

    @classmethod
    def step_frames_raw(cls, x: Any) -> Any:
        return torch.unbind(x, dim=0)  # one backward for all frames (indexing x per step: a full-size one each)

    @classmethod
    def step_frame_raw(cls, frames: Any, index: Any) -> Any:
        return frames[int(index)]
