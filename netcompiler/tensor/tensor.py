"""`Tensor`: a template (`Data`) plus the raw value of one backend.

The raw value is laid out as the template says (its axes are the template's
dims, in order). A Tensor without a raw value is just a template. Arithmetic
operators (`a + b`, `-a`, `a < b`, ...) go to the op layer (`netcompiler.frontend`),
which installs itself here when it is imported; this module stays pure Python.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

from .data import Data
from .dim import Dim


class Tensor:
    """A value with named dims: `data` (the template) and `raw` (a backend's tensor, or None)."""

    __slots__ = ("data", "raw")

    # set by netcompiler.frontend: the module whose combine/compare/... the operators call, and the module
    # that records marks (losses, outputs) in the current run
    _ops: Any = None
    _marks: Any = None

    def __init__(self, data: Data, raw: Any = None):
        self.data = data
        self.raw = raw

    # --- the template's fields ---------------------------------------------------------
    @property
    def dims(self) -> Tuple[Dim, ...]:
        return self.data.dims

    @property
    def dtype(self) -> str:
        return self.data.dtype

    @property
    def sparse_dim(self) -> Optional[Dim]:
        return self.data.sparse_dim

    @property
    def feature_dim(self) -> Optional[Dim]:
        return self.data.feature_dim

    @property
    def time_dim(self) -> Optional[Dim]:
        return self.data.time_dim

    @property
    def name(self) -> str:
        return self.data.name

    def axis_of(self, dim: Dim) -> int:
        return self.data.axis_of(dim)

    def has_dim(self, dim: Dim) -> bool:
        return self.data.has_dim(dim)

    @property
    def raw_tensor(self) -> Any:
        """The raw value (RETURNN's name for `raw`)."""
        return self.raw

    @raw_tensor.setter
    def raw_tensor(self, value: Any) -> None:
        self.raw = value

    # --- marks in the current run (through the op layer) -----------------------------------
    def mark_as_loss(self, name: str, **options) -> None:
        """Reports this value as the loss `name` of the current run (options: see `RunContext.mark_as_loss`)."""
        Tensor._marks.get_run_ctx().mark_as_loss(self, name, **options)

    def mark_as_output(self, name: str, **options) -> None:
        Tensor._marks.get_run_ctx().mark_as_output(self, name, **options)

    def mark_as_default_output(self, **options) -> None:
        Tensor._marks.get_run_ctx().mark_as_default_output(self, **options)

    def with_data(self, data: Data) -> "Tensor":
        """The same raw value under another template (same dims in the same order)."""
        if tuple(data.dims) != tuple(self.data.dims):
            raise ValueError(f"with_data: {data.describe()} has other dims than {self.data.describe()}")
        return Tensor(data, self.raw)

    def copy(self, **changes) -> "Tensor":
        """The same raw value with template fields changed that do not move axes (name, roles, sparse_dim)."""
        if "dims" in changes:
            raise ValueError("Tensor.copy cannot change the dims; use the op layer (rf.permute, rf.replace_dim)")
        return Tensor(self.data.copy(**changes), self.raw)

    # --- operators (through the op layer) --------------------------------------------------
    def _combine(self, kind: str, other, reverse: bool = False):
        a, b = (other, self) if reverse else (self, other)
        return Tensor._ops.combine(a, kind, b)

    def __add__(self, other):
        return self._combine("add", other)

    def __radd__(self, other):
        return self._combine("add", other, True)

    def __sub__(self, other):
        return self._combine("sub", other)

    def __rsub__(self, other):
        return self._combine("sub", other, True)

    def __mul__(self, other):
        return self._combine("mul", other)

    def __rmul__(self, other):
        return self._combine("mul", other, True)

    def __truediv__(self, other):
        return self._combine("truediv", other)

    def __rtruediv__(self, other):
        return self._combine("truediv", other, True)

    def __floordiv__(self, other):
        return self._combine("floordiv", other)

    def __rfloordiv__(self, other):
        return self._combine("floordiv", other, True)

    def __mod__(self, other):
        return self._combine("mod", other)

    def __pow__(self, other):
        return self._combine("pow", other)

    def __rpow__(self, other):
        return self._combine("pow", other, True)

    def __neg__(self):
        return Tensor._ops.neg(self)

    def __abs__(self):
        return Tensor._ops.abs(self)

    def __and__(self, other):
        return self._combine("logical_and", other)

    def __or__(self, other):
        return self._combine("logical_or", other)

    def __invert__(self):
        return Tensor._ops.logical_not(self)

    def __lt__(self, other):
        return Tensor._ops.compare(self, "less", other)

    def __le__(self, other):
        return Tensor._ops.compare(self, "less_equal", other)

    def __gt__(self, other):
        return Tensor._ops.compare(self, "greater", other)

    def __ge__(self, other):
        return Tensor._ops.compare(self, "greater_equal", other)

    # == and != keep identity semantics (Tensors are used as dict keys); use rf.compare for values.
    __hash__ = object.__hash__

    def __bool__(self):
        raise TypeError("the truth value of a Tensor is ambiguous; use rf.cond or rf.where")

    def __repr__(self):
        raw = "template" if self.raw is None else type(self.raw).__name__
        return f"Tensor({self.data.name!r}, {self.data.describe()}, {self.data.dtype}, {raw})"


def template_tensor(name: str, dims: Sequence[Dim], dtype: str = "float32", **roles) -> Tensor:
    """A Tensor without a value, for templates."""
    return Tensor(Data(name, dims, dtype, **roles))
