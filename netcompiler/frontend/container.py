"""Containers of modules (RETURNN's frontend names): `ModuleList`, `Sequential` (and `sequential`),
`ParameterList`. Entries are attributes named "0", "1", ... (or the keys of a dict given), so their parameters are
named "0.weight", "layers.1.bias", ..."""

from __future__ import annotations

from typing import Any, Dict, Iterator, Optional, Tuple, Union

from ..tensor import Tensor
from .model_parameter import Parameter
from .module import Functional, Module


class ModuleList(Module):
    """Modules in an order; functions given become `Functional` modules. Indexable, sliceable, iterable."""

    def __init__(self, *modules: Any):
        super().__init__()
        for key, module in _entries(modules, ModuleList):
            setattr(self, key, as_module(module))

    def _modules(self) -> Dict[str, Module]:
        return {key: value for key, value in vars(self).items() if isinstance(value, Module)}

    def append(self, module: Any) -> "ModuleList":
        setattr(self, str(len(self)), as_module(module))
        return self

    def extend(self, modules) -> "ModuleList":
        for module in modules:
            self.append(module)
        return self

    def items(self):
        return self._modules().items()

    def __len__(self) -> int:
        return len(self._modules())

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules().values())

    def __getitem__(self, index: Union[int, slice]):
        entries = list(self._modules().items())
        if isinstance(index, slice):
            return type(self)(dict(entries[index]))
        return entries[index][1]

    def __setitem__(self, index: int, module: Any) -> None:
        if isinstance(index, slice):
            raise TypeError(f"{type(self).__name__}: assign single entries, not slices")
        key = list(self._modules())[index]
        setattr(self, key, as_module(module))

    def __delitem__(self, index: Union[int, slice]) -> None:
        entries = list(self._modules().items())
        doomed = entries[index] if isinstance(index, slice) else [entries[index]]
        for key, _ in entries:
            delattr(self, key)
        kept = [(key, module) for key, module in entries if all(module is not d for _, d in doomed)]
        for i, (key, module) in enumerate(kept):
            setattr(self, str(i) if _is_position_name(key) else key, module)

    __call__ = Module.__call__


class Sequential(ModuleList):
    """Calls its modules one after the other, each on the previous one's output."""

    def __call__(self, source: Any, *, collected_outputs: Optional[Dict[str, Tensor]] = None, **kwargs) -> Any:
        for name, module in self.items():
            source = module(source, **kwargs)
            if collected_outputs is not None:
                collected_outputs[name] = source
        return source


def sequential(source: Tensor, *modules: Any) -> Any:
    """`Sequential(*modules)(source)`."""
    return Sequential(*modules)(source)


class ParameterList(Module):
    """Parameters in an order, as attributes "0", "1", ..."""

    def __init__(self, *parameters: Any):
        super().__init__()
        for key, param in _entries(parameters, ParameterList):
            if not isinstance(param, Parameter):
                raise TypeError(f"ParameterList entries must be rf.Parameters, not {param!r}")
            setattr(self, key, param)

    def _parameters(self) -> Dict[str, Parameter]:
        return {key: value for key, value in vars(self).items() if isinstance(value, Parameter)}

    def append(self, param: Parameter) -> "ParameterList":
        setattr(self, str(len(self)), param)
        return self

    def __len__(self) -> int:
        return len(self._parameters())

    def __iter__(self) -> Iterator[Parameter]:
        return iter(self._parameters().values())

    def __getitem__(self, index: int) -> Parameter:
        return list(self._parameters().values())[index]

    __call__ = Module.__call__


def as_module(obj: Any) -> Module:
    """A module as it is; a function as a `Functional`; else a TypeError."""
    if isinstance(obj, Module):
        return obj
    if callable(obj):
        return Functional(obj)
    raise TypeError(f"expected an rf.Module or a function, not {obj!r}")


def _entries(args: Tuple[Any, ...], own_type: type):
    """(attribute name, entry) of a container's constructor arguments: entries, one iterable of them, a dict
    (integer-like keys renumbered) or another container of the same kind."""
    if len(args) == 1 and isinstance(args[0], own_type):
        return [(key, value) for key, value in vars(args[0]).items() if isinstance(value, (Module, Parameter))]
    if len(args) == 1 and isinstance(args[0], dict):
        return [(str(i) if _is_position_name(key) else key, value) for i, (key, value) in enumerate(args[0].items())]
    if len(args) == 1 and not isinstance(args[0], (Module, Tensor)) and not callable(args[0]) and \
            hasattr(args[0], "__iter__"):
        args = tuple(args[0])
    return [(str(i), value) for i, value in enumerate(args)]


def _is_position_name(key: Any) -> bool:
    """Whether a module's key is a position ("0", 3) rather than a chosen name: such keys are renumbered when
    entries go. Not an int-type check (that is `netcompiler.limits.is_int`): "0" counts here."""
    try:
        int(key)
        return True
    except (TypeError, ValueError):
        return False
