"""RETURNN settings the demos use that netcompiler mis-reported or ignored: `maximize_grad_norm`,
`gradient_nan_inf_filter`, the notices for `debug_add_check_numerics_ops` and `search_train_network_layers`,
`max_seq_len` on a built-in rec unit, and a layer's `n_out` from its `target` without a loss."""

import numpy as np
import pytest
import tensorflow as tf

from netcompiler.builtin import load_builtin_layers
from netcompiler.config import RETURNN_KEYS_NOT_USED, USED_KEYS, Config
from netcompiler.emit.model import CompiledNetwork
from netcompiler.engine.optimizers import clip_gradients_fn, filter_nan_inf, maximize_grad_norm, nan_inf_filter
from netcompiler.engine.trainer import Trainer
from netcompiler.errors import InvalidOptionError, MissingOptionError
from netcompiler.network import build_from_dict

load_builtin_layers()
EXTERN = {"data": {"dim": 3}, "classes": {"dim": 4, "sparse": True}}


# --- config keys --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("key, used", [("maximize_grad_norm", True), ("gradient_nan_inf_filter", True),
                                       ("debug_add_check_numerics_ops", False),
                                       ("search_train_network_layers", False)])
def test_demo_keys_are_known(key, used):
    assert (key in USED_KEYS) == used and (key in RETURNN_KEYS_NOT_USED) != used
    notices = Config({key: 1}).notices
    assert not any("did you mean" in n for n in notices)
    assert any(f"'{key}' has no effect in netcompiler" in n and "; ignored" in n for n in notices) != used


def test_nan_inf_filter_sets_non_finite_entries_to_zero_after_clipping():
    assert nan_inf_filter({}) is False and nan_inf_filter({"gradient_nan_inf_filter": True}) is True
    with pytest.raises(InvalidOptionError, match="gradient_nan_inf_filter"):
        nan_inf_filter({"gradient_nan_inf_filter": "yes"})
    dense = tf.constant([1.0, np.nan, np.inf, -np.inf, -2.0])
    sparse = tf.IndexedSlices(tf.constant([[np.nan, 3.0]]), tf.constant([1]), tf.constant([4, 2]))
    got = filter_nan_inf([dense, None, sparse])
    np.testing.assert_array_equal(got[0].numpy(), [1.0, 0.0, 0.0, 0.0, -2.0])
    assert got[1] is None and isinstance(got[2], tf.IndexedSlices)
    np.testing.assert_array_equal(got[2].values.numpy(), [[0.0, 3.0]])
    # clipping by value first (inf -> 1.5), then the filter (nan -> 0)
    process = clip_gradients_fn({"gradient_nan_inf_filter": True, "gradient_clip": 1.5})
    np.testing.assert_array_equal(process([dense])[0].numpy(), [1.0, 0.0, 1.5, -1.5, -1.5])
    process = clip_gradients_fn({"gradient_nan_inf_filter": True})
    np.testing.assert_array_equal(process([dense])[0].numpy(), [1.0, 0.0, 0.0, 0.0, -2.0])


# --- maximize_grad_norm -------------------------------------------------------------------------------------
def _model():
    net = build_from_dict({"output": {"class": "softmax", "from": "data", "loss": "ce", "target": "classes"}},
                          EXTERN)
    tf.random.set_seed(3)
    return CompiledNetwork(net)


def test_maximize_grad_norm_adds_the_gradient_of_minus_factor_times_the_grad_norm():
    assert maximize_grad_norm({}) == 0.0 and maximize_grad_norm({"maximize_grad_norm": 1e-6}) == 1e-6
    with pytest.raises(InvalidOptionError, match="maximize_grad_norm"):
        maximize_grad_norm({"maximize_grad_norm": -1})
    model = _model()
    rng = np.random.RandomState(0)
    inputs = {"data": rng.randn(2, 4, 3).astype("float32"), "classes": rng.randint(0, 4, (2, 4)).astype("int32")}
    lengths = {"data": np.array([4, 2], "int32"), "classes": np.array([4, 2], "int32")}
    variables = model.trainable_params
    plain = Trainer(model, tf.keras.optimizers.SGD(), None)
    factor = 0.5
    maximizing = Trainer(model, tf.keras.optimizers.SGD(), None, maximize_grad_norm=factor)

    def grad_norm():
        grads = plain._gradients(inputs, lengths, variables)[2]
        return float(np.sqrt(sum(np.sum(np.square(g.numpy()), dtype=np.float64) for g in grads)))

    base = [g.numpy() for g in plain._gradients(inputs, lengths, variables)[2]]
    got = [g.numpy() for g in maximizing._gradients(inputs, lengths, variables)[2]]
    eps = 1e-2
    for var, b, g in zip(variables, base, got):  # central differences of the grad norm, entry by entry
        numeric = np.zeros(var.shape, np.float64)
        for index in np.ndindex(*var.shape):
            delta = np.zeros(var.shape, np.float32)
            delta[index] = eps
            var.assign_add(delta)
            up = grad_norm()
            var.assign_sub(2 * delta)
            down = grad_norm()
            var.assign_add(delta)
            numeric[index] = (up - down) / (2 * eps)
        np.testing.assert_allclose(g - b, -factor * numeric, atol=2e-3, rtol=2e-2)
    assert any(np.abs(g - b).max() > 1e-2 for b, g in zip(base, got))


# --- rec: max_seq_len on a built-in unit ------------------------------------------------------------------------
def test_max_seq_len_on_a_builtin_unit_has_no_effect_with_a_notice():
    net = build_from_dict({"output": {"class": "rec", "unit": "lstm", "n_out": 2, "max_seq_len": 100}}, EXTERN)
    assert any("layer 'output': option 'max_seq_len' has no effect" in n for n in net.notices)
    net = build_from_dict({"output": {"class": "rec", "unit": "lstm", "n_out": 2}}, EXTERN)
    assert not any("max_seq_len" in n for n in net.notices)
    unit = {"output": {"class": "linear", "activation": "tanh", "n_out": 2, "from": ["data:source", "prev:output"]}}
    net = build_from_dict({"output": {"class": "rec", "unit": unit, "max_seq_len": 10}}, EXTERN)
    assert not any("option 'max_seq_len'" in n for n in net.notices)  # a loop body uses it


# --- n_out from the target without a loss ---------------------------------------------------------------------
def test_target_without_loss_gives_n_out_outside_and_inside_a_rec_unit():
    net = build_from_dict({"output": {"class": "softmax", "from": "data", "target": "classes"}}, EXTERN)
    assert net.layers["output"].output.dim == 4
    unit = {"prob": {"class": "softmax", "from": "data:source", "target": "classes"},
            "output": {"class": "copy", "from": "prob"}}
    net = build_from_dict({"output": {"class": "rec", "from": "data", "unit": unit}}, EXTERN)
    assert net.layers["output"].output.dim == 4
    net = build_from_dict({"output": {"class": "softmax", "from": "data", "target": "classes", "n_out": 7}}, EXTERN)
    assert net.layers["output"].output.dim == 7  # an explicit n_out wins
    with pytest.raises(MissingOptionError, match="n_out"):  # no target: still needs n_out
        build_from_dict({"output": {"class": "softmax", "from": "data"}}, EXTERN)
