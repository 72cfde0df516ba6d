"""Backends: the raw operations of a framework behind the `Backend` interface (`base.py`).

`get_backend("tensorflow")` returns a backend by name; `backend_of(raw)` the
backend of a raw tensor. Frameworks are imported only when their backend is
first asked for.
"""

from __future__ import annotations

import importlib
from typing import Any, Dict, Optional

from ..errors import ConfigError, closest_match
from .base import Backend

# name -> (module, class); the module is imported on first use
_KNOWN = {
    "tensorflow": ("netcompiler.backends.tensorflow", "TensorFlowBackend"),
    "torch": ("netcompiler.backends.torch", "TorchBackend"),
}
_ALIASES = {"tf": "tensorflow", "pytorch": "torch"}
# the top-level module of a raw tensor's type -> backend name
_RAW_MODULES = {"tensorflow": "tensorflow", "keras": "tensorflow", "torch": "torch"}
_loaded: Dict[str, type] = {}


def get_backend(name: str) -> type:
    """The backend class called `name` ("tensorflow", "torch"); a ConfigError naming the choices if there is none."""
    name = _ALIASES.get(name, name)
    if name not in _KNOWN:
        guess = closest_match(str(name), _KNOWN)
        raise ConfigError(f"unknown backend {name!r} (backends: {', '.join(_KNOWN)})", subject="config key 'backend'",
                          suggestion=f"did you mean '{guess}'?" if guess else None)
    if name not in _loaded:
        module, cls = _KNOWN[name]
        _loaded[name] = getattr(importlib.import_module(module), cls)
    return _loaded[name]


_backend_of_type: Dict[type, Optional[type]] = {}
"""A raw value's type -> its backend (None: not a backend's tensor), filled by `backend_of`."""


def backend_of(raw: Any) -> Optional[type]:
    """The backend whose raw tensor `raw` is, or None for Python numbers, NumPy arrays and None."""
    kind = type(raw)
    if kind not in _backend_of_type:  # asked for nearly every op result: answered per type once
        name = _RAW_MODULES.get(kind.__module__.split(".", 1)[0])
        _backend_of_type[kind] = None if name is None else get_backend(name)
    return _backend_of_type[kind]


__all__ = ["Backend", "backend_of", "get_backend"]
