"""Loading parameters by name from a checkpoint of any writer: the other backend, or RETURNN.

Three checkpoint formats hold parameters by name:

* netcompiler on TensorFlow: ``model/params/<name>`` of its object graph (``out/model.003.index`` / ``.data-*``,
  names with '/' where a frontend model has '.');
* netcompiler on PyTorch: the ``"model"`` state dict of ``out/model.003.pt``;
* RETURNN's TensorFlow backend ("returnn"): a name-based (TF1 ``Saver``) checkpoint, ``model.003.index`` /
  ``.data-*`` without an object graph, keyed by the variables' graph names. Those are netcompiler's parameter
  names for the layers whose names agree (see `tests/test_param_names.py`), in the same layouts (the LSTMs' W,
  W_re, b with RETURNN's gate order), so they load as they are. Its other variables ("global_step", the
  optimizer's slots "<param>/Adam", ...) are not parameters: they are left out; any other variable the network
  does not use gets a notice, as RETURNN ignores them too.

Where the network has one LSTM layout and the checkpoint the other for the same layer (RETURNN's native LSTM W,
W_re, b vs TF's LSTMCell kernel, bias), or the checkpoint has TF's GRUCell for a GRU, the values are converted
(`rnn_layouts`).

Each format has one reader giving ``{name: numpy array}``; `assign_by_name` checks names and shapes against the
network before assigning anything (naming the file, the parameters and both shapes) and assigns through the
backend. Only parameters cross over: an optimizer's state stays with its backend.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Dict, Iterable, List, Mapping, Optional

from ..errors import CheckpointError

TF_INDEX = ".index"
TORCH_SUFFIX = ".pt"  # torch_checkpoints.TORCH_SUFFIX (that module imports PyTorch)
RETURNN = "returnn"
"""The format of a name-based (TF1) checkpoint, as RETURNN's TensorFlow backend writes them."""
_MAX_NAMES = 12
_RETURNN_BOOKKEEPING = ("global_step", "learning_rate")


def checkpoint_stem(path: str) -> str:
    """`path` without a trailing ``.index`` or ``.meta`` (RETURNN accepts a checkpoint named by either file)."""
    for suffix in (TF_INDEX, ".meta"):
        if path.endswith(suffix) and os.path.exists(path[:-len(suffix)] + TF_INDEX):
            return path[:-len(suffix)]
    return path


def checkpoint_format(path: str) -> Optional[str]:
    """Who wrote checkpoint `path`: "tensorflow" (netcompiler, object graph), "returnn" (name-based ``<path>.index``),
    "torch" (``<path>`` ending in .pt or ``<path>.pt``); None when there is no such file."""
    path = checkpoint_stem(path)
    if os.path.exists(path + TF_INDEX):
        from .checkpoint_params import is_name_based

        return RETURNN if is_name_based(path) else "tensorflow"
    if (path.endswith(TORCH_SUFFIX) and os.path.isfile(path)) or os.path.isfile(path + TORCH_SUFFIX):
        return "torch"
    return None


def _normal(name: str) -> str:
    """A parameter's name as both formats can be compared by ('layer1.weight' and 'layer1/weight' are one)."""
    return name.replace(".", "/")


def _is_bookkeeping(name: str, saved: Iterable[str]) -> bool:
    """A variable of a RETURNN checkpoint that is no parameter: the step counter, the learning rate, an optimizer
    slot of a saved variable ("lstm/rec/W/Adam_1"), or the optimizer's own ("optimize/beta1_power")."""
    return (name in _RETURNN_BOOKKEEPING or name.startswith("optimize/")
            or any(name.startswith(other + "/") for other in saved if other != name))


def read_params(path: str, fmt: Optional[str] = None) -> Dict[str, Any]:
    """The parameters of checkpoint `path` as {normal name: numpy array} (a RETURNN checkpoint: all its variables
    but its bookkeeping)."""
    path = checkpoint_stem(path)
    fmt = fmt or checkpoint_format(path)
    if fmt is None:
        raise CheckpointError(f"checkpoint '{path}' does not exist (no file '{path}{TF_INDEX}', '{path}' or "
                              f"'{path}{TORCH_SUFFIX}')")
    if fmt == "tensorflow":
        from .checkpoint_params import read_tf_params

        saved = read_tf_params(path)
    elif fmt == RETURNN:
        from .checkpoint_params import read_name_based_params

        everything = read_name_based_params(path)
        saved = {name: value for name, value in everything.items() if not _is_bookkeeping(name, everything)}
    else:
        from .torch_checkpoints import read_torch_params

        saved = read_torch_params(path)
    return {_normal(name): value for name, value in saved.items()}


def _listed(names: List[str]) -> str:
    shown = names[:_MAX_NAMES] + ([f"... ({len(names) - _MAX_NAMES} more)"] if len(names) > _MAX_NAMES else [])
    return ", ".join(shown)


