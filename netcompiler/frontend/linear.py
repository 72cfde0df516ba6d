"""`rf.Linear` (x W + b over a feature dim) and `rf.Embedding` (rows of a table selected by class indices), with
RETURNN's parameter names, dims and initialisation (weight [in_dim, out_dim] Glorot, bias [out_dim] zeros)."""

from __future__ import annotations

from ..tensor import Dim, Tensor
from .array import gather, replace_dim
from .init import Glorot
from .model_parameter import Parameter
from .module import Module, check_input_dim
from .reduce import matmul


class Linear(Module):
    """y = x W + b: `in_dim` of the input replaced by `out_dim` (the output's feature dim)."""

    def __init__(self, in_dim: Dim, out_dim: Dim, *, with_bias: bool = True):
        super().__init__()
        _check_dims(self, in_dim, out_dim)
        self.in_dim, self.out_dim, self.with_bias = in_dim, out_dim, with_bias
        self.weight = Parameter((weight_in_dim(in_dim, out_dim), out_dim))
        self.weight.initial = Glorot()
        self.bias = None
        if with_bias:
            self.bias = Parameter((out_dim,))
            self.bias.initial = 0.0

    def __repr__(self):
        return f"<Linear {self.in_dim} -> {self.out_dim}>"

    def __call__(self, source: Tensor) -> Tensor:
        check_input_dim(self, source, self.in_dim)
        reduce_dim = self.weight.dims[0]
        if reduce_dim is not self.in_dim:
            source = replace_dim(source, in_dim=self.in_dim, out_dim=reduce_dim)
        out = matmul(source, self.weight, reduce=reduce_dim)
        if self.bias is not None:
            out = out + self.bias
        return out.copy(feature_dim=self.out_dim)


class Embedding(Module):
    """The row of `weight` [in_dim, out_dim] at each class index of the input (sparse over `in_dim`)."""

    def __init__(self, in_dim: Dim, out_dim: Dim):
        super().__init__()
        _check_dims(self, in_dim, out_dim)
        self.in_dim, self.out_dim = in_dim, out_dim
        self.weight = Parameter((weight_in_dim(in_dim, out_dim), out_dim))
        self.weight.initial = Glorot()

    def __repr__(self):
        return f"<Embedding {self.in_dim} -> {self.out_dim}>"

    def __call__(self, source: Tensor) -> Tensor:
        check_input_dim(self, source, self.in_dim, sparse=True)
        out = gather(self.weight, indices=source, axis=self.weight.dims[0])
        return out.copy(feature_dim=self.out_dim)


def weight_in_dim(in_dim: Dim, out_dim: Dim) -> Dim:
    """The input dim of a [in, out] weight: `in_dim`, or a Dim of its size where `in_dim` is `out_dim` (a weight
    cannot have one dim twice; RETURNN tells the two apart by match priority)."""
    if in_dim != out_dim:
        return in_dim
    return Dim(in_dim.size, in_dim.kind, f"{in_dim.description}:in")


def _check_dims(module: Module, *dims: Dim) -> None:
    for dim in dims:
        if not isinstance(dim, Dim) or dim.size is None:
            raise TypeError(f"{type(module).__name__}: in_dim and out_dim must be static Dims, not {dim!r}")
