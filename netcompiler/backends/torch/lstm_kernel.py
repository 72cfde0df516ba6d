"""The PyTorch backend's LSTM over whole sequences through aten's LSTM kernel (`torch.lstm`: the C++ loop that
`torch.nn.LSTM` runs), for `rf.lstm` (frontend/rec.py calls
`lstm_sequences_raw` first and falls back to projecting the frames and running `lstm_raw`).

A Python loop over time costs ~10 dispatched ops per step forward and as many backward (lstm_function.py);
for small units (the 12AX demo's LSTM 10) that overhead is most of the train step. The kernel runs the same
math: netcompiler's weights (gate blocks c, i, f, o; W [in, 4n], W_re [n, 4n], b [4n]) are re-laid into
torch's (blocks i, f, c, o; weight_ih [4n, in], weight_hh [4n, n], bias_ih) on every call, which autograd
differentiates, with a zero bias_hh. Where lengths differ, the kernel runs the frames of the shortest sequence
and the Python loop (`lstm_raw`) the rest: aten's packed-sequence path (what nn.LSTM runs on ragged batches)
measured 2-4x slower than that loop on CPU, its unpacked path 2-6x faster. The final states are each sequence's
after its own last frame (the initial state for an empty sequence); h is zero after a sequence's end.

Not used where LSTMFunction is not (bfloat16 autocast, torch.compile, second-order gradients, mixed dtypes:
`lstm_function_applies`), nor for no frames or no sequences: `lstm_sequences` then returns None.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Optional, Tuple

import torch

from .lstm_function import lstm_function_applies


def _ifco(weight):
    """Gate blocks c, i, f, o along the last axis put in torch's order i, f, c (its "g"), o: one gather (measured
    ~35% cheaper forward and backward than splitting into the four blocks and concatenating them)."""
    return torch.index_select(weight, -1, _ifco_order(weight.shape[-1] // 4, weight.device))


@functools.lru_cache(maxsize=None)
def _ifco_order(n: int, device) -> torch.Tensor:
    """The positions of blocks i, f, c, o (each of `n`) in a vector of blocks c, i, f, o, on `device`; a normal
    tensor even when first asked for under `torch.inference_mode` (later backward passes save it)."""
    with torch.inference_mode(False):
        return torch.cat([torch.arange(n, 3 * n), torch.arange(n), torch.arange(3 * n, 4 * n)]).to(device)


def lstm_sequences(x: Any, ff_weight: Any, bias: Any, rec_weight: Any, state_h: Any, state_c: Any, lengths: Any,
                   loop: Callable) -> Optional[Tuple[Any, Any, Any]]:
    """x [T, N, in] -> (h of every frame [T, N, n] (zero after each sequence's end), final h [N, n], final
    cell [N, n]); `lengths` an int or an integer tensor [N] or [] (<= T); `loop` is `lstm_raw` (xw, rec_weight,
    h, c) -> (hs, cells), for the frames after the shortest sequence's end. None where the kernel does not apply."""
    steps, batch, n = x.shape[0], x.shape[1], rec_weight.shape[0]
    if not steps or not batch or not lstm_function_applies(x, ff_weight, bias, rec_weight, state_h, state_c):
        return None
    params = [_ifco(ff_weight).t(), _ifco(rec_weight).t(), _ifco(bias), torch.zeros_like(bias)]
    train = torch.is_grad_enabled()
    if not torch.is_tensor(lengths):
        lengths = torch.tensor(lengths)
    lengths = lengths.to(torch.int64).expand(batch)
    shortest = int(lengths.min())
    if shortest >= steps:  # all sequences full: one kernel call
        hs, h, c = torch.lstm(x, (state_h[None], state_c[None]), params, True, 1, 0.0, train, False, False)
        return hs, h[0], c[0]
    # ragged: the kernel for the frames every sequence has (aten's packed path measured 2-4x slower than `loop`),
    # then `loop` (lstm_raw: the Python loop) for the rest, from the kernel's states
    head_hs, h, c = torch.lstm(x[:shortest], (state_h[None], state_c[None]), params, True, 1, 0.0, train, False,
                               False) if shortest else (x.new_zeros((0, batch, n)), state_h[None], state_c[None])
    tail_hs, tail_cells = loop(torch.matmul(x[shortest:], ff_weight) + bias, rec_weight, h[0], c[0])
    rows = torch.arange(batch)
    hs = torch.cat([head_hs, tail_hs])
    final_h = torch.cat([state_h[None].expand(1, batch, n), hs])[lengths, rows]
    final_c = torch.cat([c, tail_cells])[lengths - shortest, rows]
    valid = (torch.arange(steps)[:, None] < lengths[None, :])[:, :, None]
    return torch.where(valid, hs, 0.0), final_h, final_c
