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
            return _strided_dilated(lambda x: cls.conv_raw(x, filter_raw, strides=[1] * len(strides),
                                                           dilation_rate=dilation_rate, padding=padding, groups=groups),
                                    raw, list(filter_raw.shape[:len(strides)]), strides, dilation_rate, padding)
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
        if any(s > 1 for s in strides) and any(d > 1 for d in dilation_rate):
            return _strided_dilated(lambda x: cls.pool_raw(x, mode, pool_size, strides=[1] * len(strides),
                                                           dilation_rate=dilation_rate, padding=padding),
                                    raw, pool_size, strides, dilation_rate, padding)
        return tf.nn.pool(raw, list(pool_size), mode.upper(), strides=list(strides), padding=padding.upper(),
                          dilations=list(dilation_rate))


def _strided_dilated(run, raw: Any, window: Sequence[int], strides: Sequence[int], dilation_rate: Sequence[int],
                     padding: str) -> Any:
    """What TF's convolution and pooling refuse (strides and dilations > 1 together): `run(raw)` (the op with
    stride 1, same padding mode), then the frames the strided op computes: every stride-th, from where its
    'same' padding (ceil(n / stride) frames, TF's split of the padding) puts the first window."""
    out = run(raw)
    index = [slice(None)]
    for a, stride in enumerate(strides):
        n = tf.shape(raw)[1 + a]
        if padding.lower() == "same":
            span = (window[a] - 1) * dilation_rate[a] + 1
            frames = (n + stride - 1) // stride
            total = tf.maximum((frames - 1) * stride + span - n, 0)
            start = (span - 1) // 2 - total // 2  # the strided op's first window in the stride-1 output
            index.append(slice(start, start + (frames - 1) * stride + 1, stride))
        else:
            index.append(slice(None, None, stride))
    return out[tuple(index)]
