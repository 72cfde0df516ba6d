"""The PyTorch backend's normalisation kernels: layer norm over the last axis as `F.layer_norm` (one kernel each
way, where the composed form -- mean, squared difference, mean, rsqrt, products -- is about ten ops forward and
more backward, all over the full activation)."""

from __future__ import annotations

from typing import Any, Optional

import torch
import torch.nn.functional as F


class NormOps:
    """`layer_norm_raw` (see `Backend.layer_norm_raw`); None under bfloat16 autocast, where the composed form sums
    in float32 (mean, variance) but takes the deviations from the mean in bfloat16, as its input (the mean is cast
    down next to it: core._autocast_pair; TF's rewrite keeps that math in float32), and for dtypes other than
    float32/float64."""

    @classmethod
    def layer_norm_raw(cls, raw: Any, scale: Any, bias: Any, eps: float) -> Optional[Any]:
        tensors = [raw, scale] + ([] if bias is None else [bias])
        if torch.is_autocast_enabled("cpu") or {t.dtype for t in tensors} - {raw.dtype} or \
                raw.dtype not in (torch.float32, torch.float64):
            return None
        return F.layer_norm(raw, raw.shape[-1:], scale, bias, eps)
