"""The network of each epoch (`netcompiler/network_schedule.py`, `pretrain_construction.py`): pretraining's growing
networks against RETURNN's (fixture `tests/fixtures/returnn/pretrain.json`, made by
`tools/record_returnn_pretrain.py`), get_network, `#` entries, and the errors of bad settings."""

from __future__ import annotations

import json
import os

import pytest

from netcompiler.errors import ConfigError
from netcompiler.network_schedule import NetworkSchedule, schedule_is_set

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "returnn", "pretrain.json")


def _cases():
    with open(FIXTURE) as f:
        return json.load(f)["cases"]


def _from_json(value):
    """The fixture's repetitions dict has its step indices as strings (JSON keys): back to ints."""
    if isinstance(value, dict):
        return {int(k) if k.isdigit() else k: _from_json(v) for k, v in value.items()}
    return value


@pytest.mark.parametrize("case", _cases(), ids=lambda case: case["name"])
def test_pretrain_networks_are_returnns(case):
    schedule = NetworkSchedule.from_config({"network": case["network"], "pretrain": _from_json(case["pretrain"])})
    assert schedule.num_pretrain_epochs == case["num_pretrain_epochs"]
    for epoch, expected in enumerate(case["layers_per_epoch"], start=1):
        net = schedule.for_epoch(epoch).net_dict
        got = {name: list(layer.get("from", ["data"])) for name, layer in sorted(net.items())}
        assert got == expected, f"epoch {epoch}"


def _chain(n):
    net = {f"l{i}": {"class": "linear", "n_out": 3, "from": [f"l{i - 1}" if i > 1 else "data"]}
           for i in range(1, n + 1)}
    net["output"] = {"class": "softmax", "loss": "ce", "from": [f"l{n}"]}
    return net


def test_no_schedule_without_pretrain_or_get_network():
    for values in ({"network": _chain(2)}, {"network": _chain(2), "pretrain": None},
                   {"network": _chain(2), "pretrain": ""}, {"network": _chain(2), "pretrain": {}}):
        assert not schedule_is_set(values)
        assert NetworkSchedule.from_config(values) is None


def test_get_network_gives_each_epoch_after_pretraining():
    calls = []

    def get_network(epoch, **kwargs):
        calls.append((epoch, kwargs))
        return _chain(min(epoch, 3))

    schedule = NetworkSchedule.from_config({"network": _chain(3), "pretrain": {"repetitions": 2},
                                            "get_network": get_network})
    assert schedule.num_pretrain_epochs == 6  # 3 steps (l1; l1-l2; full) x 2
    assert sorted(schedule.for_epoch(6).net_dict) == ["l1", "l2", "l3", "output"]
    assert not calls  # pretraining epochs come from the construction
    assert sorted(schedule.for_epoch(7).net_dict) == ["l1", "l2", "l3", "output"]
    assert calls == [(7, {})]
    only = NetworkSchedule.from_config({"get_network": get_network})
    assert sorted(only.for_epoch(2).net_dict) == ["l1", "l2", "output"]
    assert not only.for_epoch(2).is_pretrain


def test_meta_entries_of_an_epoch():
    def get_network(epoch):
        net = _chain(2)
        net["#config"] = {"batch_size": 100 * epoch}
        if epoch == 2:
            net["#copy_param_mode"] = "subset"
        return net

    schedule = NetworkSchedule.from_config({"get_network": get_network})
    first, second = schedule.for_epoch(1), schedule.for_epoch(2)
    assert first.config_overrides == {"batch_size": 100} and first.copy_param_mode is None
    assert second.config_overrides == {"batch_size": 200} and second.copy_param_mode == "subset"
    assert not any(name.startswith("#") for name in second.net_dict)


def test_repetition_entry_and_custom_construction():
    def construct(idx, net_dict):
        if idx >= 2:
            return None
        keep = [f"l{i}" for i in range(1, idx + 2)]
        net = {name: net_dict[name] for name in keep}
        net["output"] = dict(net_dict["output"], **{"from": [keep[-1]]})
        net["#repetition"] = 3 if idx == 0 else 1
        return net

    schedule = NetworkSchedule.from_config({"network": _chain(3), "pretrain": {"construction_algo": construct}})
    sizes = [len(schedule.for_epoch(e).net_dict) for e in range(1, schedule.num_pretrain_epochs + 2)]
    assert sizes == [2, 2, 2, 3, 4, 4]  # step 0 three times (#repetition), step 1 once, the full network once