def _shape(value: Any) -> tuple:
    return tuple(int(n) for n in value.shape)


def assign_by_name(path: str, fmt: str, saved: Mapping[str, Any], params: Mapping[str, Any], backend, *,
                   sources: Optional[Mapping[str, str]] = None, ignore_missing: bool = False,
                   strict_extra: bool = False, what: str = "", log=None) -> List[str]:
    """Assigns `saved` (checkpoint `path`'s values by normal name, of format `fmt`) to `params` (network name ->
    the backend's parameter). `sources` maps a network name to the checkpoint name it is read from (default: the
    same name). Everything is checked before anything is assigned: a parameter missing in the checkpoint is an
    error (with `ignore_missing`: it keeps its value, with a notice; an error if none at all is found), so is a
    different shape; checkpoint parameters the network does not use are an error with `strict_extra`, else a
    notice. `what` says in messages what asked for the load (e.g. "preload_from_files entry 'a'").
    Returns the network names assigned."""
    from .rnn_layouts import convert_rnn_layouts

    log = log or sys.stderr
    sources = dict(sources) if sources is not None else {name: _normal(name) for name in params}
    where = f"checkpoint '{path}' (written by {'RETURNN' if fmt == RETURNN else f'backend {fmt!r}'})"
    lead = f"{what}: " if what else ""
    saved, converted, _ = convert_rnn_layouts(saved, sources.values())
    missing = [name if sources[name] == _normal(name) else f"{name} (from '{sources[name]}')"
               for name in sources if sources[name] not in saved]
    wrong_shape = [f"{name}: checkpoint {_shape(saved[source])}, network {_shape(params[name])}"
                   for name, source in sources.items()
                   if source in saved and _shape(saved[source]) != _shape(params[name])]
    used = set(sources.values())
    extra = sorted(name for name in saved if name not in used)
    parts = []
    if missing and not ignore_missing:
        parts.append(f"parameters of the network missing in the checkpoint: {_listed(missing)}")
    if extra and strict_extra:
        parts.append(f"parameters in the checkpoint that the network does not have: {_listed(extra)}")
    if wrong_shape:
        parts.append(f"parameters with a different shape: {_listed(wrong_shape)}")
    if parts:
        hint = ("; to keep the network's initial values of missing parameters, set ignore_missing (preload_from_"
                "files) or load_ignore_missing_vars = True" if missing and not ignore_missing else "")
        raise CheckpointError(f"{lead}{where} does not match the network; " + "; ".join(parts) + hint)
    found = [name for name, source in sources.items() if source in saved]
    if not found:
        raise CheckpointError(f"{lead}{where} holds none of the parameters to load ({_listed(sorted(sources))}); "
                              f"it holds: {_listed(sorted(saved)) or 'nothing'}")
    if missing:
        print(f"notice: {lead}{where} lacks {len(missing)} parameter(s), which keep their initial values: "
              f"{_listed(missing)}", file=log)
    if extra and not strict_extra and not what:
        print(f"notice: {where} holds parameters the network does not use (not loaded): {_listed(extra)}",
              file=log)
    for line in converted:
        print(f"notice: {lead}{where}: recurrent parameters converted: {line}", file=log)
    for name in found:
        backend.assign_raw(params[name], saved[sources[name]])
    return found


def load_params(path: str, params: Mapping[str, Any], backend, *, skip: Iterable[str] = (),
                ignore_missing: bool = False, log=None) -> str:
    """Loads the parameters of checkpoint `path` (any format) into `params` by name, except those in `skip`
    (already preloaded); returns the format. Checkpoints of netcompiler must match exactly (no extra
    parameters); RETURNN's may hold more (see the module)."""
    path = checkpoint_stem(path)
    fmt = checkpoint_format(path)
    saved = read_params(path, fmt)
    skip = set(skip)
    wanted = {name: param for name, param in params.items() if name not in skip}
    if not wanted:
        return fmt
    skipped = {_normal(name) for name in skip}
    saved = {name: value for name, value in saved.items() if name not in skipped}
    assign_by_name(path, fmt, saved, wanted, backend, ignore_missing=ignore_missing, strict_extra=fmt != RETURNN,
                   log=log)
    return fmt


def load_foreign_params(path: str, fmt: str, params: Mapping[str, Any], backend) -> None:
    """Assigns the parameters of checkpoint `path` (written by backend `fmt`) to `params` (checkpoint name ->
    the running backend's parameter), after checking that names and shapes agree."""
    assign_by_name(path, fmt, read_params(path, fmt), params, backend, strict_extra=fmt != RETURNN)


__all__ = ["RETURNN", "assign_by_name", "checkpoint_format", "checkpoint_stem", "load_foreign_params",
           "load_params", "read_params"]
