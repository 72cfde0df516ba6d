"""The TensorFlow backend's LSTM recurrence: one forward `tf.while_loop` and a hand-written backward loop.

Autodiff of a loop over `h W_re` pays, at every step of the gradient loop, a small matmul for the gradient
of `W_re` and an accumulation into it, plus the gradient ops of every gate op one by one. Here the forward
loop keeps each step's gate activations; the backward loop (`tf.custom_gradient`) only carries dh and dc
back through time: per step the pre-activation gradients dz of the four gates and dh_prev = dz W_re^T. The
gradient of `W_re` is then one matmul over all frames (h_prev^T dz), and the gradient of the projected input
`xw` is dz itself (the projection's own gradient is one matmul outside, by autodiff). On CPU (one 2x256
layer, T 250, B 8) this took the forward + backward from 441 to 326 ms of CPU time (benchmarks/README.md).

Gate blocks along the last axis of `xw` and `rec_weight`: c, i, f, o (RETURNN's native LSTM, as
netcompiler/frontend/rec.py): cell' = sigmoid(f) cell + sigmoid(i) tanh(c), h' = sigmoid(o) tanh(cell').
"""

from __future__ import annotations

from typing import Any, Tuple

import tensorflow as tf


def lstm_loop(xw: Any, rec_weight: Any, state_h: Any, state_c: Any) -> Tuple[Any, Any]:
    """h and cell of every step, [T, N, n] each, from xw [T, N, 4n] (x W + b), rec_weight [n, 4n] and the
    initial states [N, n]."""
    return _lstm(*(tf.convert_to_tensor(a) for a in (xw, rec_weight, state_h, state_c)))


@tf.custom_gradient
def _lstm(xw, rec_weight, state_h, state_c):
    hs, cells, gates = _forward(xw, rec_weight, state_h, state_c)

    def grad(d_hs, d_cells):
        d_hs = tf.zeros_like(hs) if d_hs is None else d_hs
        d_cells = tf.zeros_like(cells) if d_cells is None else d_cells
        d_xw, d_h0, d_c0 = _backward(d_hs, d_cells, gates, cells, rec_weight, state_c)
        n = rec_weight.shape[0]
        h_prev = tf.concat([state_h[None], hs], 0)[:-1]  # h of the step before each step (empty for T = 0)
        d_rec = tf.matmul(tf.reshape(h_prev, [-1, n]), tf.reshape(d_xw, [-1, 4 * n]), transpose_a=True)
        return d_xw, d_rec, d_h0, d_c0

    return (hs, cells), grad


def _arrays(size, like, count):
    """`count` TensorArrays of `size` elements shaped as one step of `like` (a tensor [T, ...])."""
    return [tf.TensorArray(like.dtype, size=size, element_shape=like.shape[1:]) for _ in range(count)]


def _stacked(array, steps, batch, size):
    """The TensorArray's elements stacked, [T, batch, size]: TensorArray cannot stack none of unknown shape."""
    return tf.cond(steps > 0, array.stack, lambda: tf.zeros([0, batch, size], array.dtype))


def _forward(xw, rec_weight, state_h, state_c):
    """hs, cells and the activated gates [T, N, 4n] (tanh(c), sigmoid(i), sigmoid(f), sigmoid(o)) of every step."""
    n, steps = rec_weight.shape[0], tf.shape(xw)[0]

    def body(t, h, cell, h_out, cell_out, gates_out):
        z = xw[t] + tf.matmul(h, rec_weight)
        candidate, ifo = tf.tanh(z[:, :n]), tf.sigmoid(z[:, n:])
        cell = ifo[:, n:2 * n] * cell + ifo[:, :n] * candidate
        h = ifo[:, 2 * n:] * tf.tanh(cell)
        return (t + 1, h, cell, h_out.write(t, h), cell_out.write(t, cell),
                gates_out.write(t, tf.concat([candidate, ifo], -1)))

    _, _, _, h_out, cell_out, gates_out = tf.while_loop(
        lambda t, *_: t < steps, body,
        (tf.constant(0), state_h, state_c, *_arrays(steps, state_h[None], 2), *_arrays(steps, xw, 1)))
    batch = tf.shape(xw)[1]
    return (_stacked(h_out, steps, batch, n), _stacked(cell_out, steps, batch, n),
            _stacked(gates_out, steps, batch, 4 * n))


def _backward(d_hs, d_cells, gates, cells, rec_weight, state_c):
    """From the last step to the first: dz [T, N, 4n] (the gradient of xw) and the gradients of both initial
    states. What does not depend on the carried dh/dc is computed for all frames at once before the loop, so
    that a step is few ops: dc += dh o (1 - tanh(cell)^2), dz = [dc, dc, dc, dh] * factors."""
    n, steps = rec_weight.shape[0], tf.shape(gates)[0]
    cell_prev = tf.concat([state_c[None], cells], 0)[:-1]
    g, i, f, o = tf.split(gates, 4, axis=-1)
    tanh_cell = tf.tanh(cells)
    via_h = o * (1.0 - tanh_cell * tanh_cell)
    factors = tf.concat([i * (1.0 - g * g), g * i * (1.0 - i), cell_prev * f * (1.0 - f),
                         tanh_cell * o * (1.0 - o)], -1)

    def body(t, d_h, d_cell, dz_out):
        d_h = d_h + d_hs[t]
        d_cell = d_cell + d_cells[t] + d_h * via_h[t]
        dz = tf.concat([d_cell, d_cell, d_cell, d_h], -1) * factors[t]
        return t - 1, tf.matmul(dz, rec_weight, transpose_b=True), d_cell * f[t], dz_out.write(t, dz)

    (dz_out,) = _arrays(steps, gates, 1)
    _, d_h0, d_c0, dz_out = tf.while_loop(lambda t, *_: t >= 0, body,
                                          (steps - 1, tf.zeros_like(state_c), tf.zeros_like(state_c), dz_out))
    return _stacked(dz_out, steps, tf.shape(gates)[1], 4 * n), d_h0, d_c0
