"""The PyTorch backend's recurrences with the TensorFlow backend's gate layouts (netcompiler/frontend/rec.py).
An LSTM over whole sequences runs in aten's LSTM kernel where it applies (`lstm_sequences_raw`, lstm_kernel.py);
else, as GRU and simple RNN always, a Python loop over time: the LSTM's one autograd Function with a hand-written
backward (lstm_function.py) or (bfloat16 autocast, torch.compile) the plain loop, differentiated by autograd."""

from __future__ import annotations

from typing import Any, Callable

import torch

from .lstm_function import LSTMFunction, lstm_function_applies
from .lstm_kernel import lstm_sequences


class RecurrentOps:
    """LSTM (gate blocks c, i, f, o: RETURNN's native LSTM), GRU (z, r, h; reset before the recurrent matmul) and
    simple RNN steps over time-major inputs projected before the loop (`xw` = x W + b)."""

    @classmethod
    def lstm_sequences_raw(cls, x: Any, ff_weight: Any, bias: Any, rec_weight: Any, state_h: Any, state_c: Any,
                           lengths: Any):
        return lstm_sequences(x, ff_weight, bias, rec_weight, state_h, state_c, lengths, cls.lstm_raw)

    @classmethod
    def lstm_raw(cls, xw: Any, rec_weight: Any, state_h: Any, state_c: Any):
        if lstm_function_applies(xw, rec_weight, state_h, state_c):
            return LSTMFunction.apply(xw, rec_weight, state_h, state_c)
        return cls.lstm_autograd(xw, rec_weight, state_h, state_c)

    @staticmethod
    def lstm_autograd(xw: Any, rec_weight: Any, state_h: Any, state_c: Any):
        """`lstm_raw` as a Python loop of torch ops, differentiated by autograd."""
        h, cell = state_h, state_c
        hs, cells = [], []
        for t in range(xw.shape[0]):
            c, i, f, o = torch.chunk(xw[t] + torch.matmul(h, rec_weight), 4, dim=-1)
            cell = torch.sigmoid(f) * cell + torch.sigmoid(i) * torch.tanh(c)
            h = torch.sigmoid(o) * torch.tanh(cell)
            hs.append(h)
            cells.append(cell)
        return _stack(hs, state_h), _stack(cells, state_c)

    @classmethod
    def gru_raw(cls, xw: Any, rec_weight: Any, state: Any) -> Any:
        n = rec_weight.shape[0]
        gates_weights, candidate_weights = rec_weight[:, :2 * n], rec_weight[:, 2 * n:]
        h, hs = state, []
        for frame in torch.unbind(xw, 0):
            gates = torch.sigmoid(torch.addmm(frame[:, :2 * n], h, gates_weights))
            update, reset = gates[:, :n], gates[:, n:]
            candidate = torch.tanh(torch.addmm(frame[:, 2 * n:], reset * h, candidate_weights))
            h = update * h + (1.0 - update) * candidate
            hs.append(h)
        return _stack(hs, state)

    @classmethod
    def rnn_raw(cls, xw: Any, rec_weight: Any, state: Any, activation: Callable[[Any], Any]) -> Any:
        h, hs = state, []
        for frame in torch.unbind(xw, 0):
            h = activation(torch.addmm(frame, h, rec_weight))
            hs.append(h)
        return _stack(hs, state)


def _stack(steps, state):
    return torch.stack(steps) if steps else state.new_zeros((0,) + tuple(state.shape))
