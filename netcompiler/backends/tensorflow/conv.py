"""The TensorFlow backend's convolution and pooling (channels last: [N, spatial..., C])."""

from __future__ import annotations

from typing import Any, Sequence

import tensorflow as tf


class ConvOps:
    """N-D convolution and pooling with `tf.nn.convolution` and `tf.nn.pool`."""

    @classmethod
    def conv_raw(cls, raw: Any, filter_raw: Any, *, strides: Sequence[int], dilation_rate: Sequence[int],
                 padding: str, groups: int) -> Any:
        # TF infers the groups from the filter: input channels / the filter's input channels
        return tf.nn.convolution(raw, filter_raw, strides=list(strides), padding=padding.upper(),
                                 dilations=list(dilation_rate))

    @classmethod
    def pool_raw(cls, raw: Any, mode: str, pool_size: Sequence[int], *, strides: Sequence[int],
                 dilation_rate: Sequence[int], padding: str) -> Any:
        return tf.nn.pool(raw, list(pool_size), mode.upper(), strides=list(strides), padding=padding.upper(),
                          dilations=list(dilation_rate))
