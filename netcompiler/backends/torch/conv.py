"""The PyTorch backend's convolution and pooling on TensorFlow's layout (channels last: [N, spatial..., C])
and TF's padding rules: "same" pads (window - 1) * dilation + 1 - stride-aligned frames, the smaller half
left; padded frames count neither in a max nor in an average."""

from __future__ import annotations

from typing import Any, List, Sequence, Tuple

import torch
import torch.nn.functional as F

_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
_CONV_TRANSPOSE = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}
_MAX_POOL = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}


def _same_padding(sizes: Sequence[int], window: Sequence[int], strides: Sequence[int],
                  dilation: Sequence[int]) -> List[Tuple[int, int]]:
    """TF's "SAME": output ceil(n / stride) frames; the total padding split with the smaller half left."""
    pads = []
    for n, k, s, d in zip(sizes, window, strides, dilation):
        span = (k - 1) * d + 1
        total = max((-(-n // s) - 1) * s + span - n, 0)
        pads.append((total // 2, total - total // 2))
    return pads


def _channels_first(raw: Any, pads: Sequence[Tuple[int, int]], value: float) -> Any:
    """[N, spatial..., C] -> [N, C, spatial...], padded by `pads` per spatial axis with `value`."""
    raw = torch.movedim(raw, -1, 1)
    flat = [n for left, right in reversed(pads) for n in (left, right)]
    return F.pad(raw, flat, value=value) if any(flat) else raw


class ConvOps:
    """N-D convolution and pooling with `torch.nn.functional`."""

    @classmethod
    def conv_raw(cls, raw: Any, filter_raw: Any, *, strides: Sequence[int], dilation_rate: Sequence[int],
                 padding: str, groups: int) -> Any:
        rank = raw.dim() - 2
        window = list(filter_raw.shape[:rank])
        pads = _same_padding(raw.shape[1:-1], window, strides, dilation_rate) if padding.lower() == "same" \
            else [(0, 0)] * rank
        weight = torch.movedim(torch.movedim(filter_raw, -1, 0), -1, 1)  # [C_out, C_in // groups, *window]
        out = _CONV[rank](_channels_first(raw, pads, 0.0), weight, stride=list(strides),
                          dilation=list(dilation_rate), groups=groups)
        return torch.movedim(out, 1, -1)

    @classmethod
    def transposed_conv_raw(cls, raw: Any, filter_raw: Any, *, strides: Sequence[int]) -> Any:
        rank = raw.dim() - 2
        weight = torch.movedim(torch.movedim(filter_raw, -1, 0), -1, 0)  # [C_in, C_out, *window]
        out = _CONV_TRANSPOSE[rank](torch.movedim(raw, -1, 1), weight, stride=list(strides))
        return torch.movedim(out, 1, -1)

    @classmethod
    def pool_raw(cls, raw: Any, mode: str, pool_size: Sequence[int], *, strides: Sequence[int],
                 dilation_rate: Sequence[int], padding: str) -> Any:
        rank = raw.dim() - 2
        pads = _same_padding(raw.shape[1:-1], pool_size, strides, dilation_rate) if padding.lower() == "same" \
            else [(0, 0)] * rank
        if mode == "max":
            x = _channels_first(raw, pads, float("-inf"))
            out = _MAX_POOL[rank](x, list(pool_size), stride=list(strides), dilation=list(dilation_rate))
            return torch.movedim(out, 1, -1)
        if mode != "avg":
            raise ValueError(f"unknown pooling mode {mode!r}")
        # an average over the real frames of each window: a sum of the padded input over a sum of ones
        channels = raw.shape[-1]
        ones = torch.ones(list(pool_size) + [1, channels], dtype=raw.dtype)
        total = _CONV[rank](_channels_first(raw, pads, 0.0), torch.movedim(torch.movedim(ones, -1, 0), -1, 1),
                            stride=list(strides), dilation=list(dilation_rate), groups=channels)
        real = _channels_first(torch.ones_like(raw[..., :1]), pads, 0.0)
        count = _CONV[rank](real, torch.ones([1, 1] + list(pool_size), dtype=raw.dtype), stride=list(strides),
                            dilation=list(dilation_rate))
        return torch.movedim(total / count, 1, -1)
