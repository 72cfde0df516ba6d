"""The PyTorch backend's LSTM recurrence as one autograd Function with a hand-written backward loop.

Autograd of the Python loop over time records ~10 ops per step and replays their backward one by one,
accumulating the gradient of `W_re` step by step. Here the forward loop runs without recording (keeping each
step's gate activations), and the backward loop only carries dh and dc back through time: per step
dz = [dc, dc, dc, dh] * factors (the factors computed for all frames at once before the loop) and
dh_prev = dz W_re^T; the gradient of `W_re` is one matmul over all frames afterwards. The same algorithm as
the TensorFlow backend's lstm_loop.py.

Gate blocks c, i, f, o along the last axis (RETURNN's native LSTM, netcompiler/frontend/rec.py). Not used under
bfloat16 autocast, inside torch.compile, or where second-order gradients are taken (`backends/gradient_order.py`,
e.g. for `maximize_grad_norm`): its forward is not recorded, so its backward cannot be differentiated; recurrent.py
then runs the plain autograd loop.
"""

from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable

from ..gradient_order import second_order_needed


class LSTMFunction(torch.autograd.Function):
    """apply(xw [T, N, 4n], rec_weight [n, 4n], state_h [N, n], state_c [N, n]) -> (hs, cells), [T, N, n] each."""

    @staticmethod
    def forward(ctx, xw, rec_weight, state_h, state_c):
        steps, n = xw.shape[0], rec_weight.shape[0]
        hs = xw.new_empty((steps,) + tuple(state_h.shape))
        cells, gates = torch.empty_like(hs), torch.empty_like(xw)
        h, cell = state_h, state_c
        for t in range(steps):
            z = torch.addmm(xw[t], h, rec_weight)
            act = gates[t]
            torch.tanh(z[:, :n], out=act[:, :n])
            torch.sigmoid(z[:, n:], out=act[:, n:])
            cell = torch.addcmul(act[:, 2 * n:3 * n] * cell, act[:, n:2 * n], act[:, :n], out=cells[t])
            h = torch.mul(act[:, 3 * n:], torch.tanh(cell), out=hs[t])
        ctx.save_for_backward(rec_weight, state_h, state_c, hs, cells, gates)
        return hs, cells

    @staticmethod
    @once_differentiable
    def backward(ctx, d_hs, d_cells):
        rec_weight, state_h, state_c, hs, cells, gates = ctx.saved_tensors
        n = rec_weight.shape[0]
        d_hs = torch.zeros_like(hs) if d_hs is None else d_hs
        d_cells = torch.zeros_like(cells) if d_cells is None else d_cells
        g, i, f, o = gates.chunk(4, dim=-1)
        tanh_cell = torch.tanh(cells)
        cell_prev = torch.cat([state_c[None].expand(1, *cells.shape[1:]), cells])[:-1]
        via_h = o * (1.0 - tanh_cell * tanh_cell)
        factors = torch.cat([i * (1.0 - g * g), g * i * (1.0 - i), cell_prev * f * (1.0 - f),
                             tanh_cell * o * (1.0 - o)], dim=-1)
        dz = torch.empty_like(gates)
        d_h, d_cell = torch.zeros_like(state_h), torch.zeros_like(state_c)
        rec_t = rec_weight.t()
        for t in range(hs.shape[0] - 1, -1, -1):
            d_h = d_h + d_hs[t]
            d_cell = torch.addcmul(d_cell + d_cells[t], d_h, via_h[t])
            torch.mul(torch.cat([d_cell, d_cell, d_cell, d_h], dim=-1), factors[t], out=dz[t])
            d_h = torch.mm(dz[t], rec_t)
            d_cell = d_cell * f[t]
        h_prev = torch.cat([state_h[None].expand(1, *hs.shape[1:]), hs])[:-1]
        d_rec = torch.mm(h_prev.reshape(-1, n).t(), dz.reshape(-1, 4 * n))
        return dz, d_rec, _reduced_to(d_h, state_h), _reduced_to(d_cell, state_c)


def _reduced_to(grad, like):
    """`grad` summed over what `like` was broadcast along (an initial state shared by all sequences)."""
    return grad if grad.shape == like.shape else grad.sum_to_size(like.shape)


def lstm_function_applies(*tensors) -> bool:
    """Whether LSTMFunction can run: no autocast (its writes into preallocated buffers need one dtype), not
    traced by torch.compile, no second-order gradients, all of one floating dtype."""
    return not torch.is_autocast_enabled("cpu") and not torch.compiler.is_compiling() and \
        not second_order_needed() and \
        len({t.dtype for t in tensors}) == 1 and tensors[0].is_floating_point()
