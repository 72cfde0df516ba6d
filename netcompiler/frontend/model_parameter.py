"""`rf.Parameter`: a Tensor whose raw value is a parameter of the model's backend (a torch.nn.Parameter or a
tf.Variable), as RETURNN's frontend has it.

The raw parameter is made when the Parameter is constructed, on the backend `backend_select.model_backend()`
names; it starts as zeros and takes its `initial` value whenever that is set (a number, a NumPy array, a Tensor,
a raw tensor or an `rf.init` initializer). Its name is the attribute path under which a module holds it
(`Module.named_parameters`), so the Parameter itself carries none.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from ..backends import backend_of
from ..tensor import Data, Dim, Tensor
from .array import permute
from .backend_select import model_backend
from .init import ParamInit
from .parameters import parameter_assign


class Parameter(Tensor):
    """A model parameter with static `dims`; trainable by default if it is a float, unless `auxiliary` (running
    statistics)."""

    def __init__(self, dims: Sequence[Dim], dtype: Optional[str] = None, *, sparse_dim: Optional[Dim] = None,
                 trainable: Optional[bool] = None, auxiliary: bool = False, non_critical_for_restore: bool = False,
                 weight_decay: Optional[float] = 0.0, initial: Any = None):
        dims = tuple(dims)
        _check_dims(dims)
        dtype = dtype or ("int32" if sparse_dim is not None else "float32")
        backend = model_backend("rf.Parameter")
        if trainable is None:  # only float parameters get gradients
            trainable = not auxiliary and dtype.startswith(("float", "bfloat"))
        shape = [d.size for d in dims]
        super().__init__(Data("parameter", dims, dtype, sparse_dim=sparse_dim),
                         backend.create_parameter_raw("parameter", shape, dtype, np.zeros(shape, dtype), trainable))
        self._backend = backend
        self._trainable = bool(trainable)
        self.auxiliary = bool(auxiliary)
        self.non_critical_for_restore = bool(non_critical_for_restore)
        self.weight_decay = weight_decay or 0.0
        self._initial = None
        self.initial = initial

    def __copy__(self) -> "Parameter":
        """A new parameter like this one, initialised from the same `initial` (as in RETURNN: an `rf.init`
        initializer draws new values, so that copies of a module do not start equal); the value is not copied."""
        return Parameter(self.dims, self.dtype, sparse_dim=self.sparse_dim, trainable=self.trainable,
                         auxiliary=self.auxiliary, non_critical_for_restore=self.non_critical_for_restore,
                         weight_decay=self.weight_decay, initial=self.initial)

    def __deepcopy__(self, memo) -> "Parameter":
        return self.__copy__()

    @property
    def shape(self) -> tuple:
        return tuple(d.size for d in self.dims)

    # --- the initial value ----------------------------------------------------------------------------------
    @property
    def initial(self) -> Any:
        """What the parameter was initialised from (an `rf.init` object stays as given)."""
        return self._initial

    @initial.setter
    def initial(self, value: Any) -> None:
        self._initial = value
        if value is None:
            return
        self._backend.assign_raw(self.raw, self.value_array(value, "initial value"))

    def value_array(self, value: Any, what: str) -> np.ndarray:
        """`value` (see the module docstring) as a NumPy array of this parameter's shape and dtype; a ValueError
        naming the dims if it does not fit."""
        if isinstance(value, ParamInit):
            value = value(self.dims, self.dtype)
        if isinstance(value, Tensor):
            if value.raw is None:
                raise ValueError(f"{self!r}: the {what} {value!r} is a template without a value")
            if set(value.dims) != set(self.dims):
                raise ValueError(f"{self!r}: the {what} has dims {list(value.dims)}, but the parameter has "
                                 f"{list(self.dims)} (any order)")
            value = permute(value, self.dims).raw
        raw_backend = backend_of(value)
        array = np.asarray(raw_backend.to_numpy(value) if raw_backend is not None else value)
        if array.ndim == 0:
            array = np.broadcast_to(array, self.shape)
        if array.shape != self.shape:
            raise ValueError(f"{self!r}: the {what} has shape {array.shape}, but the parameter's dims "
                             f"{list(self.dims)} have shape {self.shape}; give a number, an array of that shape, "
                             f"a Tensor with these dims or an rf.init initializer")
        return np.array(array, dtype=self.dtype)

    # --- setting the value -----------------------------------------------------------------------------------
    def assign(self, value: Any) -> Any:
        """Sets the value: a Tensor with the parameter's dims (inside a run, e.g. running statistics; returns the
        update for `rf.with_dependencies`), or a number or array (at once)."""
        return self._update(value, "assign")

    def assign_add(self, value: Any) -> Any:
        """Adds `value` (as `assign` takes it) to the value."""
        return self._update(value, "add")

    def _update(self, value: Any, op: str) -> Any:
        if isinstance(value, Tensor):
            return parameter_assign(self, value, op=op)
        array = self.value_array(value, f"value to {op}")
        if op == "add":
            array = array + self._backend.to_numpy(self.raw)
        self._backend.assign_raw(self.raw, array)
        return None

    # --- flags ----------------------------------------------------------------------------------------------
    @property
    def trainable(self) -> bool:
        return self._trainable

    @trainable.setter
    def trainable(self, value: bool) -> None:
        """Remakes the raw parameter with the current value (a tf.Variable cannot change its trainability)."""
        if bool(value) == self._trainable:
            return
        current = np.array(self._backend.to_numpy(self.raw), dtype=self.dtype)
        self.raw = self._backend.create_parameter_raw("parameter", list(self.shape), self.dtype, current, bool(value))
        self._trainable = bool(value)

    def __repr__(self):
        return f"rf.Parameter({self.data.describe()}, {self.dtype})"


def _check_dims(dims: tuple) -> None:
    for dim in dims:
        if not isinstance(dim, Dim):
            raise TypeError(f"rf.Parameter: dims must be Dims, not {dim!r} (in {list(dims)})")
        if dim.size is None:
            raise ValueError(f"rf.Parameter: every dim must be static, but {dim} has no size (in {list(dims)})")
    if len(set(dims)) != len(dims):
        raise ValueError(f"rf.Parameter: a dim appears twice in {list(dims)}; use a second Dim of the same size")
