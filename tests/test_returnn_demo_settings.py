"""What RETURNN's loop demos (demo-tf-att-copy, demo-tf-enc-dec) need besides layers: the `config` object in the
config file's namespace, `gradient_noise`, `use_last_best_model`, and the gradient filter of `grad_filter`
(TensorFlow and PyTorch)."""

import numpy as np
import pytest
import tensorflow as tf

from netcompiler.backends.tensorflow.backend import TensorFlowBackend
from netcompiler.config import load_config
from netcompiler.engine.optimizers import add_gradient_noise, clip_gradients_fn, gradient_noise
from netcompiler.errors import ConfigError, InvalidOptionError

CONFIG = '''\
import os
demo_name, _ = os.path.splitext(__file__)
layer_dim = config.int("layer_dim", 500)
early = 3
from_file = config.int("early", 7)
rate_v = config.float("rate", 0.5)
flag_v = config.bool("flag", False)
name_v = config.value("name", "none")
items = config.typed_value("items", [1, 2])
has_early, has_missing = config.has("early"), config.has("missing")
listed_v = config.list("listed")
extern_data = {"data": {"dim": 3}}
network = {"output": {"class": "copy", "is_output_layer": True}}
gradient_noise = 0.3
use_last_best_model = {"modulo": 5}
'''


@pytest.fixture
def config_path(tmp_path):
    (tmp_path / "c.py").write_text(CONFIG)
    return str(tmp_path / "c.py")


def test_config_object_reads_the_file_so_far_then_defaults(config_path):
    values = load_config(config_path).values
    assert values["demo_name"].endswith("/c")
    assert (values["layer_dim"], values["from_file"], values["rate_v"], values["flag_v"]) == (500, 3, 0.5, False)
    assert (values["name_v"], values["items"], values["has_early"], values["has_missing"]) == ("none", [1, 2], True,
                                                                                              False)
    assert values["listed_v"] == []
    assert "config" not in values


def test_config_object_reads_the_command_line_as_returnn_does(config_path):
    config = load_config(config_path, ["++layer_dim", "20", "++early", "9", "++flag", "true", "++rate", "2",
                                       "++name", "x", "++listed", "a,b", "++missing", "1"])
    v = config.values
    assert (v["layer_dim"], v["from_file"], v["flag_v"], v["rate_v"], v["name_v"], v["listed_v"], v["has_missing"]) == \
        (20, 3, True, 2.0, "x", ["a", "b"], True)  # 'early' was assigned before it was read: RETURNN gives 3 too
    assert v["early"] == 9  # the command line wins once the file has run


def test_config_object_bad_value_is_a_config_error(config_path):
    with pytest.raises(ConfigError, match=r"config.int\('layer_dim'\): \+\+layer_dim on the command line is 'many'"):
        load_config(config_path, ["++layer_dim", "many"])


def test_use_last_best_model_and_gradient_noise_are_known(config_path):
    notices = load_config(config_path).notices
    # use_last_best_model is implemented (engine/last_best_model.py, tested in test_last_best_model.py)
    assert not any("use_last_best_model" in n for n in notices)
    assert not any("gradient_noise" in n for n in notices)


def test_gradient_noise_is_truncated_normal_before_clipping():
    assert gradient_noise({}) == 0.0 and clip_gradients_fn({}) is None
    with pytest.raises(InvalidOptionError, match="gradient_noise"):
        gradient_noise({"gradient_noise": -1})
    tf.random.set_seed(3)
    grads = [tf.zeros([20000]), None, tf.IndexedSlices(tf.ones([1, 2]), tf.constant([1]), tf.constant([3, 2]))]
    noisy = add_gradient_noise(grads, 0.3)
    assert noisy[1] is None and noisy[2].shape == (3, 2)
    values = noisy[0].numpy()
    assert abs(values.std() - 0.3 * 0.88) < 0.01  # a normal truncated at 2 stddev has 0.88 of its stddev
    assert np.abs(values).max() <= 0.6 + 1e-6
    clipped = clip_gradients_fn({"gradient_noise": 5.0, "gradient_clip": 0.1})(grads)  # noise first, then clip
    assert np.abs(clipped[0].numpy()).max() <= 0.1 + 1e-6 and clipped[0].numpy().std() > 0.05


def _filter_reference(dy, threshold):
    """RETURNN's filter_grad on [B, ...]: a sequence's gradient is dropped where its max(grad**2) >= threshold."""
    keep = (dy.reshape(len(dy), -1) ** 2).max(1) < threshold
    return dy * keep.reshape((-1,) + (1,) * (dy.ndim - 1))


def _upstream():
    dy = np.random.RandomState(0).uniform(-1, 1, (4, 3, 2)).astype(np.float32)
    dy[1, 2, 0], dy[3, 0, 1] = 1.5, -2.0  # sequences 1 and 3 exceed the threshold 1.0 (squared)
    return dy


def test_filtered_gradient_tensorflow():
    x, dy = tf.Variable(np.ones((4, 3, 2), np.float32)), _upstream()
    with tf.GradientTape() as tape:
        y = TensorFlowBackend.filtered_gradient_raw(x, 1.0, [1, 2])
        loss = tf.reduce_sum(y * dy)
    np.testing.assert_array_equal(y.numpy(), x.numpy())
    np.testing.assert_allclose(tape.gradient(loss, x).numpy(), _filter_reference(dy, 1.0))


def test_filtered_gradient_torch():
    torch = pytest.importorskip("torch")
    from netcompiler.backends.torch.backend import TorchBackend

    x, dy = torch.ones((4, 3, 2), requires_grad=True), _upstream()
    y = TorchBackend.filtered_gradient_raw(x, 1.0, [1, 2])
    (y * torch.from_numpy(dy)).sum().backward()
    np.testing.assert_array_equal(y.detach().numpy(), np.ones((4, 3, 2)))
    np.testing.assert_allclose(x.grad.numpy(), _filter_reference(dy, 1.0))


def test_grad_filter_on_a_linear_layer_drops_a_sequence_gradient():
    from netcompiler import frontend as rf
    from netcompiler.emit.model import CompiledNetwork
    from netcompiler.network import build_from_dict
    from layer_harness import random_batch

    net = build_from_dict({"output": {"class": "linear", "n_out": 2, "from": "data", "grad_filter": 1e-6}},
                          {"data": {"dim": 3}})
    model = CompiledNetwork(net)
    inputs, lengths = random_batch(net)
    with tf.GradientTape() as tape:
        ctx = model.forward(inputs, lengths, training=True)
        with ctx.run:
            y = rf.masked(ctx.value(net.layers["output"]), net.layers["output"].output.dynamic_dims, 0.0).raw
        loss = tf.reduce_sum(y)
    grads = tape.gradient(loss, [v for v in model.params.values()])
    assert all(g is None or not np.any(tf.convert_to_tensor(g).numpy()) for g in grads)  # every sequence dropped
