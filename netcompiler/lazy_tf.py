"""`tf` and the emission helpers that need it (`ops` of `netcompiler.emit`), imported on first use,
so that layer modules can hold their emission code without importing TensorFlow when only templates are needed."""

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
ops = _LazyModule("netcompiler.emit.ops")
