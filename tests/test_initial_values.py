"""`backends/initial_values.py` (NumPy) against the TensorFlow backend's Keras initializers it reimplements."""

import numpy as np
import pytest

from netcompiler.backends.initial_values import _blocks_at, _philox_block, initial_value
from netcompiler.backends.tensorflow.initializers import make_initializer
from netcompiler.errors import InvalidOptionError

SHAPES = [(3, 5), (7,), (1,), (2, 3, 4), (300, 37), (17, 1), (1, 17), (5, 4, 3, 2), (0, 4)]
SEEDS = [0, 1, 42, 12345, 2 ** 31 - 2, 2 ** 31 + 5, 2 ** 40 + 3]

UNIFORM_SPECS = ["glorot_uniform", "xavier", "he_uniform", "lecun_uniform", "random_uniform",
                 "random_uniform_initializer(minval=-0.3, maxval=0.7)",
                 "variance_scaling_initializer(factor=2.0, mode='fan_out', distribution='uniform')",
                 {"class": "variance_scaling", "mode": "fan_avg", "distribution": "uniform", "scale": 0.5}]
NORMAL_SPECS = ["glorot_normal", "he_normal", "lecun_normal", "random_normal",
                "random_normal_initializer(mean=0.1, stddev=0.3)", "truncated_normal",
                "truncated_normal_initializer(mean=-1.0, stddev=2.0)", "variance_scaling",
                {"class": "variance_scaling", "distribution": "untruncated_normal", "mode": "fan_avg"},
                {"class": "variance_scaling", "distribution": "normal", "scale": 3.0}]
CONSTANT_SPECS = [0.5, -2, "zeros", "ones", "zeros_initializer", "constant_initializer(value=0.25)",
                  {"class": "constant", "value": 3}]


def tf_value(spec, shape, seed):
    return make_initializer(spec, "layer", "option", seed=seed)(shape=list(shape), dtype="float32").numpy()


def ulps(a, b):
    return np.abs(a.view(np.int32).astype(np.int64) - b.view(np.int32).astype(np.int64))


@pytest.mark.parametrize("spec", UNIFORM_SPECS + CONSTANT_SPECS, ids=str)
def test_uniform_and_constant_initializers_are_bit_identical_to_tensorflow(spec):
    for shape in SHAPES:
        for seed in SEEDS:
            mine = initial_value(spec, shape, "float32", seed, "layer", "option")
            ref = tf_value(spec, shape, seed)
            assert mine is not None and mine.dtype == np.float32 and mine.shape == ref.shape
            np.testing.assert_array_equal(mine, ref, err_msg=f"{spec} {shape} seed {seed}")


@pytest.mark.parametrize("spec", NORMAL_SPECS, ids=str)
def test_normal_initializers_match_tensorflow_to_float32_precision(spec):
    # Box-Muller's log/sin/cos: TF's float32 libm calls, here float64 rounded -- a last-bit difference at most
    # a few ulps on ~1.5% of the values; every value is checked
    differing = total = 0
    for shape in SHAPES:
        for seed in SEEDS:
            mine = initial_value(spec, shape, "float32", seed, "layer", "option")
            ref = tf_value(spec, shape, seed)
            assert mine is not None and mine.dtype == np.float32 and mine.shape == ref.shape
            np.testing.assert_allclose(mine, ref, rtol=2e-6, atol=1e-6, err_msg=f"{spec} {shape} seed {seed}")
            if "mean=0.1" not in str(spec) and "mean=-1" not in str(spec):  # a mean added: ulps of the sum
                assert ulps(mine, ref).max(initial=0) <= 8, (spec, shape, seed)
            differing += int(np.sum(mine != ref))
            total += mine.size
    assert differing <= 0.05 * total, (differing, total)


def test_truncated_normal_groups_that_redraw_match_tensorflow():
    # 40000 values: thousands of 4-value groups need a second Philox block (|z| >= 2 dropped)
    for seed in (3, 99):
        mine = initial_value("truncated_normal_initializer(stddev=1.0)", (40000,), "float32", seed, "l", "o")
        ref = tf_value("truncated_normal_initializer(stddev=1.0)", (40000,), seed)
        np.testing.assert_allclose(mine, ref, rtol=2e-6, atol=1e-6)
        assert np.abs(mine).max() < 2.0


