"""The TensorFlow backend's parameters (`tf.Variable`s, initial values from the forms configs use), the
container checkpoints save them through, and the input signature of compiled steps."""

from __future__ import annotations

from typing import Any, Sequence

import tensorflow as tf

from .initializers import make_initializer


class ParamOps:
    """Parameters as `tf.Variable`s."""

    @classmethod
    def initial_value_raw(cls, init: Any, shape: Sequence[int], dtype: str, seed: int, layer: str,
                          option: str) -> Any:
        return make_initializer(init, layer, option, seed=seed)(shape=list(shape), dtype=dtype)

    @classmethod
    def create_parameter_raw(cls, name: str, shape: Sequence[int], dtype: str, initial_value: Any,
                             trainable: bool) -> Any:
        return tf.Variable(initial_value, name=name, trainable=trainable, dtype=dtype)

    @classmethod
    def is_trainable(cls, raw: Any) -> bool:
        return bool(getattr(raw, "trainable", False))

    @classmethod
    def parameter_container(cls, params):
        """A `tf.Module` holding the parameters dict, for `tf.train.Checkpoint(model=...)` (variables are saved
        under "model/params/<name>")."""
        container = tf.Module(name="network")
        container.params = params
        return container

    @classmethod
    def input_signature(cls, extern):
        """TensorSpecs for extern data (batch and dynamic dims open) and their lengths, as two dicts."""
        inputs, lengths = {}, {}
        for key, data in extern.items():
            inputs[key] = tf.TensorSpec(data.batch_shape, tf.as_dtype(data.dtype), name=key)
            if data.time_dim is not None and data.time_dim.is_dynamic:
                lengths[key] = tf.TensorSpec([None], tf.int32, name=f"{key}_lengths")
        return inputs, lengths

    @classmethod
    def assign_raw(cls, variable, value) -> None:
        variable.assign(value)

    @classmethod
    def parameter_assign_raw(cls, param, value, op: str = "assign"):
        # read_value=False: the update op itself (None when eager), not a read after it
        update = {"assign": param.assign, "add": param.assign_add}[op]
        return update(value, read_value=False)
