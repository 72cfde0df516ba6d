"""Elementwise ops on Tensors, broadcasting by Dim: `combine`, `compare`, `where`, activations, `cast`, gradients.

Broadcasting goes by Dim identity, not by position: the result has the dims
of `a` in its order, then those of `b` that `a` lacks.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from ..tensor import Data, Dim, Tensor
from ._dispatch import aligned_raw, as_tensor, backend_for, result_roles


def _broadcast_dims(*tensors: Tensor) -> tuple:
    dims = []
    for t in tensors:
        for d in t.dims:
            if d not in dims:
                dims.append(d)
    return tuple(dims)


def _elementwise(kind: str, a: Any, b: Any, raw_fn, dtype: Optional[str], dim_order: Optional[Sequence[Dim]]):
    backend = backend_for(a, b)
    like = a if isinstance(a, Tensor) else b if isinstance(b, Tensor) else None
    a, b = as_tensor(a, like, backend), as_tensor(b, like, backend)
    if a.dtype != b.dtype:
        raise TypeError(f"{kind}: dtypes differ: {a.data.describe()} {a.dtype} vs {b.data.describe()} {b.dtype}")
    out_dims = tuple(dim_order) if dim_order is not None else _broadcast_dims(a, b)
    raw = raw_fn(aligned_raw(a, out_dims, backend), kind, aligned_raw(b, out_dims, backend))
    if dtype is None:
        dtype = backend.dtype_name(raw)
        if dtype == backend.autocast_dtype_name() and a.dtype == "float32":
            dtype = "float32"  # a float32 value computed in bfloat16 under autocast, as a matmul's result is
    sparse_dim = a.sparse_dim if a.sparse_dim is not None and (b.sparse_dim in (None, a.sparse_dim)) else None
    if dtype == "bool" or dtype.startswith("float"):
        sparse_dim = None
    return Tensor(Data(a.name, out_dims, dtype, sparse_dim=sparse_dim, **result_roles(out_dims, a, b)), raw)


def combine(a: Any, kind: str, b: Any, *, dim_order: Optional[Sequence[Dim]] = None) -> Tensor:
    """a KIND b for kind in add, sub, mul, truediv, floordiv, mod, pow, maximum, minimum, logical_and,
    logical_or, logical_xor, squared_difference, divide_no_nan; numbers take the other side's dtype."""
    backend = backend_for(a, b)
    return _elementwise(kind, a, b, backend.combine_raw, None, dim_order)


def compare(a: Any, kind: str, b: Any, *, dim_order: Optional[Sequence[Dim]] = None) -> Tensor:
    """a KIND b (bool) for kind in equal, not_equal, less, less_equal, greater, greater_equal."""
    backend = backend_for(a, b)
    return _elementwise(kind, a, b, backend.compare_raw, "bool", dim_order)


def maximum(a: Any, b: Any) -> Any:
    """The elementwise maximum; plain ints give an int (so that Dim size rules run on ints too)."""
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        return max(a, b)
    return combine(a, "maximum", b)


def minimum(a: Any, b: Any) -> Any:
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        return min(a, b)
    return combine(a, "minimum", b)


def where(cond: Any, true_: Any, false_: Any, *, dim_order: Optional[Sequence[Dim]] = None) -> Tensor:
    """`true_` where `cond`, else `false_`; the dims of all three, broadcast by Dim (in `dim_order` if given)."""
    backend = backend_for(cond, true_, false_)
    like = true_ if isinstance(true_, Tensor) else false_ if isinstance(false_, Tensor) else None
    true_, false_ = as_tensor(true_, like, backend), as_tensor(false_, like, backend)
    cond = as_tensor(cond, None, backend, dtype="bool")
    out_dims = tuple(dim_order) if dim_order is not None else _broadcast_dims(true_, false_, cond)
    raws = [aligned_raw(t, out_dims, backend) for t in (cond, true_, false_)]
    raw = backend.where_raw(*raws)
    sparse_dim = true_.sparse_dim if true_.sparse_dim == false_.sparse_dim else None
    return Tensor(Data(true_.name, out_dims, true_.dtype, sparse_dim=sparse_dim,
                       **result_roles(out_dims, true_, false_)), raw)


def _unary(x: Tensor, func: str, dtype: Optional[str] = None) -> Tensor:
    backend = backend_for(x)
    raw = backend.activation_raw(x.raw, func)
    data = x.data if dtype is None or dtype == x.dtype else x.data.copy(dtype=dtype, sparse_dim=None)
    return Tensor(data, raw)


