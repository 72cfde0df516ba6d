"""Loading the parameters of a checkpoint written by the other backend (TensorFlow <-> PyTorch).

Both backends save the parameters by the same checkpoint names: TensorFlow under ``model/params/<name>`` of its
object graph (``out/model.003.index`` / ``.data-*``, names with '/' where a frontend model has '.'), PyTorch in
the ``"model"`` state dict of ``out/model.003.pt``. Each format has one reader giving ``{name: numpy array}``
(`checkpoints.read_tf_params`, `torch_checkpoints.read_torch_params`); here the names and shapes are checked
against the network (all or nothing, naming the file and the differing parameters) and the values assigned
through the backend. Only parameters cross over: an optimizer's state stays with its backend.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Mapping, Optional

from ..errors import CheckpointError

TF_INDEX = ".index"
TORCH_SUFFIX = ".pt"  # torch_checkpoints.TORCH_SUFFIX (that module imports PyTorch)


def checkpoint_format(path: str) -> Optional[str]:
    """The backend that wrote checkpoint `path` ("tensorflow" for ``<path>.index``, "torch" for ``<path>`` ending
    in .pt or ``<path>.pt``), or None when there is no such file."""
    if os.path.exists(path + TF_INDEX):
        return "tensorflow"
    if (path.endswith(TORCH_SUFFIX) and os.path.isfile(path)) or os.path.isfile(path + TORCH_SUFFIX):
        return "torch"
    return None


def _normal(name: str) -> str:
    """A parameter's name as both formats can be compared by ('layer1.weight' and 'layer1/weight' are one)."""
    return name.replace(".", "/")


def load_foreign_params(path: str, fmt: str, params: Mapping[str, Any], backend) -> None:
    """Assigns the parameters of checkpoint `path` (written by backend `fmt`) to `params` (checkpoint name ->
    the running backend's parameter), after checking that names and shapes agree."""
    from .torch_checkpoints import _describe_shapes, read_torch_params  # either direction needs PyTorch

    if fmt == "tensorflow":
        from .checkpoints import read_tf_params

        saved = read_tf_params(path)
    else:
        saved = read_torch_params(path)
    saved_by_normal: Dict[str, Any] = {_normal(name): value for name, value in saved.items()}
    live_by_normal: Dict[str, Any] = {_normal(name): param for name, param in params.items()}
    parts = _describe_shapes(saved_by_normal, live_by_normal)
    if parts:
        raise CheckpointError(f"checkpoint '{path}' (written by backend '{fmt}') does not match the network; "
                              + "; ".join(parts))
    for name, param in params.items():
        backend.assign_raw(param, saved_by_normal[_normal(name)])


__all__ = ["checkpoint_format", "load_foreign_params"]
