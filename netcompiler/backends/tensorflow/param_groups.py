"""Parameter groups: the equal parameters of many layers (e.g. every "W" of a chain of 5000 equal linear layers)
stored as one stacked `tf.Variable`, each layer's parameter a `GroupMember` (a slice of it by index).

TensorFlow holds ~35 KB per variable a train step updates (the variable, its captured handle, its read, its Adam
slots and their apply op): 1.9 GB for a 5000-layer chain's 10k variables before any layer is computed
(benchmarks/README.md, "chain_floor.py"). A group is one variable, one read and one update, whatever its size.

A member is what the network's parameter dict holds under the parameter's own name: checkpoints save it as a
variable of that name and shape (`_serialize_to_tensors`), so a checkpoint of a grouped network and one of the
same network without groups hold the same values under the same names; `numpy` and `assign` read and set the
member's slice. In a step, `members_values` reads the group once and gives each member's value.
"""

from __future__ import annotations

from typing import Any, List, Sequence

import numpy as np
import tensorflow as tf

from .params import named_after_creation

_Trackable = tf.__internal__.tracking.Trackable


class GroupMember(_Trackable):
    """Parameter `name`: entry `index` of the stacked variable `storage` (shape [members, *shape])."""

    def __init__(self, storage: tf.Variable, index: int, name: str):
        self.storage = storage
        """The group's variable: what the optimizer updates and gradients are taken of."""
        self.index = index
        self._name = name

    @property
    def name(self) -> str:
        return f"{self._name}:0"

    @property
    def shape(self) -> tf.TensorShape:
        return self.storage.shape[1:]

    @property
    def dtype(self) -> tf.DType:
        return self.storage.dtype

    @property
    def trainable(self) -> bool:
        return self.storage.trainable

    def value(self) -> tf.Tensor:
        """This member's current value (a read of the whole group: in a step, use `members_values`)."""
        return tf.gather(self.storage, self.index)

    def numpy(self) -> np.ndarray:
        return self.value().numpy()

    def assign(self, value: Any, read_value: bool = True) -> Any:
        """Sets this member's slice to `value` (the update op in a graph, None when eager with read_value False)."""
        return self._scatter(self.storage.scatter_update, value, read_value)

    def assign_add(self, value: Any, read_value: bool = True) -> Any:
        return self._scatter(self.storage.scatter_add, value, read_value)

    def _scatter(self, update, value: Any, read_value: bool) -> Any:
        value = tf.convert_to_tensor(value, dtype=self.dtype)
        if value.shape != self.shape:
            raise ValueError(f"cannot assign a value of shape {value.shape} to parameter '{self._name}' of shape "
                             f"{self.shape}")
        op = update(tf.IndexedSlices(value[tf.newaxis], tf.constant([self.index])))
        if read_value:
            return self.value()
        return None if tf.executing_eagerly() else op

    # --- checkpoints: saved as a variable of this name and shape ---------------------------------------------
    def _serialize_to_tensors(self):
        return {"VARIABLE_VALUE": self.value()}

    def _restore_from_tensors(self, restored_tensors):
        return self.assign(restored_tensors["VARIABLE_VALUE"], read_value=False)

    def __repr__(self) -> str:
        return f"<GroupMember '{self._name}' shape={self.shape.as_list()} of group {self.storage.name}>"


def create_group(names: Sequence[str], values: Sequence[Any], dtype: str, trainable: bool) -> List[GroupMember]:
    """One variable holding `values` (of equal shapes) stacked, and a member per name."""
    with named_after_creation():
        storage = tf.Variable(np.stack([np.asarray(v) for v in values]), name=f"group/{names[0]}", dtype=dtype,
                              trainable=trainable)
    return [GroupMember(storage, index, name) for index, name in enumerate(names)]


def members_values(members: Sequence[GroupMember]) -> List[tf.Tensor]:
    """The values of `members` (all of one group, in index order) from one read of their variable."""
    storage = members[0].storage
    if len(members) != storage.shape[0] or any(m.storage is not storage or m.index != i
                                               for i, m in enumerate(members)):
        raise ValueError("members_values: give all members of one group, in index order")
    return tf.unstack(storage.value(), num=len(members))
