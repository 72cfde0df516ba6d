"""TensorFlow: the ops the backend gives a gradient of its own (a tensor masked with a constant; softmax and
log-softmax over an axis that is not the last) have TF's own gradient values, on the tape and inside a
`while_loop_raw` body (differentiated by `tf.gradients`, which does not read the tape), and fewer gradient ops.
A `where` that broadcasts its tensor keeps TF's gradient (the simple one would have the wrong shape)."""

import collections

import numpy as np
import pytest
import tensorflow as tf

from netcompiler.backends.tensorflow.backend import TensorFlowBackend as TFBackend

RNG = np.random.RandomState(0)
X = RNG.randn(4, 3, 5).astype("float32")
MASK = RNG.rand(4, 3, 1) > 0.4  # broadcast along the last axis, as a sequence mask is
WEIGHT = RNG.randn(4, 3, 5).astype("float32")  # makes the loss's gradient differ per entry


def masked(x, mask):
    return TFBackend.where_raw(mask, x, tf.constant(-2.5))


def masked_first(x, mask):  # the constant on the other side
    return TFBackend.where_raw(mask, tf.constant(0.0), x)


def softmax(x, _):
    return TFBackend.softmax_raw(x, 1, log=False)


def log_softmax(x, _):
    return TFBackend.softmax_raw(x, 1, log=True)


REFERENCE = {masked: lambda x, m: tf.where(m, x, -2.5), masked_first: lambda x, m: tf.where(m, 0.0, x),
             softmax: lambda x, _: tf.nn.softmax(x, axis=1), log_softmax: lambda x, _: tf.nn.log_softmax(x, axis=1)}


def value_and_gradient(op, in_loop):
    @tf.function
    def run(x, mask):
        with tf.GradientTape() as tape:
            tape.watch(x)
            if in_loop:  # two steps: acc <- op(acc + x) * 0.5
                _, y = TFBackend.while_loop_raw(lambda i, acc: i < 2, lambda i, acc: (i + 1, op(acc + x, mask) * 0.5),
                                                [tf.constant(0), tf.zeros_like(x)])
            else:
                y = op(x, mask)
            loss = tf.reduce_sum(tf.sin(y) * WEIGHT)
        return y, tape.gradient(loss, x)
    return run


@pytest.mark.parametrize("in_loop", [False, True], ids=["tape", "loop body"])
@pytest.mark.parametrize("op", list(REFERENCE), ids=lambda f: f.__name__)
def test_values_and_gradients_are_tensorflows(op, in_loop):
    got = [t.numpy() for t in value_and_gradient(op, in_loop)(tf.constant(X), tf.constant(MASK))]
    want = [t.numpy() for t in value_and_gradient(REFERENCE[op], in_loop)(tf.constant(X), tf.constant(MASK))]
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-4, atol=1e-5)


def gradient_ops(run):
    """Ops of the loop's gradient body, by type."""
    graph_def = run.get_concrete_function(tf.TensorSpec([4, 3, 5]), tf.TensorSpec([4, 3, 1], tf.bool)).graph \
        .as_graph_def()
    bodies = [f for f in graph_def.library.function if "while_body" in f.signature.name and "grad" in
              f.signature.name]
    assert len(bodies) == 1
    return collections.Counter(node.op for node in bodies[0].node_def)


@pytest.mark.parametrize("op", [masked, softmax], ids=lambda f: f.__name__)
def test_the_loop_gradient_has_fewer_ops(op):
    ours, theirs = gradient_ops(value_and_gradient(op, True)), gradient_ops(value_and_gradient(REFERENCE[op], True))
    assert sum(ours.values()) < sum(theirs.values()) - 5, (ours, theirs)
    assert ours["BroadcastGradientArgs"] == 0


def test_a_broadcast_tensor_keeps_tensorflows_gradient():
    x = RNG.randn(4, 1, 5).astype("float32")  # broadcast along the mask's second axis

    @tf.function
    def run(x, mask):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = TFBackend.where_raw(mask, x, tf.constant(0.0))
            loss = tf.reduce_sum(y * WEIGHT[:, :, :1])
        return tape.gradient(loss, x)

    grad = run(tf.constant(x), tf.constant(MASK)).numpy()
    assert grad.shape == x.shape
    want = np.broadcast_to((MASK * WEIGHT[:, :, :1]).sum(axis=1, keepdims=True), x.shape)
    np.testing.assert_allclose(grad, want, rtol=1e-5)
