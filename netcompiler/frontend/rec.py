"""Recurrences over a Dim with a built-in unit: `lstm` (the signature of RETURNN's frontend), `gru`, `rnn`.

Each runs over `spatial_dim` of `source` from its first frame on; every index of the source's other dims
(batch, extra spatial dims) is a sequence of its own. All frames are projected before the loop, with one
matmul (x W + b; a sparse source selects rows of `ff_weight` instead); the backend then runs the recurrence
as one loop (`lstm_raw`, `gru_raw`, `rnn_raw`), time-major, the other dims flattened into one axis of N
sequences. Frames after a sequence's end are computed on padding but cannot reach the frames before it; the
output is zero there. A backward recurrence is `reverse_sequence` of the source and of the output.

Parameters: k blocks of `out_dim` along one gate dim G: `ff_weight` [in_dim, G], `rec_weight` [out_dim, G],
`bias` [G]. lstm (k=4), in the order of RETURNN's native LSTM (NativeLstm2, its default "lstm" unit, so that
RETURNN's W/W_re/b give RETURNN's numbers): cell input c, input gate i, forget gate f, output gate o (Keras and
PyTorch order them i, f, c, o: `lstm_gates_reordered` converts); gru (k=3): update gate z, reset gate r,
candidate h, the reset gate applied to the state before the recurrent matmul (Keras `reset_after=False`, TF 1's
GRUCell); rnn (k=1).
Gates use the logistic sigmoid.

Initial states have `out_dim` and any of the source's dims other than `spatial_dim` and `in_dim`; those they
lack get the same state (e.g. `rf.zeros([out_dim])` for all sequences). The final states returned are each
sequence's after its own last frame (the initial state for an empty one), with the dims of the output
without `spatial_dim`.
"""

from __future__ import annotations

from typing import Any, Callable, Tuple

from ..tensor import Data, Dim, Tensor, merge_dims
from ._dispatch import aligned_raw, backend_for
from .array import concat, convert_to_tensor, gather, masked, permute, split
from .math import tanh, where
from .reduce import matmul
from .run_ctx import get_run_ctx


def lstm(source: Tensor, *, state_h: Tensor, state_c: Tensor, ff_weight: Tensor, rec_weight: Tensor, bias: Tensor,
         spatial_dim: Dim, in_dim: Dim, out_dim: Dim, forget_bias: float = 0.0) -> Tuple[Tensor, Tuple[Tensor, Tensor]]:
    """An LSTM (see the module): cell' = sigmoid(f) cell + sigmoid(i) tanh(c), h' = sigmoid(o) tanh(cell'), with
    c, i, f, o = x W + b + h U. Returns (out, (h, c)): `out` has the source's dims with `in_dim` replaced by
    `out_dim`, `spatial_dim` first; h and c are the final states. `forget_bias` is a constant added to the
    forget gate (1.0 in TF's LSTMCell)."""
    if forget_bias:
        n = out_dim.size
        bias = bias + convert_to_tensor([0.0] * (2 * n) + [float(forget_bias)] * n + [0.0] * n, dims=bias.dims,
                                        dtype=bias.dtype, backend=backend_for(bias))
    seqs = _Sequences(source, spatial_dim, in_dim, out_dim, ff_weight, rec_weight, bias, 4, "lstm")
    flat_h, flat_c = seqs.flat_state(state_h), seqs.flat_state(state_c)
    whole = seqs.lstm_sequences(flat_h, flat_c)
    if whole is not None:
        return whole
    hs, cs = seqs.backend.lstm_raw(seqs.project(), seqs.rec_weight, flat_h, flat_c)
    hs, cs = seqs.stacked(hs), seqs.stacked(cs)
    return seqs.output(hs), (seqs.final(hs, state_h), seqs.final(cs, state_c))


def gru(source: Tensor, *, state: Tensor, ff_weight: Tensor, rec_weight: Tensor, bias: Tensor, spatial_dim: Dim,
        in_dim: Dim, out_dim: Dim) -> Tuple[Tensor, Tensor]:
    """A GRU (see the module): z, r = sigmoid(xw_zr + h U_zr), h' = z h + (1 - z) tanh(xw_h + (r h) U_h).
    Returns (out, final state), as `lstm`."""
    seqs = _Sequences(source, spatial_dim, in_dim, out_dim, ff_weight, rec_weight, bias, 3, "gru")
    hs = seqs.stacked(seqs.backend.gru_raw(seqs.project(), seqs.rec_weight, seqs.flat_state(state)))
    return seqs.output(hs), seqs.final(hs, state)


