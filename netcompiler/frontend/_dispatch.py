"""Which backend runs an op, and how plain values become Tensors next to a Tensor."""

from __future__ import annotations

from typing import Any, Optional, Sequence

from ..backends import backend_of
from ..tensor import Data, Dim, Tensor
from .run_ctx import current_run_ctx


def backend_for(*values: Any):
    """The backend of the first Tensor with a raw value among `values`, else the run context's."""
    for value in values:
        if isinstance(value, Tensor) and value.raw is not None:
            backend = backend_of(value.raw)
            if backend is not None:
                return backend
    ctx = current_run_ctx()
    if ctx is None:
        raise RuntimeError("no backend: none of the values is a backend tensor and no run context is active")
    return ctx.backend


def as_tensor(value: Any, like: Optional[Tensor] = None, backend=None, dtype: Optional[str] = None) -> Tensor:
    """`value` as a Tensor: a Tensor stays; a Python number or NumPy scalar becomes a scalar constant of
    `dtype`, or else of `like`'s dtype (as in RETURNN: `x + 1` keeps x's dtype)."""
    if isinstance(value, Tensor):
        return value
    backend = backend or backend_for(like)
    if dtype is None:
        dtype = like.dtype if like is not None else default_dtype(value)
    return Tensor(Data("constant", (), dtype), backend.convert_to_raw(value, dtype))


def default_dtype(value: Any) -> str:
    """The dtype a plain value gets: bool, int32 for ints, float32 for floats, else the NumPy dtype."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int32"
    if isinstance(value, float):
        return "float32"
    import numpy as np

    return np.asarray(value).dtype.name


def aligned_raw(x: Tensor, out_dims: Sequence[Dim], backend) -> Any:
    """The raw value of `x` arranged to broadcast against a tensor with `out_dims`: its dims in their order
    there, with size-1 axes where it lacks one (none are added in front: broadcasting aligns from the right)."""
    present = [d for d in out_dims if x.has_dim(d)]
    if len(present) != len(x.dims):
        missing = [d for d in x.dims if d not in out_dims]
        raise ValueError(f"cannot broadcast {x.data.describe()} to {list(out_dims)}: {missing} not among them")
    raw = x.raw
    perm = [x.axis_of(d) for d in present]
    raw = backend.transpose_raw(raw, perm)
    if not present:
        return raw
    first = list(out_dims).index(present[0])
    for i in range(first, len(out_dims)):
        if out_dims[i] not in present:
            raw = backend.expand_dims_raw(raw, i - first)
    return raw


def result_roles(out_dims: Sequence[Dim], *sources: Tensor) -> dict:
    """Time and feature roles for a result with `out_dims`: the first source's, where its dims survive."""
    roles = {}
    for role in ("time_dim", "feature_dim"):
        for src in sources:
            dim = getattr(src.data, role)
            if dim is not None and dim in out_dims:
                roles[role] = dim
                break
        else:
            roles[role] = None
    return roles


# --- recording op calls (the layer-dict backend, `netcompiler/backends/layers/`) -----------------------------
# While a recorder is set, the outermost call of a frontend op reports (op, args, kwargs, result) to it; calls
# that op makes inside (internal op calls) run unrecorded. Without a recorder an op costs one global lookup more.

_op_recorder = None
_op_depth = 0
_NOT_OPS = ("_dispatch", "run_ctx", "backend_select", "user_code", "random_state", "init", "module", "container",
            "state", "model_parameter")
"""Frontend modules whose functions are not ops on Tensors (bookkeeping, model building); the ops they call
are still recorded."""


def set_op_recorder(recorder):
    """Makes `recorder(op, args, kwargs, result)` (or None) receive the outermost op calls; returns the previous
    one. Wraps every op of the frontend modules imported so far (once per function)."""
    global _op_recorder
    if recorder is not None:
        _wrap_frontend_ops()
    previous, _op_recorder = _op_recorder, recorder
    return previous


def _recorded(op):
    import functools

    @functools.wraps(op)
    def call(*args, **kwargs):
        global _op_depth
        if _op_recorder is None or _op_depth:
            return op(*args, **kwargs)
        _op_depth += 1
        try:
            result = op(*args, **kwargs)
        finally:
            _op_depth -= 1
        return _op_recorder(op, args, kwargs, result)

    call.__recorded_op__ = op
    return call


def _wrap_frontend_ops() -> None:
    """Replaces each op function of the frontend modules by its recording wrapper, in every frontend module that
    holds it (so that `from .reduce import matmul` in another module records too)."""
    import inspect
    import sys

    modules = [m for name, m in list(sys.modules.items()) if m is not None and name.startswith(__package__ + ".")]
    wrapped = {}
    for module in modules:
        if module.__name__.rsplit(".", 1)[1] in _NOT_OPS:
            continue
        for name, value in vars(module).items():
            if not name.startswith("_") and inspect.isfunction(value) and not hasattr(value, "__recorded_op__") \
                    and value.__module__ == module.__name__:
                wrapped[value] = _recorded(value)
    if not wrapped:
        return
    for module in modules + [sys.modules[__package__]]:
        for name, value in list(vars(module).items()):
            if inspect.isfunction(value) and value in wrapped:
                setattr(module, name, wrapped[value])
