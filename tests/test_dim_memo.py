"""A network remembers the Dims its layers create: inferring a layer again yields the very same Dim objects."""

import pytest

from netcompiler.network import build_from_dict

EXTERN = {"data": {"dim": 6}, "classes": {"dim": 3, "sparse": True}}

NETWORKS = {
    "linear": {"output": {"class": "linear", "n_out": 4, "from": "data"}},
    "split_dims": {"output": {"class": "split_dims", "axis": "F", "dims": [2, 3], "from": "data"}},
    "stack": {"lin": {"class": "linear", "n_out": 6, "from": "data"},
              "output": {"class": "stack", "from": ["data", "lin"]}},
    "conv": {"output": {"class": "conv", "filter_size": [3, 2], "n_out": 5, "padding": "valid", "from": "data",
                        "input_add_feature_dim": True}},
    "subnetwork": {"output": {"class": "subnetwork", "from": "data", "subnetwork": {
        "output": {"class": "linear", "n_out": 2, "from": "data"}}}},
}


def _dims_of(network):
    """Every Dim of every built layer's output and parameters, by (layer, where)."""
    found = {}
    for layer in network.all_layers():
        found[(layer.name, "output")] = layer.output.dims + (layer.output.sparse_dim,)
        for param, spec in layer.params.items():
            found[(layer.name, param)] = spec.shape
    return found


@pytest.mark.parametrize("family", sorted(NETWORKS))
def test_rebuilding_returns_the_same_dims(family):
    net = build_from_dict(NETWORKS[family], EXTERN)
    before = _dims_of(net)
    old_layers = dict(net.layers)
    net.rebuild()
    after = _dims_of(net)
    assert set(after) == set(before)
    for key, dims in before.items():
        assert len(after[key]) == len(dims)
        for old, new in zip(dims, after[key]):
            assert new is old, f"{key}: {new!r} is a new object, not {old!r}"
    assert all(net.layers[name] is not layer for name, layer in old_layers.items() if name != "data")


def test_new_dims_in_a_fresh_network_are_new_objects():
    first = build_from_dict(NETWORKS["linear"], EXTERN).layers["output"].output.feature_dim
    second = build_from_dict(NETWORKS["linear"], EXTERN).layers["output"].output.feature_dim
    assert first is not second and first != second


def test_a_changed_size_replaces_the_remembered_dim():
    net = build_from_dict(NETWORKS["linear"], EXTERN)
    layer = net.layers["output"]
    old = layer.output.feature_dim
    assert layer.new_dim(4, old.kind, old.description) is old
    new = layer.new_dim(7, old.kind, old.description)
    assert new is not old and new.size == 7
    assert layer.new_dim(7, old.kind, old.description) is new
