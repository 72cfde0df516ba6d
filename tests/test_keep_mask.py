"""TensorFlow dropout masks from 16 random bits per entry (backends/tensorflow/keep_mask.py): the keep rate on
every path, independence within and across steps and loop iterations, and `tf.random.set_seed` determinism."""

import numpy as np
import pytest
import tensorflow as tf

from netcompiler.backends.tensorflow.keep_mask import float_masks, keep_mask


def mask_step(static, rate, count=1):
    """A traced step making `count` masks (their shape given as a tensor, as dropout_raw's Shape op)."""
    @tf.function(input_signature=[tf.TensorSpec([len(static)], tf.int32)])
    def step(shape):
        return [keep_mask(shape, static, rate) for _ in range(count)]
    return step


def traced_masks(shape, static, rate, count=1):
    return [m.numpy() for m in mask_step(static, rate, count)(tf.constant(shape, tf.int32))]


@pytest.mark.parametrize("static", [
    [16, 100, 64],          # every size known: the halved shape is a constant
    [None, None, 64],       # the last axis known and even: halved there
    [None, 100, 63],        # the last axis odd: halved along another even one
    [None, None, 63],       # no axis known to be even: a float per entry
], ids=["static", "last-even", "other-even", "float"])
@pytest.mark.parametrize("rate", [0.1, 0.3])
def test_masks_keep_one_minus_the_rate(static, rate):
    shape = [16, 100, 64 if static[-1] == 64 else 63]
    (mask,) = traced_masks(shape, static, rate)
    assert mask.shape == tuple(shape) and mask.dtype == np.bool_
    sigma = np.sqrt(rate * (1 - rate) / mask.size)
    assert abs(mask.mean() - (1 - rate)) < 5 * sigma
    # no structure along any axis: each row's and column's rate is the overall one
    assert abs(mask.mean(axis=(0, 1)) - (1 - rate)).max() < 6 * np.sqrt(rate * (1 - rate) / 1600)


def test_masks_of_one_step_and_of_two_runs_of_it_are_independent():
    step, shape = mask_step([None, None, 64], 0.5, count=2), tf.constant([8, 50, 64])
    first, second = [m.numpy() for m in step(shape)], [m.numpy() for m in step(shape)]
    for a, b in ((first[0], first[1]), (first[0], second[0]), (first[1], second[1])):
        assert abs((a == b).mean() - 0.5) < 0.02  # independent masks agree on half the entries at rate 0.5


def test_a_loop_body_draws_new_masks_in_every_iteration():
    @tf.function
    def masks():
        shape = tf.constant([8, 50, 64])

        def body(i, out):
            return i + 1, out.write(i, keep_mask(shape, [None, None, 64], 0.5))
        _, out = tf.while_loop(lambda i, _: i < 3, body, [0, tf.TensorArray(tf.bool, 3)])
        return out.stack()

    m = masks().numpy()
    for i, j in ((0, 1), (1, 2)):
        assert abs((m[i] == m[j]).mean() - 0.5) < 0.02


def test_masks_follow_tf_random_set_seed():
    runs = []
    for seed in (5, 5, 6):
        tf.random.set_seed(seed)
        runs.append(traced_masks([8, 50, 64], [None, None, 64], 0.5)[0])
    np.testing.assert_array_equal(runs[0], runs[1])
    assert not np.array_equal(runs[0], runs[2])


def test_a_step_traced_for_xla_draws_floats():
    def op_types(step):
        return {op.type for op in step.get_concrete_function().graph.get_operations()}

    with float_masks():
        xla = op_types(mask_step([None, None, 64], 0.1))
    assert "RandomUniform" in xla and "StatelessRandomUniformFullIntV2" not in xla
    assert "StatelessRandomUniformFullIntV2" in op_types(mask_step([None, None, 64], 0.1))
