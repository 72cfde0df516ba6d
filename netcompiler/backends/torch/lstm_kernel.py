"""The PyTorch backend's LSTM over whole sequences through aten's LSTM kernel (`torch.lstm`: the C++ loop that
`torch.nn.LSTM` runs, on packed sequences where lengths differ), for `rf.lstm` (frontend/rec.py calls
`lstm_sequences_raw` first and falls back to projecting the frames and running `lstm_raw`).

A Python loop over time costs ~10 dispatched ops per step forward and as many backward (lstm_function.py);
for small units (the 12AX demo's LSTM 10) that overhead is most of the train step. The kernel runs the same
math: netcompiler's weights (gate blocks c, i, f, o; W [in, 4n], W_re [n, 4n], b [4n]) are re-laid into
torch's (blocks i, f, c, o; weight_ih [4n, in], weight_hh [4n, n], bias_ih) on every call, which autograd
differentiates, with a zero bias_hh. Frames after a sequence's end are not computed (packed sequences); the
final states are each sequence's after its own last frame, the initial state for an empty sequence.

Not used where LSTMFunction is not (bfloat16 autocast, torch.compile, second-order gradients, mixed dtypes:
`lstm_function_applies`), nor for no frames or no sequences: `lstm_sequences` then returns None.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

import torch
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

from .lstm_function import lstm_function_applies


def _ifco(weight):
    """Gate blocks c, i, f, o along the last axis put in torch's order i, f, c (its "g"), o."""
    c, i, f, o = torch.chunk(weight, 4, dim=-1)
    return torch.cat([i, f, c, o], dim=-1)


def lstm_sequences(x: Any, ff_weight: Any, bias: Any, rec_weight: Any, state_h: Any, state_c: Any,
                   lengths: Any) -> Optional[Tuple[Any, Any, Any]]:
    """x [T, N, in] -> (h of every frame [T, N, n] (zero after each sequence's end), final h [N, n], final
    cell [N, n]); `lengths` an int or an integer tensor [N] or [] (<= T). None where the kernel does not apply."""
    steps, batch = x.shape[0], x.shape[1]
    if not steps or not batch or not lstm_function_applies(x, ff_weight, bias, rec_weight, state_h, state_c):
        return None
    params = [_ifco(ff_weight).t(), _ifco(rec_weight).t(), _ifco(bias), torch.zeros_like(bias)]
    train = torch.is_grad_enabled()
    if not torch.is_tensor(lengths):
        lengths = torch.tensor(lengths)
    lengths = lengths.to(torch.int64).expand(batch)
    shortest = int(lengths.min())
    if shortest >= steps:  # all sequences full: no packing
        hs, h, c = torch.lstm(x, (state_h[None], state_c[None]), params, True, 1, 0.0, train, False, False)
        return hs, h[0], c[0]
    packed = pack_padded_sequence(x, lengths.clamp(min=1).cpu(), enforce_sorted=False)
    order, restore = packed.sorted_indices, packed.unsorted_indices
    hx = (state_h.index_select(0, order)[None], state_c.index_select(0, order)[None])
    data, h, c = torch.lstm(packed.data, packed.batch_sizes, hx, params, True, 1, 0.0, train, False)
    hs, _ = pad_packed_sequence(PackedSequence(data, packed.batch_sizes, order, restore), total_length=steps)
    h, c = h[0].index_select(0, restore), c[0].index_select(0, restore)
    if shortest == 0:  # an empty sequence: its one computed frame undone, its initial state kept
        empty = (lengths == 0)[:, None]
        hs = hs.masked_fill(empty[None], 0.0)
        h, c = torch.where(empty, state_h, h), torch.where(empty, state_c, c)
    return hs, h, c