@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (3, 4, 5), (20, 20)])
def test_orthogonal_matches_tensorflow(shape):
    for seed in (0, 7, 123):
        for spec in ("orthogonal", "orthogonal_initializer(gain=2.0)"):
            mine = initial_value(spec, shape, "float32", seed, "l", "o")
            np.testing.assert_allclose(mine, tf_value(spec, shape, seed), atol=1e-5, err_msg=f"{spec} {shape}")


def test_seed_in_the_spec_wins_over_the_parameter_seed():
    mine = initial_value("random_normal_initializer(stddev=1.0, seed=5)", (10, 10), "float32", 42, "l", "o")
    np.testing.assert_allclose(mine, tf_value("random_normal_initializer(stddev=1.0, seed=5)", (10, 10), 42),
                               rtol=2e-6, atol=1e-6)
    assert not np.allclose(mine, initial_value("random_normal_initializer(stddev=1.0)", (10, 10), "float32", 42,
                                               "l", "o"))


@pytest.mark.parametrize("spec, shape, dtype, seed", [
    ("glorot_uniform", (3, 4), "float64", 1),  # another dtype
    ("glorot_uniform", (3, 4), "float32", None),  # no seed: Keras draws one
    ("orthogonal", (5,), "float32", 1),  # Keras refuses a vector
    ("variance_scaling_initializer(scale=-1.0)", (3, 4), "float32", 1),  # Keras refuses it
    ({"class": "glorot_uniform", "input_axes": [0], "output_axes": [1]}, (3, 4), "float32", 1),  # not covered
    ("random_normal_initializer(stddev='x')", (3, 4), "float32", 1),
])
def test_what_is_not_reimplemented_is_left_to_tensorflow(spec, shape, dtype, seed):
    assert initial_value(spec, shape, dtype, seed, "l", "o") is None


def test_a_bad_spec_gives_the_tensorflow_backends_error():
    with pytest.raises(InvalidOptionError, match="unknown initializer 'glorot_uniformm'"):
        initial_value("glorot_uniformm", (3, 4), "float32", 1, "layer", "option")


def test_torch_parameters_start_from_the_tensorflow_backends_values():
    from netcompiler.backends.torch.params import ParamOps

    for spec in ("glorot_uniform", "orthogonal", "he_normal", {"class": "glorot_uniform", "input_axes": [0],
                                                                "output_axes": [1]}):
        value = ParamOps.initial_value_raw(spec, (6, 4), "float32", 11, "layer", "option").numpy()
        np.testing.assert_allclose(value, tf_value(spec, (6, 4), 11), rtol=2e-6, atol=1e-5)
    value = ParamOps.initial_value_raw("glorot_uniform", (6, 4), "float64", 11, "layer", "option").numpy()
    assert value.dtype == np.float64
    np.testing.assert_array_equal(value, make_initializer("glorot_uniform", "l", "o", seed=11)(
        shape=[6, 4], dtype="float64").numpy())


@pytest.mark.parametrize("counter", [(0xFFFFFFF0, 7, 3, 9), (0xFFFFFFF0, 0xFFFFFFFF, 0xFFFFFFFF, 2), (5, 6, 7, 8)])
def test_philox_blocks_with_a_carry_between_counter_words_match_the_one_block_form(counter):
    # the NumPy form adds the offsets to the 128-bit counter; the Python-integer form of one block is the reference
    key, offsets = (0x12345678, 0x9ABCDEF0), np.array([0, 1, 15, 16, 17, 40], np.int64)
    words = _blocks_at(offsets, key, np.array(counter, np.uint64))
    value = sum(w << (32 * k) for k, w in enumerate(counter))
    for row, offset in zip(words, offsets):
        total = (value + int(offset)) % 2 ** 128
        expected = _philox_block(tuple((total >> (32 * k)) & 0xFFFFFFFF for k in range(4)), key)
        assert tuple(int(w) for w in row) == expected
