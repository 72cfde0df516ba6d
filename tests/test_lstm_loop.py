"""The TensorFlow LSTM loop with its hand-written backward pass (netcompiler/backends/tensorflow/lstm_loop.py)
against the same recurrence as a `tf.scan` differentiated by autodiff, on ragged lengths: outputs masked
after each sequence's end and final states taken at each sequence's last frame, as netcompiler/frontend/rec.py
uses them."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from netcompiler.backends.tensorflow.lstm_loop import lstm_loop  # noqa: E402
from netcompiler.backends.tensorflow.recurrent import RecurrentOps  # noqa: E402


def ragged_objective(lstm, xw, rec_weight, h0, c0, lengths, weights, use_cells=True):
    """A scalar from the masked outputs and the final states at each sequence's end (an empty sequence: the
    initial state), weighted with fixed random weights so every gradient entry matters."""
    hs, cells = lstm(xw, rec_weight, h0, c0)
    mask = tf.cast(tf.sequence_mask(lengths, tf.shape(xw)[0]), xw.dtype)  # [N, T]
    out = tf.reduce_sum(hs * tf.transpose(mask)[:, :, None] * weights[0])
    def final(states, initial):  # the state after each sequence's last frame; the initial one for an empty one
        return tf.gather(tf.transpose(tf.concat([initial[None], states], 0), [1, 0, 2]), lengths, batch_dims=1)

    out += tf.reduce_sum(final(hs, h0) * weights[1])
    return out + tf.reduce_sum(final(cells, c0) * weights[2]) if use_cells else out


def values_and_gradients(lstm, args, lengths, weights, use_cells=True, function=False):
    def run(*args):
        with tf.GradientTape() as tape:
            tape.watch(args)
            out = ragged_objective(lstm, *args, lengths, weights, use_cells)
        return out, tape.gradient(out, args)

    if function:  # as the trainer runs it: traced once for an open time and batch size
        run = tf.function(run, input_signature=[tf.TensorSpec([None, None, a.shape[-1]]) if a.shape.rank == 3 else
                                                tf.TensorSpec([None, a.shape[-1]]) if i > 1 else
                                                tf.TensorSpec(a.shape) for i, a in enumerate(args)])
    return run(*args)


def make_args(steps, batch, n, seed=0):
    rng = np.random.RandomState(seed)
    xw = tf.constant(rng.randn(steps, batch, 4 * n).astype(np.float32))
    rec_weight = tf.constant(rng.randn(n, 4 * n).astype(np.float32) * 0.3)
    h0, c0 = (tf.constant(rng.randn(batch, n).astype(np.float32) * 0.5) for _ in range(2))
    weights = [tf.constant(rng.randn(*shape).astype(np.float32)) for shape in ((n,), (batch, n), (batch, n))]
    return (xw, rec_weight, h0, c0), weights


@pytest.mark.parametrize("function", [False, True])
@pytest.mark.parametrize("use_cells", [True, False])
def test_gradients_match_autodiff_of_the_scan_on_ragged_lengths(function, use_cells):
    args, weights = make_args(steps=9, batch=5, n=6)
    lengths = tf.constant([9, 4, 1, 0, 7])
    got_out, got = values_and_gradients(lstm_loop, args, lengths, weights, use_cells, function)
    want_out, want = values_and_gradients(RecurrentOps.lstm_scan, args, lengths, weights, use_cells, function)
    np.testing.assert_allclose(got_out.numpy(), want_out.numpy(), rtol=1e-5)
    for name, g, w in zip(("xw", "rec_weight", "state_h", "state_c"), got, want):
        assert np.abs(w.numpy()).max() > 1e-3, name  # the comparison means something
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)
    # frames after a sequence's end get no gradient
    assert np.all(got[0].numpy()[4:, 1] == 0) and np.all(got[0].numpy()[:, 3] == 0)


def test_forward_matches_numpy():
    args, _ = make_args(steps=4, batch=3, n=5, seed=1)
    xw, rec_weight, h, cell = (a.numpy() for a in args)
    hs, cells = lstm_loop(*args)
    sigmoid = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    for t in range(4):
        c, i, f, o = np.split(xw[t] + h @ rec_weight, 4, axis=-1)  # RETURNN's native gate order
        cell = sigmoid(f) * cell + sigmoid(i) * np.tanh(c)
        h = sigmoid(o) * np.tanh(cell)
        np.testing.assert_allclose(hs[t].numpy(), h, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(cells[t].numpy(), cell, rtol=1e-5, atol=1e-6)


def test_no_steps_gives_empty_outputs_and_the_gradient_to_the_initial_state():
    args, weights = make_args(steps=0, batch=2, n=3)
    lengths = tf.constant([0, 0])
    _, got = values_and_gradients(lstm_loop, args, lengths, weights, function=True)
    assert got[0].shape == (0, 2, 12) and np.all(got[1].numpy() == 0)
    np.testing.assert_allclose(got[2].numpy(), weights[1].numpy())
    np.testing.assert_allclose(got[3].numpy(), weights[2].numpy())
