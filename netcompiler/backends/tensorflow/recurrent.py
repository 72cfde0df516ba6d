"""The TensorFlow backend's recurrences: each one graph loop, traced once for any length (GRU and simple RNN a
`tf.scan`; the LSTM see below).

TF's fused BlockLSTMV2 kernel was measured and not used: on CPU its gradient kernel made a BLSTM train step
about 3x slower than the scan (benchmarks/train_step.py). The LSTM is a `tf.while_loop` with a hand-written
backward loop instead (lstm_loop.py); `lstm_scan` is the plain `tf.scan` form, differentiated by autodiff
(the reference of its gradient test).
"""

from __future__ import annotations

from typing import Any, Callable

import tensorflow as tf

from ..gradient_order import second_order_needed
from .lstm_loop import lstm_loop


class RecurrentOps:
    """LSTM, GRU and simple RNN steps over time-major inputs projected before the loop (`xw` = x W + b)."""

    @classmethod
    def lstm_raw(cls, xw: Any, rec_weight: Any, state_h: Any, state_c: Any):
        if second_order_needed():  # lstm_loop's hand-written backward cannot be differentiated again
            return cls.lstm_scan(xw, rec_weight, state_h, state_c)
        return lstm_loop(xw, rec_weight, state_h, state_c)

    @staticmethod
    def lstm_scan(xw: Any, rec_weight: Any, state_h: Any, state_c: Any):
        """`lstm_raw` as one `tf.scan`, its gradient by autodiff."""
        def step(state, xw_t):
            h, cell = state
            c, i, f, o = tf.split(xw_t + tf.matmul(h, rec_weight), 4, axis=-1)
            cell = tf.sigmoid(f) * cell + tf.sigmoid(i) * tf.tanh(c)
            return tf.sigmoid(o) * tf.tanh(cell), cell

        return tf.scan(step, xw, initializer=(state_h, state_c))

    @classmethod
    def gru_raw(cls, xw: Any, rec_weight: Any, state: Any) -> Any:
        n = rec_weight.shape[0]
        gates_weights, candidate_weights = rec_weight[:, :2 * n], rec_weight[:, 2 * n:]

        def step(h, xw_t):
            gates = tf.sigmoid(xw_t[:, :2 * n] + tf.matmul(h, gates_weights))
            update, reset = gates[:, :n], gates[:, n:]
            candidate = tf.tanh(xw_t[:, 2 * n:] + tf.matmul(reset * h, candidate_weights))
            return update * h + (1.0 - update) * candidate

        return tf.scan(step, xw, initializer=state)

    @classmethod
    def rnn_raw(cls, xw: Any, rec_weight: Any, state: Any, activation: Callable[[Any], Any]) -> Any:
        return tf.scan(lambda h, xw_t: activation(xw_t + tf.matmul(h, rec_weight)), xw, initializer=state)