def rnn(source: Tensor, *, state: Tensor, ff_weight: Tensor, rec_weight: Tensor, bias: Tensor, spatial_dim: Dim,
        in_dim: Dim, out_dim: Dim, activation: Callable[[Tensor], Tensor] = tanh) -> Tuple[Tensor, Tensor]:
    """A simple recurrence: h' = activation(x W + b + h U), `activation` a function of Tensors (it sees h of one
    step, dims [sequences, out_dim], `out_dim` its feature dim). Returns (out, final state), as `lstm`."""
    seqs = _Sequences(source, spatial_dim, in_dim, out_dim, ff_weight, rec_weight, bias, 1, "rnn")
    step = Data("rnn_step", (seqs.flat_dim, out_dim), rec_weight.dtype, feature_dim=out_dim)

    def raw_activation(raw):
        return activation(Tensor(step, raw)).raw

    hs = seqs.stacked(seqs.backend.rnn_raw(seqs.project(), seqs.rec_weight, seqs.flat_state(state), raw_activation))
    return seqs.output(hs), seqs.final(hs, state)


LSTM_GATE_ORDER = "cifo"
"""The order of the 4 blocks of `lstm`'s gate dim: cell input, input gate, forget gate, output gate."""


def lstm_gates_reordered(weight: Tensor, *, gate_dim: Dim, order: str, to: str = LSTM_GATE_ORDER) -> Tensor:
    """`weight` with the 4 LSTM blocks along `gate_dim` given in `order` (letters c, i, f, o; e.g. "ifco" for
    Keras's and PyTorch's layout) put in the order `to` (by default `lstm`'s)."""
    if sorted(order) != sorted(LSTM_GATE_ORDER) or sorted(to) != sorted(LSTM_GATE_ORDER):
        raise ValueError(f"lstm gate orders must be permutations of {LSTM_GATE_ORDER!r}, not {order!r} -> {to!r}")
    if order == to:
        return weight
    if gate_dim.size is None or gate_dim.size % 4:
        raise ValueError(f"lstm: the gate dim {gate_dim} must have a static size divisible by 4")
    parts = [Dim(gate_dim.size // 4, gate_dim.kind, f"{gate_dim.description}[{gate}]") for gate in order]
    blocks = dict(zip(order, zip(split(weight, axis=gate_dim, out_dims=parts), parts)))
    return concat(*(blocks[gate] for gate in to), out_dim=gate_dim)


class _Sequences:
    """`source` viewed as the backend's recurrences take it: [T, N, in] (sparse: [T, N] indices), T the
    iterated dim, the other dims flattened into N sequences (as they are if there is exactly one)."""

    def __init__(self, source: Tensor, spatial_dim: Dim, in_dim: Dim, out_dim: Dim, ff_weight: Tensor,
                 rec_weight: Tensor, bias: Tensor, blocks: int, unit: str):
        gates = [d for d in rec_weight.dims if d != out_dim]
        if len(gates) != 1 or gates[0].size != blocks * out_dim.size or bias.dims != (gates[0],) or \
                set(ff_weight.dims) != {in_dim, gates[0]}:
            raise ValueError(f"{unit}: needs ff_weight [{in_dim}, G], rec_weight [{out_dim}, G] and bias [G], G of "
                             f"size {blocks} x {out_dim.size}; got {ff_weight.data.describe()}, "
                             f"{rec_weight.data.describe()}, {bias.data.describe()}")
        sparse = source.sparse_dim is not None
        if (source.sparse_dim != in_dim) if sparse else not source.has_dim(in_dim):
            raise ValueError(f"{unit}: the source {source.data.describe()} has no {in_dim} (feature or sparse dim)")
        self.backend = backend = backend_for(source)
        self.spatial, self.in_dim, self.out_dim = spatial_dim, in_dim, out_dim
        self.others = [d for d in source.dims if d not in (spatial_dim, in_dim)]
        self.ff_weight, self.bias = ff_weight, bias
        self.rec_weight = permute(rec_weight, (out_dim, gates[0])).raw
        x = permute(source, [spatial_dim] + self.others + ([] if sparse else [in_dim]))
        shape = list(backend.get_shape_tuple_raw(x.raw))
        self.length, self.frames = shape[0], shape[1:1 + len(self.others)]
        self.flat_dim = merge_dims(self.others)
        if len(self.others) != 1:
            x = Tensor(x.data.copy(dims=(spatial_dim, self.flat_dim) + x.dims[1 + len(self.others):]),
                       backend.reshape_raw(x.raw, [self.length, -1] + shape[1 + len(self.others):]))
        self.x = x

    def project(self) -> Any:
        """x W + b of every frame, raw [T, N, G]."""
        x = self.x
        if x.sparse_dim is not None:
            xw = gather(self.ff_weight, indices=x, axis=self.in_dim)
        else:
            xw = matmul(x, self.ff_weight, reduce=self.in_dim)
        return (xw + self.bias).raw

    def lstm_sequences(self, flat_h: Any, flat_c: Any):
        """`lstm`'s result from the backend's kernel over whole sequences (`lstm_sequences_raw`: the frames
        unprojected, each sequence's length), or None where it has none (or the source is sparse, or the sizes
        are not one per sequence)."""
        sizes = get_run_ctx().size(self.spatial)
        if self.x.sparse_dim is not None or not (isinstance(sizes, int) or sizes.dims in ((), tuple(self.others))):
            return None
        gates = self.bias.dims[0]
        lengths = sizes if isinstance(sizes, int) else sizes.raw
        if not isinstance(sizes, int) and len(sizes.dims) > 1:  # per (B, S, ...): flat, as the frames are
            lengths = self.backend.reshape_raw(lengths, [-1])
        raw = self.backend.lstm_sequences_raw(
            self.x.raw, permute(self.ff_weight, (self.in_dim, gates)).raw, self.bias.raw, self.rec_weight,
            flat_h, flat_c, lengths)
        if raw is None:
            return None
        hs, h, c = raw
        return self.stacked(hs), (self.unflat(h), self.unflat(c))

    def unflat(self, raw: Any) -> Tensor:
        """A state raw [N, n] with the source's dims other than the spatial and input dims again."""
        if len(self.others) != 1:
            raw = self.backend.reshape_raw(raw, self.frames + [self.out_dim.size])
        return Tensor(Data(self.x.name, tuple(self.others) + (self.out_dim,), self.backend.dtype_name(raw),
                           feature_dim=self.out_dim), raw)

    def flat_state(self, state: Tensor) -> Any:
        """An initial state as raw [N, n], broadcast over the sequence dims it lacks."""
        order = self.others + [self.out_dim]
        raw = aligned_raw(state, order, self.backend)
        if len(state.dims) < len(order):
            raw = self.backend.broadcast_to_raw(raw, self.frames + [self.out_dim.size])
        if len(self.others) != 1:
            raw = self.backend.reshape_raw(raw, [-1, self.out_dim.size])
        return raw

    def stacked(self, raw: Any) -> Tensor:
        """The backend's states of every step, raw [T, N, n], with the source's dims again."""
        if len(self.others) != 1:
            raw = self.backend.reshape_raw(raw, [self.length] + self.frames + [self.out_dim.size])
        dims = (self.spatial,) + tuple(self.others) + (self.out_dim,)
        return Tensor(Data(self.x.name, dims, self.backend.dtype_name(raw), time_dim=self.spatial,
                           feature_dim=self.out_dim), raw)

    def output(self, stacked: Tensor) -> Tensor:
        """h of every step, zero after each sequence's end."""
        return masked(stacked, [self.spatial], 0.0)

    def final(self, stacked: Tensor, state: Tensor) -> Tensor:
        """Each sequence's state after its own last frame."""
        sizes = get_run_ctx().size(self.spatial)
        if isinstance(sizes, int):
            return gather(stacked, indices=sizes - 1, axis=self.spatial)
        last = gather(stacked, indices=sizes - 1, axis=self.spatial, clip_to_valid=True)
        return where(sizes > 0, last, state)
