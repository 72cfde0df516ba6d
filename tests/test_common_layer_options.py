"""Common layer options with RETURNN's meaning: `reuse_params` (parameter sharing: the parameters exist once, a
training step moves the shared copy) and `dropout_axis` (the mask varies only along the named axes)."""

import numpy as np
import pytest

from layer_harness import random_batch
from netcompiler.dump import format_text, num_params
from netcompiler.emit.model import CompiledNetwork
from netcompiler.errors import InvalidOptionError
from netcompiler.network import build_from_dict

EXTERN = {"data": {"dim": 6}}
SHARED = {"a": {"class": "linear", "n_out": 6, "from": "data"},
          "b": {"class": "linear", "n_out": 6, "from": "a", "reuse_params": "a"},
          "output": {"class": "linear", "n_out": 6, "from": "b", "reuse_params": {"map": {"W": "a", "b": None}}}}


def test_shared_parameters_exist_once():
    network = build_from_dict(SHARED, EXTERN)
    names = sorted(name for name, _, _ in network.all_params())
    assert names == ["a/W", "a/b", "output/b"]  # b's W and b and output's W are a's
    assert num_params(network) == 36 + 6 + 6
    text = format_text(network)
    assert "param a/W [6, 6] (36 shared)" in text and "48 parameters" in text
    layers = {layer.name: layer for layer in network.all_layers()}
    assert layers["output"].param_full_name("W") == "a/W" and layers["output"].param_full_name("b") == "output/b"


def test_a_shared_parameter_is_not_passed_on():
    """RETURNN refuses to take a parameter from a layer that shares it itself (corpus reuse_params/chain)."""
    chain = {**SHARED, "output": {**SHARED["output"], "reuse_params": {"map": {"W": "b", "b": None}}}}
    with pytest.raises(InvalidOptionError, match="layer 'b' shares its parameter 'W' from layer 'a' itself.*"
                                                 "name 'a' instead of 'b'"):
        build_from_dict(chain, EXTERN)


@pytest.mark.parametrize("backend", ["tensorflow", "torch"])
def test_shared_parameter_is_one_variable(backend):
    network = build_from_dict(SHARED, EXTERN)
    model = CompiledNetwork(network, backend=backend)
    assert sorted(model.params) == ["a/W", "a/b", "output/b"]
    inputs, lengths = random_batch(network)
    ctx = model.forward(inputs, lengths, training=False)
    layers = {layer.name: layer for layer in network.all_layers()}
    to_np = model.backend.to_numpy
    w, b = to_np(model.params["a/W"]), to_np(model.params["a/b"])
    a = inputs["data"] @ w + b
    want = (a @ w + b) @ w + to_np(model.params["output/b"])
    got = to_np(ctx.value(layers["output"]).raw)
    for seq, n in enumerate(lengths["data"]):
        np.testing.assert_allclose(got[seq, :n], want[seq, :n], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("backend", ["tensorflow", "torch"])
@pytest.mark.parametrize("axis, varying", [("F", (2,)), ("T", (1,)), (["B", "T"], (0, 1))])
def test_dropout_axis_shares_the_mask_along_the_other_axes(backend, axis, varying):
    net = {"output": {"class": "copy", "dropout": 0.5, "dropout_axis": axis, "from": "data"}}
    network = build_from_dict(net, EXTERN)
    model = CompiledNetwork(network, backend=backend)
    inputs, lengths = random_batch(network)
    inputs["data"] = np.abs(inputs["data"]) + 1.0  # no zeros of its own
    shared = tuple(i for i in range(3) if i not in varying)
    mixed = False
    for _ in range(5):  # masks are random: over several passes, some must keep part of the values
        ctx = model.forward(inputs, lengths, training=True)
        out = model.backend.to_numpy(ctx.value(network.layers["output"]).raw)
        kept = out != 0
        np.testing.assert_allclose(out[kept], 2.0 * inputs["data"][kept], rtol=1e-5)
        for i in shared:  # the mask is the same all along every axis not named
            assert (kept == np.take(kept, [0], axis=i)).all(), f"mask varies along axis {i}"
        mixed |= bool(kept.any() and not kept.all())
    assert mixed


def test_dot_debug_is_accepted_with_a_notice():
    """RETURNN's dot `debug` only prints shapes while running: accepted, and the build says it has no effect."""
    net = {"q": {"class": "linear", "n_out": 4, "from": "data"}, "k": {"class": "linear", "n_out": 4, "from": "data"},
           "output": {"class": "dot", "from": ["q", "k"], "red1": "F", "red2": "F", "var1": "T", "var2": "T",
                      "debug": True}}
    network = build_from_dict(net, EXTERN)
    assert [n for n in network.notices if "'debug'" in n] == [
        "layer 'output': option 'debug' (RETURNN prints the inputs' shapes at each run) has no effect in netcompiler; "
        "the shapes are the templates 'dump-net' shows"]
    plain = build_from_dict({**net, "output": {**net["output"], "debug": False}}, EXTERN)
    assert network.layers["output"].output.describe() == plain.layers["output"].output.describe()


@pytest.mark.parametrize("layer, option", [
    ({"class": "linear", "n_out": 6, "dropout": 1.5}, "dropout"),
    ({"class": "linear", "n_out": 6, "dropout": -0.1}, "dropout"),
    ({"class": "self_attention", "num_heads": 2, "total_key_dim": 4, "n_out": 6, "attention_dropout": 1},
     "attention_dropout"),
    ({"class": "resize", "factor": 2, "axis": "T", "kind": "fill", "fill_value": 0.0, "fill_dropout": 2.0},
     "fill_dropout"),
])
def test_a_rate_out_of_range_names_the_option_and_what_a_rate_is(layer, option):
    with pytest.raises(InvalidOptionError) as error:
        build_from_dict({"output": {**layer, "from": "data"}}, EXTERN)
    assert str(error.value) == (f"layer 'output': option '{option}' must be a rate in [0, 1), not {layer[option]!r} "
                                f"-- a rate is the fraction dropped: e.g. '{option}': 0.1 drops 10%; 0 (the "
                                f"default) none")


def test_a_rate_in_range_builds():
    network = build_from_dict({"output": {"class": "linear", "n_out": 6, "dropout": 0.0, "from": "data"}}, EXTERN)
    assert network.layers["output"].opts["dropout"] == 0.0
