"""TensorFlow's linear map of a rank-3+ tensor as one Einsum with a tape gradient of its own
(`matmul_folded_raw`, `with_tape_gradients`): values, first and second gradients as NumPy computes them, inside a
traced step and eagerly; thin matrices and loop bodies are left to MatMul."""

import numpy as np
import pytest
import tensorflow as tf

from netcompiler.backends.tensorflow import core
from netcompiler.backends.tensorflow.backend import TensorFlowBackend as TFBackend


def reference(a, b, dy):
    """(y, dL/da, dL/db) of L = sum(y * dy), y = a b over a's last axis."""
    y = a @ b
    return y, dy @ b.T, a.reshape(-1, a.shape[-1]).T @ dy.reshape(-1, dy.shape[-1])


@pytest.mark.parametrize("shape", [(3, 5, 4), (2, 3, 5, 4)])
@pytest.mark.parametrize("traced", [False, True], ids=["eager", "traced"])
def test_values_and_gradients_are_the_matmuls(shape, traced, monkeypatch):
    monkeypatch.setattr(core, "FOLDED_MATMUL_MIN_SIDE", 1)  # small sizes keep NumPy's sums exact enough
    rng = np.random.RandomState(0)
    a, b = rng.randn(*shape).astype("float32"), rng.randn(shape[-1], 6).astype("float32")
    dy = rng.randn(*shape[:-1], 6).astype("float32")
    b_var = tf.Variable(b)

    def step(a):
        with tf.GradientTape(persistent=True) as outer:
            outer.watch(a)
            with tf.GradientTape() as tape:
                tape.watch(a)
                y = TFBackend.matmul_folded_raw(a, b_var)
                loss = tf.reduce_sum(y * dy)
            da, db = tape.gradient(loss, [a, b_var])
            norm = tf.reduce_sum(da * da)
        return y, da, db, outer.gradient(norm, b_var)

    run = tf.function(step) if traced else step
    y, da, db, d_norm = [t.numpy() for t in run(tf.constant(a))]
    want_y, want_da, want_db = reference(a, b, dy)
    np.testing.assert_allclose(y, want_y, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(da, want_da, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(db, want_db, rtol=1e-5, atol=1e-5)
    # d/db of sum((dy b^T)^2) = 2 dy^T (dy b^T): the second-order gradient goes through the tape's backward ops
    flat_dy = dy.reshape(-1, 6)
    np.testing.assert_allclose(d_norm, 2 * (flat_dy @ b.T).T @ flat_dy, rtol=1e-4, atol=1e-4)


def test_ranks_and_dtypes_it_does_not_take():
    b = tf.zeros([4, 6])
    assert TFBackend.matmul_folded_raw(tf.zeros([5, 4]), b) is None  # rank 2: a plain MatMul
    assert TFBackend.matmul_folded_raw(tf.zeros([2, 5, 4], tf.int32), tf.zeros([4, 6], tf.int32)) is None


def test_only_a_wide_matrix_outside_loops_is_folded_into_an_einsum():
    a = tf.zeros([2, 5, 64])
    assert TFBackend.matmul_folded_raw(a, tf.zeros([64, 63])) is None  # oneDNN's Einsum is slower there
    assert TFBackend.matmul_folded_raw(a, tf.zeros([64, 64])) is not None
    unknown = tf.function(lambda b: TFBackend.matmul_folded_raw(a, b))
    assert unknown.get_concrete_function(tf.TensorSpec([64, None])).structured_outputs is None

    folded = []

    @tf.function
    def in_loop(b):
        def body(i):
            folded.append(TFBackend.matmul_folded_raw(a, b))
            return [i + 1]
        return TFBackend.while_loop_raw(lambda i: i < 2, body, [tf.constant(0)])

    in_loop.get_concrete_function(tf.TensorSpec([64, 64]))
    assert folded == [None]  # in every step its per-call cost counts, and it saves no tracing there
