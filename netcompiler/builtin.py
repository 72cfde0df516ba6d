"""Loading the project's own layer catalogue (the top-level `layers` package), explicitly.

Layer and loss classes register themselves when their module is imported.
The core never imports the catalogue to fill its registries (that would be an
upward arrow, and a config defining its own layer class made the registry
non-empty so that the built-in classes were never loaded). Instead every entry
point (the command-line tools, the engine, tests, benchmarks, tools) calls
`load_builtin_layers()` once, before building a network.

The catalogue is the `layers` folder beside the `netcompiler` package (true
for a checkout, an editable install and an installed wheel alike). A plain
`import layers` may find something else: a user's own `layers.py` in the
folder `python -m netcompiler.cli` runs in comes first on `sys.path`. Then the
catalogue is loaded from its folder under the private name `BY_PATH_NAME`,
and the user's module stays untouched.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from types import ModuleType
from typing import Optional

CATALOGUE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "layers")
"""Where the project's catalogue is: the folder `layers` beside the `netcompiler` package."""
CATALOGUE_INIT = os.path.join(CATALOGUE_DIR, "__init__.py")
BY_PATH_NAME = "netcompiler_builtin_layers"
"""The module name the catalogue gets when `import layers` would find another module."""

_loaded: Optional[ModuleType] = None


def load_builtin_layers() -> ModuleType:
    """Imports the built-in layer and loss classes (once; later calls return the same module)."""
    global _loaded
    if _loaded is None:
        _loaded = _import_catalogue()
    return _loaded


def is_builtin_module(name: str) -> bool:
    """Whether module `name` (e.g. a class's `__module__`) is part of the project's catalogue."""
    top = sys.modules.get(name.partition(".")[0])
    return top is not None and _is_catalogue(getattr(top, "__file__", None))


def _import_catalogue() -> ModuleType:
    if BY_PATH_NAME in sys.modules:
        return sys.modules[BY_PATH_NAME]
    imported = sys.modules.get("layers")
    if imported is not None:
        return imported if _is_catalogue(getattr(imported, "__file__", None)) else _load_by_path()
    spec = importlib.util.find_spec("layers")
    if spec is not None and _is_catalogue(spec.origin):
        return importlib.import_module("layers")
    return _load_by_path()


def _load_by_path() -> ModuleType:
    """The catalogue imported from CATALOGUE_DIR as package BY_PATH_NAME (its modules import each other
    relatively, so they come along under that name)."""
    spec = importlib.util.spec_from_file_location(BY_PATH_NAME, CATALOGUE_INIT,
                                                  submodule_search_locations=[CATALOGUE_DIR])
    if spec is None or spec.loader is None:  # pragma: no cover - the folder ships with the package
        raise ImportError(f"netcompiler's layer catalogue is missing: {CATALOGUE_INIT}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[BY_PATH_NAME] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[BY_PATH_NAME]
        raise
    return module


def _is_catalogue(origin: Optional[str]) -> bool:
    """Whether `origin` (a module's file) is the catalogue's `__init__.py`."""
    if not origin:
        return False
    try:
        return os.path.samefile(origin, CATALOGUE_INIT)
    except OSError:
        return False
