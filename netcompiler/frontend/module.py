"""`rf.Module` (RETURNN's frontend model class) and `rf.Functional` (a function as a module).

A module holds its parameters and submodules as plain attributes; they are found by walking its attributes
(`vars`), so there is nothing to register. Names are attribute paths: `layer1.weight` is the attribute `weight`
of the submodule `layer1`; modules are walked breadth first, each module and parameter counted once (under the
first path that reaches it). What a module computes is its `__call__`, written by each subclass.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, List, Optional, Sequence, Set, Tuple, TypeVar

from ..tensor import Dim, Tensor
from .model_parameter import Parameter

T = TypeVar("T", bound="Module")


class Module:
    """A model part with parameters and submodules as attributes; subclasses define `__call__`."""

    def __init__(self):
        pass

    def __repr__(self):
        return f"<{type(self).__name__}>"

    def __call__(self, *args, **kwargs) -> Any:
        raise NotImplementedError(f"{type(self).__name__} defines no __call__ (a module's computation is its "
                                  f"__call__ method)")

    def default_initial_state(self, *, batch_dims: Sequence[Dim]) -> Optional[Any]:
        """The initial recurrent state: by default the submodules' that have one, by attribute name (None if none
        has)."""
        from .state import State

        state = State()
        for name, child in self.named_children():
            sub = child.default_initial_state(batch_dims=batch_dims)
            if sub:
                state[name] = sub
        return state or None

    # --- walking the attributes -----------------------------------------------------------------------------
    def named_modules(self, *, recurse: bool = True, include_self: bool = True, memo: Optional[Set[int]] = None,
                      prefix: str = "") -> Iterator[Tuple[str, "Module"]]:
        """(path, module) of this module (path `prefix`, if `include_self`) and its submodules, breadth first;
        with `recurse=False` only the direct children."""
        memo = set() if memo is None else memo
        if id(self) in memo:
            return
        memo.add(id(self))
        if include_self:
            yield prefix, self
        queue: List[Tuple[str, Module]] = [(prefix, self)]
        while queue:
            path, module = queue.pop(0)
            for name, value in vars(module).items():
                if not isinstance(value, Module) or id(value) in memo:
                    continue
                memo.add(id(value))
                sub_path = f"{path}.{name}" if path else name
                yield sub_path, value
                if recurse:
                    queue.append((sub_path, value))

    def modules(self, *, recurse: bool = True, include_self: bool = True) -> Iterator["Module"]:
        for _, module in self.named_modules(recurse=recurse, include_self=include_self):
            yield module

    def named_children(self) -> Iterator[Tuple[str, "Module"]]:
        return self.named_modules(recurse=False, include_self=False)

    def children(self) -> Iterator["Module"]:
        return self.modules(recurse=False, include_self=False)

    def named_parameters(self, *, recurse: bool = True) -> Iterator[Tuple[str, Parameter]]:
        """(path, parameter) of this module's parameters and, with `recurse`, its submodules'."""
        seen: Set[int] = set()
        for path, module in self.named_modules() if recurse else [("", self)]:
            for name, value in vars(module).items():
                if isinstance(value, Parameter) and id(value) not in seen:
                    seen.add(id(value))
                    yield (f"{path}.{name}" if path else name), value

    def parameters(self, *, recurse: bool = True) -> Iterator[Parameter]:
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    @property
    def has_parameters(self) -> bool:
        return next(self.named_parameters(), None) is not None

    def apply(self: T, fn: Callable[["Module"], None]) -> T:
        """Calls `fn` on every submodule (children first, each applying it to its own) and then on this one."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def get_deep(self, target: str) -> Any:
        """The attribute at the path `target` ("layer1.weight"; "" is this module)."""
        if target == "":
            return self
        value: Any = self
        parts = target.split(".")
        for i, part in enumerate(parts):
            if not hasattr(value, part):
                raise AttributeError(f"{self!r}: no attribute {'.'.join(parts[:i + 1])!r}")
            value = getattr(value, part)
            if i < len(parts) - 1 and not isinstance(value, Module):
                raise AttributeError(f"{self!r}: {'.'.join(parts[:i + 1])!r} is not an rf.Module")
        return value

    def set_deep(self, target: str, value: Any) -> None:
        """Sets the attribute at the path `target`."""
        if target == "":
            raise AttributeError(f"{self!r}: set_deep needs a path, not ''")
        owner_path, _, name = target.rpartition(".")
        owner = self.get_deep(owner_path)
        if not isinstance(owner, Module):
            raise AttributeError(f"{self!r}: {owner_path!r} is not an rf.Module")
        setattr(owner, name, value)


class Functional(Module):
    """A function (or lambda) as a module: calling it calls the function."""

    def __init__(self, func: Callable):
        super().__init__()
        if not callable(func):
            raise TypeError(f"rf.Functional needs a callable, not {func!r}")
        self.func = func

    def __repr__(self):
        return f"{type(self).__name__}({getattr(self.func, '__qualname__', repr(self.func))})"

    def __call__(self, *args, **kwargs):
        return self.func(*args, **kwargs)


def check_input_dim(module: Module, source: Any, dim: Dim, *, sparse: bool = False, what: str = "in_dim") -> None:
    """A TypeError unless `source` is a Tensor; a ValueError naming `module`, `dim` and the source's dims unless
    `source` has `dim` (as its sparse dim with `sparse`, e.g. the class indices an embedding reads)."""
    if not isinstance(source, Tensor):
        raise TypeError(f"{module!r}: the input must be a Tensor, not {type(source).__name__}")
    if sparse:
        if source.sparse_dim != dim:
            got = f"indices into {source.sparse_dim}" if source.sparse_dim is not None else \
                f"a dense {source.data.describe()}"
            raise ValueError(f"{module!r}: expects indices into {what} {dim}, but got {got}")
        return
    if not source.has_dim(dim):
        hint = ""
        same_size = [d for d in source.dims if d.size == dim.size]
        if same_size:
            hint = f"; {same_size[0]} has the same size but is another dim: build the module with it, or " \
                   f"rf.replace_dim the input"
        raise ValueError(f"{module!r}: expects an input with {what} {dim}, but got {source.data.describe()} "
                         f"(dims {list(source.dims)}){hint}")
