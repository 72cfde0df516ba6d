"""Checkpoint names of parameters as RETURNN gives them: rec units under 'rec/', `name_scope`."""

import pytest

import netcompiler
from netcompiler.errors import ConfigError

EXTERN = {"data": {"dim": 3}}


def _names(network):
    return sorted(netcompiler.load_network({"network": network, "extern_data": EXTERN}).params)


def test_rec_unit_params_are_under_rec():
    assert _names({"output": {"class": "rec", "unit": "nativelstm2", "n_out": 2, "from": "data"}}) == \
        ["output/rec/W", "output/rec/W_re", "output/rec/b"]


def test_name_scope_replaces_the_layer_name_relative_and_absolute():
    net = {"a": {"class": "linear", "n_out": 2, "from": "data", "name_scope": "shared"},
           "sub": {"class": "subnetwork", "from": "a", "subnetwork": {
               "output": {"class": "linear", "n_out": 2, "from": "data", "name_scope": "inner"},
               "other": {"class": "linear", "n_out": 2, "from": "data", "name_scope": "/top", "is_output_layer": True}}},
           "output": {"class": "copy", "from": "sub"}}
    assert _names(net) == ["shared/W", "shared/b", "sub/inner/W", "sub/inner/b", "top/W", "top/b"]


def test_two_layers_with_one_name_scope_are_refused():
    net = {"a": {"class": "linear", "n_out": 2, "from": "data", "name_scope": "x"},
           "output": {"class": "linear", "n_out": 2, "from": "a", "name_scope": "x"}}
    with pytest.raises(ConfigError, match="parameter name 'x/W' is also one of layer 'a'"):
        _names(net)


def test_an_empty_name_scope_is_refused_clearly():
    with pytest.raises(ConfigError, match="name_scope"):
        _names({"output": {"class": "linear", "n_out": 2, "from": "data", "name_scope": ""}})
