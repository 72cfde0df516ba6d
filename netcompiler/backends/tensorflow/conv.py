"""The TensorFlow backend's convolution and pooling (channels last: [N, spatial..., C])."""

from __future__ import annotations

from typing import Any, Sequence

import tensorflow as tf


_CHANNELS_LAST = {1: "NWC", 2: "NHWC", 3: "NDHWC"}


class ConvOps:
    """N-D convolution and pooling with `tf.nn.convolution` and `tf.nn.pool`."""

    @classmethod
    def conv_raw(cls, raw: Any, filter_raw: Any, *, strides: Sequence[int], dilation_rate: Sequence[int],
                 padding: str, groups: int) -> Any:
        # TF infers the groups from the filter: input channels / the filter's input channels
        # the data format given: TF's eager gradient of a 3-D convolution fails on the default (None)
        if any(s > 1 for s in strides) and any(d > 1 for d in dilation_rate):
            return _strided_dilated_conv(raw, filter_raw, strides, dilation_rate, padding)
        return tf.nn.convolution(raw, filter_raw, strides=list(strides), padding=padding.upper(),
                                 dilations=list(dilation_rate), data_format=_CHANNELS_LAST[len(raw.shape) - 2])

    @classmethod
    def transposed_conv_raw(cls, raw: Any, filter_raw: Any, *, strides: Sequence[int]) -> Any:
        rank = len(raw.shape) - 2
        window = list(filter_raw.shape[:rank])
        shape = tf.shape(raw)
        out_shape = [shape[0]] + [(shape[1 + a] - 1) * strides[a] + window[a] for a in range(rank)] + \
            [tf.shape(filter_raw)[-1]]
        filters = tf.transpose(filter_raw, list(range(rank)) + [rank + 1, rank])  # TF wants [*window, C_out, C_in]
        return tf.nn.conv_transpose(raw, filters, tf.stack(out_shape), strides=list(strides), padding="VALID")

    @classmethod
    def pool_raw(cls, raw: Any, mode: str, pool_size: Sequence[int], *, strides: Sequence[int],
                 dilation_rate: Sequence[int], padding: str) -> Any:
        return tf.nn.pool(raw, list(pool_size), mode.upper(), strides=list(strides), padding=padding.upper(),
                          dilations=list(dilation_rate))


def _strided_dilated_conv(raw: Any, filter_raw: Any, strides: Sequence[int], dilation_rate: Sequence[int],
                          padding: str) -> Any:
    """What TF's convolution refuses (strides and dilations > 1 together): padded as TF pads for the strided
    convolution ('same': ceil(n / stride) frames), convolved with stride 1, then every stride-th frame."""
    rank = len(raw.shape) - 2
    if padding.lower() == "same":
        pads = [[0, 0]]
        for a in range(rank):
            n = tf.shape(raw)[1 + a]
            span = (filter_raw.shape[a] - 1) * dilation_rate[a] + 1
            total = tf.maximum(((n + strides[a] - 1) // strides[a] - 1) * strides[a] + span - n, 0)
            pads.append([total // 2, total - total // 2])
        raw = tf.pad(raw, pads + [[0, 0]])
    out = tf.nn.convolution(raw, filter_raw, strides=1, padding="VALID", dilations=list(dilation_rate),
                            data_format=_CHANNELS_LAST[rank])
    return out[(slice(None),) + tuple(slice(None, None, s) for s in strides)]
