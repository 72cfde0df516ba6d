"""`rf.LSTM` (RETURNN's frontend module over the `rf.lstm` op) and its state `rf.LstmState`.

Parameters as RETURNN has them: `ff_weight` [4 x out_dim, in_dim], `rec_weight` [4 x out_dim, out_dim] (Glorot),
`bias` [4 x out_dim] (zeros); the gate blocks in the order input, forget, cell candidate, output (PyTorch's,
which RETURNN's PyTorch backend uses; each call puts them in `rf.lstm`'s order, RETURNN's native LSTM's). Called over a spatial dim it runs the whole sequence (frames after a sequence's end do not reach its
output or its final state); with `spatial_dim=single_step_dim` it makes one step.
"""

from __future__ import annotations

from typing import Sequence, Tuple

from ..tensor import FEATURE, SPATIAL, Dim, Tensor
from .array import convert_to_tensor, zeros
from .init import Glorot
from .model_parameter import Parameter
from .module import Module
from .rec import lstm, lstm_gates_reordered
from .rec_cell import lstm_step
from .state import State

single_step_dim = Dim(1, SPATIAL, "single-step")
"""Pass as `spatial_dim` to make one step of a recurrent module (RETURNN's `single_step_dim`)."""


class LstmState(State):
    """The state of an LSTM: `h` (the output) and `c` (the cell), each [batch dims..., out_dim]."""

    def __init__(self, *args, h: Tensor = None, c: Tensor = None):
        super().__init__(*args)
        if not args:
            self.h = h
            self.c = c


class LSTM(Module):
    """An LSTM over `spatial_dim`: (output [source dims with out_dim for in_dim], the state after each sequence's
    last frame)."""

    def __init__(self, in_dim: Dim, out_dim: Dim, *, with_bias: bool = True):
        super().__init__()
        for dim in (in_dim, out_dim):
            if not isinstance(dim, Dim) or dim.size is None:
                raise TypeError(f"LSTM: in_dim and out_dim must be static Dims, not {dim!r}")
        self.in_dim, self.out_dim = in_dim, out_dim
        self.gate_dim = Dim(4 * out_dim.size, FEATURE, f"4*{out_dim.description}")
        self.ff_weight = Parameter((self.gate_dim, in_dim), initial=Glorot())
        self.rec_weight = Parameter((self.gate_dim, out_dim), initial=Glorot())
        self.bias = Parameter((self.gate_dim,), initial=0.0) if with_bias else None

    def __repr__(self):
        return f"<LSTM {self.in_dim} -> {self.out_dim}>"

    def __call__(self, source: Tensor, *, state: LstmState, spatial_dim: Dim) -> Tuple[Tensor, LstmState]:
        if not isinstance(source, Tensor):
            raise TypeError(f"{self!r}: the input must be a Tensor, not {type(source).__name__}")
        if source.sparse_dim != self.in_dim and not source.has_dim(self.in_dim):
            raise ValueError(f"{self!r}: expects an input with in_dim {self.in_dim} (or indices into it), but got "
                             f"{source.data.describe()}")
        if not isinstance(state, dict) or state.get("h") is None or state.get("c") is None:
            raise ValueError(f"{self!r}: the state needs entries h and c (LstmState(h=..., c=...); "
                             f"default_initial_state makes zeros), not {state!r}")
        bias = self.bias if self.bias is not None else convert_to_tensor(
            [0.0] * self.gate_dim.size, dims=[self.gate_dim], dtype=self.rec_weight.dtype)
        ff_weight, rec_weight, bias = (lstm_gates_reordered(weight, gate_dim=self.gate_dim, order="ifco")
                                       for weight in (self.ff_weight, self.rec_weight, bias))
        args = dict(state_h=state.h, state_c=state.c, ff_weight=ff_weight, rec_weight=rec_weight,
                    bias=bias, in_dim=self.in_dim, out_dim=self.out_dim)
        if spatial_dim is single_step_dim:
            h, c = lstm_step(source, **args)
            return h, LstmState(h=h, c=c)
        if not source.has_dim(spatial_dim):
            raise ValueError(f"{self!r}: the input {source.data.describe()} has no spatial dim {spatial_dim}")
        out, (h, c) = lstm(source, spatial_dim=spatial_dim, **args)
        return out, LstmState(h=h, c=c)

    def default_initial_state(self, *, batch_dims: Sequence[Dim]) -> LstmState:
        """Zeros [batch_dims..., out_dim] for h and c."""
        dims = list(batch_dims) + [self.out_dim]
        return LstmState(h=zeros(dims, feature_dim=self.out_dim), c=zeros(dims, feature_dim=self.out_dim))
