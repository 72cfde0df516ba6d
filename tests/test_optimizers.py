"""Optimizer selection from RETURNN's config forms, learning-rate changes, gradient clipping."""

import numpy as np
import pytest
import tensorflow as tf

from netcompiler.engine.optimizers import (clip_gradients, gradient_clipping, gradient_noise, make_optimizer,
                                           maximize_grad_norm, nan_inf_filter, optimizer_settings, set_learning_rate)
from netcompiler.errors import InvalidOptionError, MissingOptionError, UnknownOptionError


@pytest.mark.parametrize("config, cls, attrs", [
    ({"optimizer": {"class": "adam"}}, "Adam", {"epsilon": 1e-16, "beta_1": 0.9}),
    ({"optimizer": {"class": "Adam", "beta1": 0.5, "epsilon": 1e-8}}, "Adam", {"beta_1": 0.5, "epsilon": 1e-8}),
    ({"optimizer": {"class": "AdamOptimizer", "beta_2": 0.98}}, "Adam", {"beta_2": 0.98}),
    ({"optimizer": {"class": "nadam"}}, "Nadam", {"epsilon": 1e-16}),
    ({"optimizer": {"class": "adamw", "weight_decay": 0.01}}, "AdamW", {"weight_decay": 0.01}),
    ({"optimizer": {"class": "sgd"}}, "SGD", {"momentum": 0.0}),
    ({"optimizer": {"class": "GradientDescent"}}, "SGD", {"momentum": 0.0}),
    ({"optimizer": {"class": "momentum", "momentum": 0.9, "use_nesterov": True}}, "SGD",
     {"momentum": 0.9, "nesterov": True}),
    ({"optimizer": {"class": "rmsprop", "decay": 0.95}}, "RMSprop", {"rho": 0.95, "epsilon": 1e-16}),
    ({"optimizer": "adam", "optimizer_epsilon": 1e-8}, "Adam", {"epsilon": 1e-8}),
    ({"adam": True}, "Adam", {"epsilon": 1e-16}),
    ({"nadam": True}, "Nadam", {}),
    ({"rmsprop": 0.8, "momentum": 0.5}, "RMSprop", {"rho": 0.8, "momentum": 0.5}),
    ({"momentum": 0.9}, "SGD", {"momentum": 0.9}),
    ({}, "SGD", {"momentum": 0.0}),
])
def test_optimizer_selection(config, cls, attrs):
    optimizer = make_optimizer(dict(config, learning_rate=0.125))
    assert type(optimizer).__name__ == cls
    for name, value in attrs.items():
        assert getattr(optimizer, name) == pytest.approx(value, rel=1e-6)
    assert float(optimizer.learning_rate.numpy()) == 0.125


def test_unknown_optimizer_class_suggests():
    with pytest.raises(InvalidOptionError) as info:
        make_optimizer({"optimizer": {"class": "adma"}})
    message = str(info.value)
    assert message.startswith("config key 'optimizer': option 'class': unknown optimizer class 'adma'")
    assert "did you mean 'adam'?" in message


def test_bad_optimizer_options():
    with pytest.raises(UnknownOptionError, match="did you mean 'epsilon'"):
        make_optimizer({"optimizer": {"class": "adam", "epsilom": 0.1}})
    with pytest.raises(InvalidOptionError, match="learning_rate"):
        make_optimizer({"optimizer": {"class": "adam", "learning_rate": 0.1}})
    with pytest.raises(MissingOptionError, match="'momentum'"):
        make_optimizer({"optimizer": {"class": "momentum"}})
    with pytest.raises(MissingOptionError, match="'class'"):
        make_optimizer({"optimizer": {"epsilon": 0.1}})
    with pytest.raises(InvalidOptionError, match="given twice"):
        make_optimizer({"optimizer": {"class": "adam", "beta1": 0.9, "beta_1": 0.8}})


