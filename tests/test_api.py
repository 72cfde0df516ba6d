"""The Python API: netcompiler.load_network, its templates, parameters and forward pass."""

import numpy as np
import pytest

import netcompiler
from netcompiler.errors import ConfigError, UnknownOptionError

NET = {"hidden": {"class": "linear", "n_out": 3, "activation": "tanh", "from": "data"},
       "output": {"class": "softmax", "n_out": 2, "from": "hidden"}}


def test_load_network_from_a_shipped_config_file():
    net = netcompiler.load_network("configs/demo-12ax-lstm.py")
    assert net.layers["lstm"].describe() == "[T|'time:data', B, F|'lstm:feature'(10)]"  # time-major, as RETURNN
    assert sorted(net.params) == ["lstm/rec/W", "lstm/rec/W_re", "lstm/rec/b", "output/W", "output/b"]
    assert net.params["lstm/rec/W"].shape == (9, 40)


def test_forward_without_the_loss_target_gives_what_the_inputs_allow():
    net = netcompiler.load_network("configs/demo-12ax-lstm.py")
    x = np.random.RandomState(0).randn(2, 5, 9).astype("float32")
    out = net.forward({"data": x}, {"data": [5, 3]})
    assert sorted(out) == ["data", "lstm", "output"]  # not the target data:classes
    assert out["output"].value.shape == (5, 2, 2)  # [T, B, F]: the softmax keeps the rec layer's order


def test_forward_on_the_torch_backend_gives_the_same_values():
    pytest.importorskip("torch", reason="the PyTorch backend is an optional extra: pip install -e '.[torch]'")
    net = netcompiler.load_network("configs/demo-12ax-lstm.py")
    x = np.random.RandomState(1).randn(2, 5, 9).astype("float32")
    tf_out = net.forward({"data": x}, {"data": [5, 3]})["output"].value
    torch_out = net.forward({"data": x}, {"data": [5, 3]}, backend="torch")["output"].value
    np.testing.assert_allclose(torch_out[0], tf_out[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(torch_out[1, :3], tf_out[1, :3], rtol=1e-5, atol=1e-6)


def test_forward_gives_every_layer_as_numpy_with_its_template():
    net = netcompiler.load_network(NET, extern_data={"data": {"dim": 4}})
    rng = np.random.RandomState(0)
    weights = {name: rng.randn(*net.params[name].shape).astype("float32") for name in net.params}
    for name, value in weights.items():
        net.params[name] = value
    np.testing.assert_array_equal(net.params["hidden/W"], weights["hidden/W"])
    x = rng.randn(2, 5, 4).astype("float32")
    out = net.forward({"data": x}, {"data": [5, 3]})
    assert set(out) == {"data", "hidden", "output"}
    hidden = np.tanh(x @ weights["hidden/W"] + weights["hidden/b"])
    logits = hidden @ weights["output/W"] + weights["output/b"]
    probs = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    np.testing.assert_allclose(out["output"].value, probs, rtol=1e-5, atol=1e-6)
    assert out["output"].template is net.layers["output"]
    (sizes,) = out["output"].sizes.values()
    np.testing.assert_array_equal(sizes, [5, 3])
    # lengths default to the full padded length
    (full,) = net.forward({"data": x})["hidden"].sizes.values()
    np.testing.assert_array_equal(full, [5, 5])


def test_parameters_set_before_the_first_forward_are_used():
    net = netcompiler.load_network({"network": {"output": {"class": "linear", "n_out": 1, "with_bias": False}},
                                    "extern_data": {"data": {"dim": 2}}})
    net.params["output/W"] = [[2.0], [3.0]]
    out = net.forward({"data": np.ones((1, 1, 2), "float32")})
    np.testing.assert_allclose(out["output"].value, [[[5.0]]])


def test_mistakes_get_clear_errors():
    net = netcompiler.load_network(NET, extern_data={"data": {"dim": 4}})
    with pytest.raises(ConfigError, match=r"shape \(4, 3\), not \(3, 4\) -- give an array of shape \(4, 3\)"):
        net.params["hidden/W"] = np.zeros((3, 4))
    with pytest.raises(KeyError, match="did you mean 'hidden/W'"):
        net.params["hiden/W"]
    with pytest.raises(ConfigError, match="did you mean 'data'"):
        net.forward({"dta": np.zeros((1, 1, 4), "float32")})
    with pytest.raises(UnknownOptionError, match="did you mean 'n_out'"):
        netcompiler.load_network({"output": {"class": "linear", "n_ot": 2}}, extern_data={"data": {"dim": 4}})
