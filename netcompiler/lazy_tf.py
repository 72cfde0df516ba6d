"""`tf`, imported on first use, for engine modules whose settings are checked before TensorFlow is needed."""

import importlib


class _LazyModule:
    def __init__(self, name: str):
        self._name = name
        self._module = None

    def __getattr__(self, attr):
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return getattr(self._module, attr)


tf = _LazyModule("tensorflow")