@pytest.mark.parametrize("config, check, suggestion", [
    ({"optimizer": 3}, optimizer_settings, "write optimizer = {'class': 'adam'}"),
    ({"optimizer": {"class": 3}}, optimizer_settings, "write optimizer = {'class': 'adam'}"),
    ({"optimizer": {"class": "adam", "beta1": -0.9}}, optimizer_settings, "leave 'beta1' out for its default"),
    ({"optimizer": {"class": "adam", "amsgrad": 1}}, optimizer_settings, "'amsgrad': True or 'amsgrad': False"),
    ({"optimizer": {"class": "adam", "beta1": 0.9, "beta_1": 0.8}}, optimizer_settings, "keep only one"),
    ({"optimizer": {"class": "sgd", "learning_rate_multiplier": 0}}, optimizer_settings,
     "'learning_rate_multiplier': 0.5"),
    ({"optimizer": {"class": "momentum"}, "momentum": -1}, optimizer_settings, "'momentum': 0.9"),
    ({"optimizer": {"class": "adam"}, "optimizer_epsilon": "small"}, optimizer_settings, "optimizer_epsilon = 1e-16"),
    ({"learning_rate": -0.1}, optimizer_settings, "learning_rate = 0.001"),
    ({"gradient_clip": -1}, gradient_clipping, "gradient_clip = 0 (off)"),
    ({"gradient_noise": "x"}, gradient_noise, "gradient_noise = 0 (off)"),
    ({"maximize_grad_norm": -2}, maximize_grad_norm, "maximize_grad_norm = 0 (off)"),
    ({"gradient_nan_inf_filter": 2}, nan_inf_filter, "gradient_nan_inf_filter = True"),
])
def test_bad_optimizer_settings_suggest_a_value(config, check, suggestion):
    with pytest.raises(InvalidOptionError) as info:
        check(config)
    assert info.value.suggestion and suggestion in info.value.suggestion, str(info.value)
    assert f" -- {info.value.suggestion}" in str(info.value)


def test_learning_rate_change_takes_effect_without_retracing():
    var = tf.Variable([1.0, 1.0])
    optimizer = make_optimizer({"optimizer": {"class": "sgd", "learning_rate_multiplier": 2.0}},
                               learning_rate=0.1)

    @tf.function
    def step():
        optimizer.apply_gradients([(tf.constant([1.0, -1.0]), var)])

    step()
    np.testing.assert_allclose(var.numpy(), [0.8, 1.2], rtol=1e-6)  # lr 0.1 * multiplier 2
    set_learning_rate(optimizer, 0.25)
    step()
    np.testing.assert_allclose(var.numpy(), [0.3, 1.7], rtol=1e-6)
    assert step.experimental_get_tracing_count() == 1


def test_clip_by_value_then_global_norm_of_the_original_gradients():
    grads = [tf.constant([3.0, -4.0]), None, tf.constant([0.5])]
    by_value = clip_gradients(grads, {"gradient_clip": 1.0})
    np.testing.assert_allclose(by_value[0].numpy(), [1.0, -1.0])
    assert by_value[1] is None
    np.testing.assert_allclose(by_value[2].numpy(), [0.5])

    # global norm of the original gradients: sqrt(9 + 16 + 0.25) = 5.025
    g = np.sqrt(25.25)
    global_only = clip_gradients(grads, {"gradient_clip_global_norm": 1.0})
    np.testing.assert_allclose(global_only[0].numpy(), [3.0 / g, -4.0 / g], rtol=1e-6)
    np.testing.assert_allclose(global_only[2].numpy(), [0.5 / g], rtol=1e-6)

    both = clip_gradients(grads, {"gradient_clip": 1.0, "gradient_clip_global_norm": 1.0})
    np.testing.assert_allclose(both[0].numpy(), [1.0 / g, -1.0 / g], rtol=1e-6)

    unchanged = clip_gradients(grads, {"gradient_clip_global_norm": 10.0})
    np.testing.assert_allclose(unchanged[0].numpy(), [3.0, -4.0])
    assert clip_gradients(grads, {}) == grads


def test_clip_per_tensor_norm_and_indexed_slices():
    grads = [tf.constant([3.0, 4.0]), tf.IndexedSlices(tf.constant([[2.0, -3.0]]), tf.constant([1]),
                                                       tf.constant([4, 2]))]
    clipped = clip_gradients(grads, {"gradient_clip_norm": 1.0, "gradient_clip": 2.5})
    np.testing.assert_allclose(clipped[0].numpy(), [2.5 / np.hypot(2.5, 2.5), 2.5 / np.hypot(2.5, 2.5)],
                               rtol=1e-6)
    assert isinstance(clipped[1], tf.IndexedSlices)
    np.testing.assert_allclose(clipped[1].values.numpy(), [[2.0 / np.hypot(2.0, 2.5), -2.5 / np.hypot(2.0, 2.5)]],
                               rtol=1e-6)


def test_bad_clip_value_is_a_config_error():
    with pytest.raises(InvalidOptionError, match="config key 'gradient_clip_global_norm'"):
        clip_gradients([tf.constant(1.0)], {"gradient_clip_global_norm": -1})


def test_clip_gradients_fn_for_the_trainer():
    from netcompiler.engine.optimizers import clip_gradients_fn

    assert clip_gradients_fn({"learning_rate": 0.1}) is None
    clip = clip_gradients_fn({"gradient_clip": 0.5})
    np.testing.assert_allclose(clip([tf.constant([2.0, -0.25])])[0].numpy(), [0.5, -0.25])
