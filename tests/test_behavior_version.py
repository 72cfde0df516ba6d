"""`behavior_version`: the layer defaults that depend on it, as in RETURNN, and its parameter names."""

import numpy as np
import pytest

import netcompiler
from netcompiler.errors import ConfigError

EXTERN = {"data": {"dim": 3}}
CONV = {"output": {"class": "conv", "filter_size": (2,), "padding": "same", "n_out": 2, "from": "data"}}


def _params(network, **config):
    return {name: tuple(value.shape) for name, value in
            netcompiler.load_network({"network": network, "extern_data": EXTERN, **config}).params.items()}


@pytest.mark.parametrize("version, bias", [(None, False), (9, False), (10, True), (12, True)])
def test_conv_has_a_bias_from_version_10_on(version, bias):
    config = {} if version is None else {"behavior_version": version}
    expected = {"output/W": (2, 3, 2), **({"output/bias": (2,)} if bias else {})}
    assert _params(CONV, **config) == expected


@pytest.mark.parametrize("version", [None, 12])
def test_with_bias_overrides_the_version_default(version):
    config = {} if version is None else {"behavior_version": version}
    with_bias = not (version or 0) >= 10
    net = {"output": dict(CONV["output"], with_bias=with_bias)}
    assert ("output/bias" in _params(net, **config)) == with_bias


def test_the_conv_bias_is_added():
    net = netcompiler.load_network({"network": CONV, "extern_data": EXTERN, "behavior_version": 12})
    x = np.random.RandomState(0).randn(2, 4, 3).astype("float32")
    lengths = np.array([4, 3], "int32")
    without = net.forward({"data": x}, {"data": lengths})["output"].value
    net.params["output/bias"] = [1.0, -2.0]
    with_bias = net.forward({"data": x}, {"data": lengths})["output"].value
    np.testing.assert_allclose(with_bias[0] - without[0], np.tile([1.0, -2.0], (4, 1)), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(with_bias[1, :3] - without[1, :3], np.tile([1.0, -2.0], (3, 1)), rtol=1e-5,
                               atol=1e-5)


@pytest.mark.parametrize("bad", ["12", -1, 1.5, True])
def test_a_bad_version_is_refused_clearly(bad):
    with pytest.raises(ConfigError, match="behavior_version"):
        _params(CONV, behavior_version=bad)


@pytest.mark.parametrize("version, names", [
    (None, {"output/batch_norm/output_output_output_" + k: (1, 1, 3) for k in ("mean", "variance", "gamma", "beta")}),
    (12, {"output/batch_norm/v2_" + k: (3,) for k in ("mean", "variance", "gamma", "beta")})])
def test_batch_norm_parameters_by_version(version, names):
    config = {} if version is None else {"behavior_version": version}
    assert _params({"output": {"class": "batch_norm", "from": "data"}}, **config) == names


def test_batch_norm_param_version_1_has_no_prefix():
    net = {"output": {"class": "batch_norm", "from": "data", "param_version": 1, "use_shift": False}}
    assert _params(net) == {f"output/batch_norm/{k}": (1, 1, 3) for k in ("mean", "variance", "gamma")}