def test_copy_param_mode_and_output_layer_reset():
    values = {"network": _chain(3), "pretrain": {"copy_param_mode": "reset"}}
    epoch = NetworkSchedule.from_config(values).for_epoch(2)
    assert epoch.copy_param_mode == "reset" and epoch.reset_layers == ["output"] and epoch.is_pretrain
    values["pretrain"] = {"copy_output_layer": False}
    epoch = NetworkSchedule.from_config(values).for_epoch(2)
    assert epoch.copy_param_mode is None and epoch.reset_layers == ["output"]
    after = NetworkSchedule.from_config(values).for_epoch(4)
    assert not after.is_pretrain and after.reset_layers == []


@pytest.mark.parametrize("values, subject", [
    ({"network": _chain(2), "pretrain": {"construction_algo": "from_middle"}}, "option 'construction_algo'"),
    ({"network": _chain(2), "pretrain": {"repetitions": "two"}}, "option 'repetitions'"),
    ({"network": _chain(2), "pretrain": {"repetitions": [1, 1, 1, 1]}}, "option 'repetitions'"),
    ({"network": _chain(2), "pretrain": {"copy_param_mode": "all"}}, "option 'copy_param_mode'"),
    ({"network": _chain(2), "pretrain": {"repetitons": 2}}, "config key 'pretrain'"),
    ({"network": _chain(2), "pretrain": {"output_layers": ["out"]}}, "option 'output_layers'"),
    ({"network": _chain(2), "pretrain": "always"}, "config key 'pretrain'"),
    ({"pretrain": "default"}, "config key 'pretrain'"),
    ({"get_network": {"output": {}}}, "config key 'get_network'"),
])
def test_bad_settings_are_config_errors(values, subject):
    with pytest.raises(ConfigError) as info:
        NetworkSchedule.from_config(values)
    assert subject in str(info.value)


def test_get_network_returning_no_dict():
    schedule = NetworkSchedule.from_config({"get_network": lambda epoch: [("output", {})]})
    with pytest.raises(ConfigError, match=r"get_network\(epoch=3\) returned list, not a network dict"):
        schedule.for_epoch(3)
    with pytest.raises(ConfigError, match="epochs count from 1"):
        schedule.for_epoch(0)


def test_wrap_epoch_value_takes_each_pretraining_epochs_value():
    from netcompiler.network_schedule import WrapEpochValue

    net = _chain(2)
    net["l1"]["dropout"] = WrapEpochValue(lambda epoch: 0.1 * epoch)
    net["output"]["loss_opts"] = {"label_smoothing": [WrapEpochValue(lambda epoch: 0.5 if epoch < 3 else 0.0)]}
    schedule = NetworkSchedule.from_config({"network": net, "pretrain": {"repetitions": 2}})
    dropouts = [schedule.for_epoch(e).net_dict["l1"]["dropout"] for e in range(1, 7)]
    # pretraining epochs 1..4 (2 steps x 2); after them, the value of the last pretraining epoch (RETURNN)
    assert dropouts == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.4, 0.4])
    assert [schedule.for_epoch(e).net_dict["output"]["loss_opts"]["label_smoothing"] for e in (2, 3)] == [[0.5], [0.0]]
    assert isinstance(net["l1"]["dropout"], WrapEpochValue)  # the config's own dict is left as it is


def test_network_config_entry_applies_per_epoch_not_at_load():
    from netcompiler.config import Config

    net = dict(_chain(2), **{"#config": {"batch_size": 10}})
    config = Config({"network": net, "batch_size": 5, "pretrain": "default"})
    assert config.values["batch_size"] == 5  # not applied to every epoch when the network changes per epoch
    schedule = NetworkSchedule.from_config(config.values)
    assert [schedule.for_epoch(e).config_overrides for e in (1, 3)] == [{"batch_size": 10}] * 2
    assert Config({"network": net, "batch_size": 5}).values["batch_size"] == 10  # one network: at load, as before
