"""The TensorFlow backend's recurrences: each one `tf.scan` (one graph loop, traced once for any length).

TF's fused BlockLSTMV2 kernel was measured and not used: on CPU its gradient kernel made a BLSTM train step
about 3x slower than the scan (benchmarks/train_step.py).
"""

from __future__ import annotations

from typing import Any, Callable

import tensorflow as tf


class RecurrentOps:
    """LSTM, GRU and simple RNN steps over time-major inputs projected before the loop (`xw` = x W + b)."""

    @classmethod
    def lstm_raw(cls, xw: Any, rec_weight: Any, state_h: Any, state_c: Any):
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
