"""The TensorFlow backend's parameters (`tf.Variable`s, initial values from the forms configs use), the
container checkpoints save them through, and the input signature of compiled steps."""

from __future__ import annotations

import contextlib
from typing import Any, List, Sequence, Tuple

import tensorflow as tf

from ..initial_values import initial_values_else
from .initializers import make_initializer

_HANDLE_NAME = "variable"
"""The name every variable's handle op is created with (see `named_after_creation`)."""


def _rename_after_creation(next_creator, **kwargs):
    name = kwargs.get("name")
    if name is None:
        return next_creator(**kwargs)
    scope = tf.get_current_name_scope()
    kwargs["name"] = _HANDLE_NAME
    variable = next_creator(**kwargs)
    variable._handle_name = f"{scope}/{name}:0" if scope else f"{name}:0"  # what `variable.name` reports
    return variable


@contextlib.contextmanager
def named_after_creation():
    """Variables created inside get their names after creation, not from their handle op.

    TensorFlow gives an eager variable's `VarHandleOp` its name as an attribute (``debug_name``), so every new name
    instantiates and caches a kernel of its own: 0.6-1.7 ms per variable (more the more variables exist), against
    0.3 ms for a name seen before. Creating each variable under one fixed name and setting its name after gives the
    same `name`s (checkpoints go by object path, not by name) at half the creation time: a 400-layer chain's
    parameters and Adam slots 2.4 -> 1.2 CPU s (benchmarks/README.md, "build_profile.py")."""
    with tf.variable_creator_scope(_rename_after_creation):
        yield


class ParamOps:
    """Parameters as `tf.Variable`s."""

    @classmethod
    def initial_value_raw(cls, init: Any, shape: Sequence[int], dtype: str, seed: int, layer: str,
                          option: str) -> Any:
        return make_initializer(init, layer, option, seed=seed)(shape=list(shape), dtype=dtype)

    @classmethod
    def initial_values_raw(cls, requests: Sequence[Tuple[Any, Sequence[int], str, int, str, str]]) -> List[Any]:
        """Uniform and constant values drawn together with NumPy (`backends/initial_values.py`: bit for bit the
        Keras initializers' numbers), the others by the Keras initializers. An eager initializer call costs ~0.4 ms
        per parameter: the 5000-layer chain's 10000 took 3.7 CPU s, drawn together 0.7."""
        return initial_values_else(requests, cls.initial_value_raw, bit_identical_only=True)

    @classmethod
    def create_parameter_raw(cls, name: str, shape: Sequence[int], dtype: str, initial_value: Any,
                             trainable: bool) -> Any:
        with named_after_creation():
            return tf.Variable(initial_value, name=name, trainable=trainable, dtype=dtype)

    supports_parameter_groups = True

    @classmethod
    def create_parameter_group_raw(cls, names, values, dtype, trainable):
        from .param_groups import create_group

        return create_group(names, values, dtype, trainable)

    @classmethod
    def parameter_group_values_raw(cls, members):
        from .param_groups import members_values

        return members_values(members)

    @classmethod
    def parameter_storage_raw(cls, raw: Any) -> Any:
        return getattr(raw, "storage", raw)

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
