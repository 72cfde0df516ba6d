"""Which backend model code builds on: `select_backend_torch()` / `select_backend_tf()` (RETURNN's names), or the
backend of the run context in progress.

Model code creates its parameters when a module is constructed, usually before any run: the parameters' raw
values (torch.nn.Parameter, tf.Variable) come from the backend selected here.
"""

from __future__ import annotations

from typing import Optional

from ..backends import get_backend
from .run_ctx import current_run_ctx

_selected: Optional[type] = None


def select_backend(name: str) -> type:
    """Selects the backend called `name` ("torch", "tensorflow"/"tf") for model code; returns its class."""
    global _selected
    _selected = get_backend(name)
    return _selected


def select_backend_torch() -> type:
    return select_backend("torch")


def select_backend_tf() -> type:
    return select_backend("tensorflow")


def selected_backend() -> Optional[type]:
    """The backend chosen by `select_backend*`, or None."""
    return _selected


def model_backend(what: str = "this") -> type:
    """The backend that `what` (e.g. "rf.Parameter") builds on: the current run context's, else the selected one;
    a RuntimeError saying how to choose one if there is neither."""
    ctx = current_run_ctx()
    if ctx is not None:
        return ctx.backend
    if _selected is not None:
        return _selected
    raise RuntimeError(f"{what} needs a backend, but none is selected and no run context is active; call "
                       f"rf.select_backend_torch() or rf.select_backend_tf() first (a config's `backend` setting "
                       f"does this for get_model)")