ACTIVATIONS = frozenset({
    "identity", "relu", "relu6", "elu", "selu", "gelu", "gelu_tanh", "leaky_relu", "tanh", "sigmoid",
    "log_sigmoid", "softplus", "softsign", "silu", "swish", "exp", "log", "abs", "square", "sqrt", "rsqrt",
    "sin", "cos", "erf", "sign", "neg", "negative", "reciprocal", "floor", "ceil", "round", "log1p",
})


def activation(x: Tensor, func: str) -> Tensor:
    """An elementwise function by name (see ACTIVATIONS); softmax needs an axis: use `rf.softmax`."""
    if func not in ACTIVATIONS:
        raise ValueError(f"unknown elementwise function {func!r}")
    return x if func == "identity" else _unary(x, func)


def neg(x: Tensor) -> Tensor:
    return _unary(x, "neg")


def abs(x: Tensor) -> Tensor:  # noqa: A001 - the op layer's name, as in RETURNN
    return _unary(x, "abs")


def logical_not(x: Tensor) -> Tensor:
    return _unary(x, "logical_not")


def is_finite(x: Tensor) -> Tensor:
    return _unary(x, "is_finite", "bool")


def _named(func: str):
    def op(x: Tensor) -> Tensor:
        return _unary(x, func)

    op.__name__ = func
    op.__doc__ = f"Elementwise {func}."
    return op


relu, tanh, sigmoid, exp, log, sqrt, rsqrt, square, sin, cos, erf, sign, softplus, silu, gelu, elu, log_sigmoid = (
    _named(f) for f in ("relu", "tanh", "sigmoid", "exp", "log", "sqrt", "rsqrt", "square", "sin", "cos", "erf",
                        "sign", "softplus", "silu", "gelu", "elu", "log_sigmoid"))


def cast(x: Tensor, dtype: str) -> Tensor:
    """`x` as `dtype`; a cast to float drops the sparse dim."""
    if x.dtype == dtype:
        return x
    backend = backend_for(x)
    keep_sparse = not (dtype == "bool" or dtype.startswith(("float", "bfloat", "complex")))
    data = x.data.copy(dtype=dtype, sparse_dim=x.sparse_dim if keep_sparse else None)
    return Tensor(data, backend.cast_raw(x.raw, dtype))


def clip_by_value(x: Tensor, low: Any, high: Any) -> Tensor:
    backend = backend_for(x)
    low = as_tensor(low, x, backend)
    high = as_tensor(high, x, backend)
    return Tensor(x.data, backend.clip_by_value_raw(x.raw, aligned_raw(low, x.dims, backend),
                                                     aligned_raw(high, x.dims, backend)))


def stop_gradient(x: Tensor) -> Tensor:
    return Tensor(x.data, backend_for(x).stop_gradient_raw(x.raw))


def scaled_gradient(x: Tensor, scale: float) -> Tensor:
    """Identity forward; the gradient times `scale` (0: none, -1: reversed)."""
    if scale == 1:
        return x
    if scale == 0:
        return stop_gradient(x)
    return Tensor(x.data, backend_for(x).scaled_gradient_raw(x.raw, scale))


def synthetic_gradient(x: Tensor, synthetic: Tensor, meta_loss_scale: float = 1.0) -> Tensor:
    """Identity forward; backward, `x` gets `synthetic` (the same dims, any order) as its gradient instead of the
    true one g, and `synthetic` gets the gradient of meta_loss_scale * mean((synthetic - g) ** 2) over all
    entries (RETURNN's synthetic gradient meta-loss; g held fixed)."""
    if set(synthetic.dims) != set(x.dims):
        raise ValueError(f"synthetic_gradient: {synthetic.data.describe()} must have the dims of {x.data.describe()}")
    backend = backend_for(x, synthetic)
    synthetic = cast(synthetic, x.dtype) if synthetic.dtype != x.dtype else synthetic
    return Tensor(x.data, backend.synthetic_gradient_raw(x.raw, aligned_raw(synthetic, x.dims, backend),
                                                         float(meta_loss_scale)))


def filtered_gradient(x: Tensor, threshold: float, *, per: Sequence[Dim]) -> Tensor:
    """Identity forward; backward, the gradient of each index of `per` (e.g. each sequence: [batch]) is dropped
    (zero) where its largest squared entry over the other dims reaches `threshold` (RETURNN's `grad_filter`)."""
    reduce_axes = [i for i, d in enumerate(x.dims) if d not in per]
    if not reduce_axes:
        raise ValueError(f"filtered_gradient: no dims of {x.data.describe()} are left to take the maximum over")
    return Tensor(x.data, backend_for(x).filtered_gradient_raw(x.raw, float(threshold), reduce_axes))
