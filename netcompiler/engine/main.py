"""`compile-net`'s tasks: train (resuming where a run stopped), eval, forward, search, export -- the entry
`run_task`: the config checked, the network built, a `Session` (module `session`) run, storage problems turned
into the user's errors."""

from __future__ import annotations

import sys
from typing import Optional, Sequence

from ..builtin import load_builtin_layers
from ..config import Config, load_config
from ..dump import format_text
from ..errors import ConfigError, InvalidOptionError, ModelFolderError
from ..network import build_network
from .epoch_networks import task_network_config
from .frontend_model import is_frontend_config
from .session import Session, backend_name  # noqa: F401  (cli imports backend_name from here)


def run_task(config_path: str, overrides: Sequence[str] = (), task: Optional[str] = None, log=None) -> int:
    log = log or sys.stdout  # looked up per call: sys.stdout may have been replaced since import
    load_builtin_layers()
    config = load_config(config_path, overrides)
    try:
        return _run_task(config, task, log)
    except ConfigError as exc:  # about a top-level setting: say where it is set
        config.locate(exc)
        raise


TASKS = ("train", "eval", "forward", "search", "export")


def _run_task(config: Config, task: Optional[str], log) -> int:
    task = task or config.get("task", "train")
    if task not in TASKS:
        raise InvalidOptionError(f"task {task!r} unknown", subject="config key 'task'",
                                 suggestion=f"use one of {', '.join(TASKS)}")
    config.check_refused()  # settings that would silently change the result
    frontend = is_frontend_config(config.values)  # the model as Python code (get_model): no network dict
    if frontend and task == "search":
        raise ConfigError("--task search needs a layer-dict network; this config defines its model with "
                          "get_model", subject="config", suggestion="use --task forward with a forward_step")
    if task == "export":
        _check_exportable(config, frontend)
    network = None if frontend else build_network(task_network_config(config, task), search=task == "search")
    if task == "search":
        _build_search_output(network, config.get("search_output_layer", "output"))
    for notice in config.notices + (network.notices if network is not None else []):
        print(f"notice: {notice}", file=sys.stderr)
    if network is not None:
        print(format_text(network), file=log)
    session = Session(config, network, log, task)
    if frontend:
        from .frontend_dump import format_frontend_text

        print(format_frontend_text(session.model), file=log)
    try:
        if task == "train":
            session.train()
        elif task == "eval":
            session.evaluate()
        elif task == "search":
            session.search()
        elif task == "export":
            session.export()
        else:
            session.forward()
    except Exception as exc:
        problem = _storage_problem(exc, session.model_prefix, session.backend)
        if problem is None:
            raise
        raise problem from None
    finally:
        session.close()
    return 0


def _check_exportable(config: Config, frontend: bool) -> None:
    """--task export writes a TensorFlow SavedModel of a layer-dict network: other configs are refused up front."""
    if frontend:
        raise ConfigError("--task export writes a SavedModel of a layer-dict network; this config defines its model "
                          "with get_model, which cannot be exported yet", subject="config",
                          suggestion="use --task forward with a forward_step; export works for configs with a "
                                     "'network' dict on backend 'tensorflow'")
    if backend_name(config) == "torch":
        raise ConfigError("--task export writes a TensorFlow SavedModel; backend 'torch' cannot export yet",
                          subject="config key 'backend'",
                          suggestion="export with backend = 'tensorflow' and load = '<model>.NNN.pt' (the torch "
                                     "checkpoint's parameters are read by name)")


def _build_search_output(network, name) -> None:
    """Builds the search output layer if no loss or output flag made the network build it."""
    if isinstance(name, str) and name in network.net_dict and name not in network.layers:
        network.build([name])


def _storage_problem(exc: BaseException, model_prefix: str, backend: str) -> Optional[ModelFolderError]:
    """A full disk or an unwritable file met outside the checkpoint writer (history, TensorBoard, forward
    output), as the user's error naming the path and the newest complete checkpoint of `backend`; None for
    anything else. Loads no framework: every error of a run passes here, also a PyTorch run's."""
    from .checkpoint_files import _first_line, latest_complete
    from .checkpoint_interchange import TORCH_SUFFIX
    from .checkpoint_manager_base import last_complete_text, storage_failure

    failure = storage_failure(exc)
    if failure is None:
        return None
    where = getattr(exc, "filename", None)
    what = f"'{where}'" if where else f"a file ({_first_line(exc)})"
    try:
        last = last_complete_text(latest_complete(model_prefix, TORCH_SUFFIX if backend == "torch" else ""))
    except Exception:  # the folder itself may be unreadable
        last = "no complete checkpoint was found"
    if failure == "disk full":
        return ModelFolderError(f"the disk is full: cannot write {what}; {last}; free some space and run again",
                                path=where, reason=failure)
    return ModelFolderError(f"cannot write {what}: {exc.strerror}; {last}", path=where, reason=failure)
