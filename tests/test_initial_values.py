"""`backends/initial_values.py` (NumPy) against the TensorFlow backend's Keras initializers it reimplements."""

import numpy as np
import pytest

from netcompiler.backends.initial_values import _blocks_at, _philox_block, initial_value, initial_values, \
    key_counter
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


@pytest.mark.parametrize("spec", ["glorot_uniform", "random_normal_initializer(stddev=1.0)",
                                  "truncated_normal_initializer(stddev=1.0)"])
def test_a_parameter_drawn_in_pieces_matches_tensorflow(spec):
    # 90300 values: more Philox blocks (and truncated-normal groups) than one NumPy call takes (_BATCH_BLOCKS),
    # so drawn in two pieces
    mine = initial_value(spec, (300, 301), "float32", 77, "l", "o")
    ref = tf_value(spec, (300, 301), 77)
    np.testing.assert_allclose(mine, ref, rtol=2e-6, atol=1e-6)
    assert ulps(mine, ref).max() <= (0 if spec == "glorot_uniform" else 8)


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


def test_philox_blocks_past_two_to_the_32_carry_the_offset_into_word_1():
    # the NumPy form splits the offsets into counter words 0 and 1; the Python-integer form of one block is the
    # reference (truncated normals of >= 2**26 values read blocks that far)
    offsets = np.array([0, 1, 2 ** 32 - 1, 2 ** 32, 2 ** 32 + 5, 3 * 2 ** 32 + 7], np.int64)
    for seed in (0, 42, 2 ** 40 + 3):
        key, (word2, word3) = key_counter(seed)
        for row, offset in zip(_blocks_at(offsets, [seed])[0], offsets):
            expected = _philox_block((int(offset) & 0xFFFFFFFF, int(offset) >> 32, word2, word3), key)
            assert tuple(int(w) for w in row) == expected


def test_parameters_drawn_together_get_the_values_each_gets_alone():
    # a network's requests: kinds and sizes mixed, more equal ones than one batched call takes, bad ones among them
    specs = ["glorot_uniform", "random_normal", "orthogonal", "glorot_normal", "zeros", 0.5, "random_uniform"]
    shapes = [(64, 64), (3, 5), (7,), (300, 60), (1, 1)]
    requests = [(spec, shape, "float32", seed, "l", "o") for seed in range(20) for spec in specs for shape in shapes]
    requests += [("glorot_uniform", (8,), "float64", 1, "l", "o"), ("random_normal", (4, 4), "float32", None, "l", "o")]
    together = initial_values(requests)
    assert together[-2:] == [None, None]
    for request, value in zip(requests, together):
        alone = initial_value(*request)
        assert (value is None) == (alone is None), request
        if value is not None:
            assert value.dtype == np.float32 and value.shape == request[1] and np.array_equal(value, alone), request


def test_a_network_of_equal_layers_draws_them_together_and_starts_where_tensorflow_does(monkeypatch):
    pytest.importorskip("torch")
    from netcompiler.backends import initial_values as module
    from netcompiler.builtin import load_builtin_layers
    from netcompiler.config import Config
    from netcompiler.emit.model import CompiledNetwork
    from netcompiler.network import build_network

    load_builtin_layers()
    net = {f"l{i}": {"class": "linear", "activation": "relu", "n_out": 16, "from": f"l{i - 1}" if i else "data"}
           for i in range(12)}
    net["output"] = {"class": "softmax", "loss": "ce", "from": "l11", "forward_weights_init": "orthogonal"}
    network = build_network(Config({"extern_data": {"data": {"dim": 16}, "classes": {"dim": 5, "sparse": True}},
                                    "network": net}))
    calls, blocks_at = [], module._blocks_at
    monkeypatch.setattr(module, "_blocks_at", lambda *args: calls.append(len(args[1])) or blocks_at(*args))
    torch_model = CompiledNetwork(network, seed=5, backend="torch")
    assert calls == [12, 1]  # the 12 glorot_uniform weights [16, 16] in one draw; the output's orthogonal one
    tf_model = CompiledNetwork(network, seed=5)
    for name, var in tf_model.params.items():  # (the orthogonal one's QR: to 1e-5, as alone)
        np.testing.assert_allclose(torch_model.params[name].detach().numpy(), var.numpy(), rtol=2e-6,
                                   atol=1e-5 if name == "output/W" else 0, err_msg=name)


def test_the_tensorflow_backend_draws_uniform_and_constant_values_with_numpy_and_the_rest_with_keras(monkeypatch):
    from netcompiler.backends import get_backend
    from netcompiler.backends.tensorflow import params

    requests = [("glorot_uniform", (64, 64), "float32", 7, "l", "W"), ("zeros", (64,), "float32", 8, "l", "b"),
                (0.5, (3,), "float32", 9, "l", "c"), ("he_uniform", (5, 2), "float32", 10, "m", "W"),
                ("glorot_normal", (6, 4), "float32", 11, "m", "V"), ("orthogonal", (4, 4), "float32", 12, "m", "O"),
                ("glorot_uniform", (3, 4), "float64", 13, "m", "D")]
    reference = [tf_value(spec, shape, seed) if dtype == "float32" else
                 make_initializer(spec, "l", "o", seed=seed)(shape=list(shape), dtype=dtype).numpy()
                 for spec, shape, dtype, seed, _, _ in requests]
    called = []
    monkeypatch.setattr(params, "make_initializer", lambda spec, *args, **kwargs: called.append(spec) or
                        make_initializer(spec, *args, **kwargs))
    values = get_backend("tensorflow").initial_values_raw(requests)
    assert called == ["glorot_normal", "orthogonal", "glorot_uniform"]  # normal draws, and float64, stay Keras's
    for request, value, want in zip(requests, values, reference):
        np.testing.assert_array_equal(np.asarray(value), want, err_msg=str(request))
