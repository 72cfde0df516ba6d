"""The PyTorch backend's parameters (`torch.nn.Parameter`s) and the module checkpoints save them through.

Initial values are the TensorFlow backend's: drawn with NumPy as its Keras initializers draw them
(`backends/initial_values.py`, no TensorFlow loaded), or, for what that does not reimplement, by those
initializers themselves: the same config and seed start from the same numbers on both backends.
"""

from __future__ import annotations

from typing import Any, List, Sequence, Tuple

import numpy as np
import torch

from .core import torch_dtype


class ParamOps:
    """Parameters as `torch.nn.Parameter`s (requires_grad: trainable float parameters)."""

    @classmethod
    def initial_value_raw(cls, init: Any, shape: Sequence[int], dtype: str, seed: int, layer: str,
                          option: str) -> Any:
        return cls.initial_values_raw([(init, shape, dtype, seed, layer, option)])[0]

    @classmethod
    def initial_values_raw(cls, requests: Sequence[Tuple[Any, Sequence[int], str, int, str, str]]) -> List[Any]:
        from ..initial_values import initial_values_else

        values = initial_values_else(requests, _keras_value)
        return [torch.from_numpy(np.asarray(value, dtype=request[2]))  # (no copy of the fresh array)
                for request, value in zip(requests, values)]

    @classmethod
    def create_parameter_raw(cls, name: str, shape: Sequence[int], dtype: str, initial_value: Any,
                             trainable: bool) -> Any:
        value = initial_value.detach().to(torch_dtype(dtype)).clone() if torch.is_tensor(initial_value) else \
            torch.from_numpy(np.array(initial_value, dtype=dtype))
        value = value.reshape(list(shape))
        return torch.nn.Parameter(value, requires_grad=bool(trainable) and value.dtype.is_floating_point)

    @classmethod
    def is_trainable(cls, raw: Any) -> bool:
        return bool(raw.requires_grad)

    @classmethod
    def parameter_container(cls, params):
        """A `torch.nn.Module` whose `params` (a ParameterDict) hold the parameters themselves: its state dict
        names them "params.<name>", with each "." of a name (a frontend module's "layer1.weight") written "::"
        (torch keeps "." for its own nesting). Checkpoints save the parameters by their own names, not this."""
        container = torch.nn.Module()
        container.params = torch.nn.ParameterDict({name.replace(".", "::"): p for name, p in params.items()})
        return container

    @classmethod
    def input_signature(cls, extern):
        return None  # eager: nothing is traced

    @classmethod
    def assign_raw(cls, variable, value) -> None:
        with torch.no_grad():
            variable.copy_(torch.as_tensor(np.asarray(value)) if not torch.is_tensor(value) else value)

    @classmethod
    def parameter_assign_raw(cls, param, value, op: str = "assign"):
        with torch.no_grad():
            {"assign": param.copy_, "add": param.add_}[op](value.detach())
        return None  # done at once


def _keras_value(init: Any, shape: Sequence[int], dtype: str, seed: int, layer: str, option: str) -> np.ndarray:
    """What `backends/initial_values.py` does not reimplement: TensorFlow's initializer (loads TensorFlow)."""
    from ..tensorflow.initializers import make_initializer

    return make_initializer(init, layer, option, seed=seed)(shape=list(shape), dtype=dtype).numpy()
