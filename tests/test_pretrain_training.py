"""Training a network that changes per epoch (pretrain, get_network; `engine/epoch_networks.py`), on TensorFlow and
PyTorch: the network grows, parameters of layers present before are carried over (compared across the epoch
boundary: an epoch trained with learning rate 0 must end with exactly the previous epoch's values for the old
layers and the initial values for the new ones), resuming in the middle of pretraining, `#config` and
`#copy_param_mode` of get_network epochs, `dump-net --epoch`, and the errors of bad settings."""

from __future__ import annotations

import json

import numpy as np
import pytest

import netcompiler
from netcompiler.cli import compile_net_main, dump_net_main
from netcompiler.errors import ConfigError
from tests.run_helpers import run, task_12ax_config

HEADER = """
task = "train"
""" + task_12ax_config(20, 5, batch_size=2000) + """
optimizer = {"class": "adam"}
learning_rate = 0.05
torch_num_threads = 1
"""

NETWORK = """
network = {
    "l1": {"class": "linear", "activation": "tanh", "n_out": 6, "from": ["data"]},
    "l2": {"class": "linear", "activation": "tanh", "n_out": 6, "from": ["l1"]},
    "l3": {"class": "linear", "activation": "tanh", "n_out": 6, "from": ["l2"]},
    "output": {"class": "softmax", "loss": "ce", "from": ["l3"], "target": "classes"},
}
"""


def write(tmp_path, text, backend="tensorflow"):
    path = tmp_path / "config.py"
    path.write_text(HEADER + f"backend = {backend!r}\nmodel = {str(tmp_path / 'model')!r}\n" + text)
    return str(path)


def params_of(path):
    from netcompiler.engine.checkpoint_interchange import read_params

    return {name: np.asarray(value) for name, value in read_params(path).items()}


def checkpoint(tmp_path, epoch, backend):
    return str(tmp_path / f"model.{epoch:03d}") + (".pt" if backend == "torch" else "")


def initial_params(config_path, layers):
    """The initial values of a network with these layers (seeded by name, alike on both backends)."""
    net = netcompiler.load_network(config_path, overrides=["++pretrain", "None"])
    return {name: np.asarray(net.params[name]) for name in net.params if name.split("/")[0] in layers}


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["tensorflow", "torch"])
def test_pretrain_grows_carries_parameters_and_resumes(tmp_path, backend):
    # epochs: 1 = l1 -> output; 2 = l1, l2 -> output; 3 = the full network (pretraining); 4 the full network
    path = write(tmp_path, NETWORK + "pretrain = 'default'\n", backend)
    log = run(path, "++num_epochs", "1")
    assert "pretraining: 3 epochs" in log and "epoch 1 " in log
    first = params_of(checkpoint(tmp_path, 1, backend))
    assert sorted(first) == ["l1/W", "l1/b", "output/W", "output/b"]
    initial = initial_params(path, ("l1", "l2"))
    assert not np.allclose(first["l1/W"], initial["l1/W"])  # epoch 1 trained l1
    # resume in the middle of pretraining: epoch 2 adds l2; trained with rate 0, nothing moves
    log = run(path, "++num_epochs", "2", "++learning_rate", "0.0")
    assert "resuming after epoch 1" in log and "epoch 2: new pretraining network" in log
    second = params_of(checkpoint(tmp_path, 2, backend))
    assert sorted(second) == ["l1/W", "l1/b", "l2/W", "l2/b", "output/W", "output/b"]
    for name in ("l1/W", "l1/b", "output/W", "output/b"):
        np.testing.assert_array_equal(second[name], first[name], err_msg=name)  # carried over by name
    for name in ("l2/W", "l2/b"):
        np.testing.assert_allclose(second[name], initial[name], rtol=1e-6, err_msg=name)  # new: initial values
    # on to the end of pretraining and one epoch after it, with learning
    log = run(path, "++num_epochs", "4")
    assert "epoch 3: new pretraining network" in log and "epoch 4 " in log
    assert sorted(params_of(checkpoint(tmp_path, 4, backend))) == [
        "l1/W", "l1/b", "l2/W", "l2/b", "l3/W", "l3/b", "output/W", "output/b"]


GET_NETWORK = """
def get_network(epoch, **kwargs):
    net = {
        "l1": {"class": "linear", "activation": "tanh", "n_out": 4 if epoch == 1 else 6, "from": ["data"]},
        "output": {"class": "softmax", "loss": "ce", "from": ["l1"], "target": "classes"},
    }
    if epoch == 2:  # l1 grows: its old values fill the leading part; this epoch trains with rate 0
        net["#copy_param_mode"] = "subset"
        net["#config"] = {"learning_rate": 0.0, "batch_size": 500}
    return net
"""


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["tensorflow", "torch"])
def test_get_network_with_subset_copy_and_epoch_config(tmp_path, backend):
    path = write(tmp_path, GET_NETWORK, backend)
    log = run(path, "++num_epochs", "2")
    # l1/W, l1/b and output/W grew (partly carried over), output/b kept its shape
    assert "epoch 2: new network" in log and "1 carried over, 3 partly, 0 initial" in log
    first, second = (params_of(checkpoint(tmp_path, e, backend)) for e in (1, 2))
    assert first["l1/W"].shape == (9, 4) and second["l1/W"].shape == (9, 6)
    np.testing.assert_array_equal(second["l1/W"][:, :4], first["l1/W"])
    np.testing.assert_array_equal(second["l1/b"][:4], first["l1/b"])
    # output/W changed its shape [4, 2] -> [6, 2]: 'subset' keeps its old rows too
    np.testing.assert_array_equal(second["output/W"][:4], first["output/W"])
    rates = json.loads((tmp_path / "model.learning_rates.json").read_text())["epochs"]
    assert [rates[e]["learning_rate"] for e in ("1", "2")] == [0.05, 0.0]  # epoch 2's '#config'
    # epoch 2's batch_size 500 (instead of 2000, max_seqs 10) makes more updates; the count goes on
    steps_1, steps_2 = (step_count(checkpoint(tmp_path, e, backend), backend) for e in (1, 2))
    assert steps_2 - steps_1 > steps_1 > 0, (steps_1, steps_2)


def step_count(path, backend):
    """The trainer's update count saved in a checkpoint."""
    if backend == "torch":
        import torch

        return int(torch.load(path, map_location="cpu", weights_only=True)["step"]["step_count"])
    import tensorflow as tf

    return int(tf.train.load_checkpoint(path).get_tensor("step/.ATTRIBUTES/VARIABLE_VALUE"))


def test_dump_net_shows_the_network_of_an_epoch(tmp_path, capsys):
    path = write(tmp_path, NETWORK + "pretrain = {'repetitions': [2, 1]}\n")
    layers_of, notice_of = {}, {}
    for epoch in (1, 2, 3, 4, None):
        args = [path, "--json"] + ([] if epoch is None else ["--epoch", str(epoch)])
        assert dump_net_main(args) == 0
        captured = capsys.readouterr()
        layers_of[epoch] = [layer["name"] for layer in json.loads(captured.out)["layers"]
                            if layer["class"] != "source"]
        notice_of[epoch] = captured.err
    assert "the network of epoch 5 (pretraining: 4 epochs" in notice_of[None]  # the final one: after pretraining
    assert "the network of epoch 3 (a pretraining epoch; " in notice_of[3]
    assert layers_of[1] == layers_of[2] == ["l1", "output"]
    assert layers_of[3] == ["l1", "l2", "output"]
    assert layers_of[4] == layers_of[None] == ["l1", "l2", "l3", "output"]


@pytest.mark.parametrize("text, args, expected", [
    (GET_NETWORK.replace("return net", "return list(net)"), [], "get_network(epoch=1) returned list"),
    (NETWORK + "pretrain = {'construction_algo': 'from_the_middle'}\n", [],
     "config key 'pretrain' option 'construction_algo': unknown construction 'from_the_middle'"),
    (NETWORK + "pretrain = 'default'\n", ["--epoch", "0"], "option --epoch: epochs count from 1"),
])
def test_bad_settings_stop_with_one_message(tmp_path, capsys, text, args, expected):
    path = write(tmp_path, text)
    main = dump_net_main if args else compile_net_main
    assert main([path] + args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert expected in err[-1], err


def test_epoch_config_refuses_settings_it_cannot_change(tmp_path, capsys):
    text = GET_NETWORK.replace('"batch_size": 500', '"optimizer": {"class": "sgd"}')
    path = write(tmp_path, text)
    assert dump_net_main([path, "--epoch", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "network entry '#config' (epoch 2)" in err and "'optimizer'" in err, err


def rates_of(values, num_epochs):
    """The learning rate of each epoch, as training asks for it (prepare, then the control)."""
    from netcompiler.config import Config
    from netcompiler.engine.epoch_networks import EpochNetworks
    from netcompiler.engine.learning_rate import LearningRateControl

    epochs = EpochNetworks.from_config(Config(values))
    control = LearningRateControl.from_config(values)
    rates = []
    for epoch in range(1, num_epochs + 1):
        epochs.epoch_network = epochs.schedule.for_epoch(epoch)
        epochs.prepare_learning_rate(control, epoch)
        rates.append(control.learning_rate_for_epoch(epoch))
        control.record(epoch, {"dev_score_output": 1.0 / epoch})
    return rates


CHAIN = {"l1": {"class": "linear", "n_out": 3, "from": ["data"]}, "l2": {"class": "linear", "n_out": 3, "from": ["l1"]},
         "output": {"class": "softmax", "loss": "ce", "from": ["l2"], "target": "classes"}}


def test_learning_rates_in_and_after_pretraining():
    # RETURNN: pretraining epochs (here 2: l1; the full network) train with pretrain_learning_rate, the first
    # epoch after them with learning_rate, then the control decides (learning_rates: epoch 4 -> 0.3)
    values = {"network": CHAIN, "pretrain": "default", "learning_rate": 0.1, "pretrain_learning_rate": 0.02,
              "learning_rates": {4: 0.3}}
    assert rates_of(values, 4) == [0.02, 0.02, 0.1, 0.3]
    values.update(use_learning_rate_control_always=True, learning_rates={1: 0.5, 3: 0.7})
    assert rates_of(values, 3) == [0.5, 0.5, 0.7]  # the control decides every epoch
    values = {"get_network": lambda epoch: dict(CHAIN, **{"#config": {"learning_rate": 0.01 * epoch}}),
              "learning_rate": 1.0}
    assert rates_of(values, 3) == [0.01, 0.02, 0.03]  # each epoch's '#config'


def test_learning_rate_of_a_pretraining_epoch_needs_the_control_always():
    def construct(idx, net_dict):
        return None if idx else dict(net_dict, **{"#config": {"learning_rate": 0.5}})

    values = {"network": CHAIN, "pretrain": {"construction_algo": construct}, "learning_rate": 0.1}
    with pytest.raises(ConfigError, match="use_learning_rate_control_always"):
        rates_of(values, 1)
    values["use_learning_rate_control_always"] = True
    assert rates_of(values, 2) == [0.5, 0.5]  # RETURNN's constant control keeps the last epoch's rate


class _NumpyBackend:
    """Parameters as NumPy arrays (what carry_params reads and writes through a backend)."""

    @staticmethod
    def to_numpy(raw):
        return raw

    @staticmethod
    def assign_raw(variable, value):
        variable[...] = value


class _Model:
    def __init__(self, shapes, fill):
        from types import SimpleNamespace

        self.backend = _NumpyBackend()
        self.params = {name: np.full(shape, fill, dtype=np.float32) for name, shape in shapes.items()}
        layers = {name.split("/")[0]: SimpleNamespace(name=name.split("/")[0]) for name in shapes}
        self.network = SimpleNamespace(all_params=lambda: [(name, layers[name.split("/")[0]], None)
                                                           for name in shapes])


@pytest.mark.parametrize("mode, reset, expected", [
    # old: l1/W [2, 3] = 1, output/W [3, 2] = 1; new: l1/W [2, 4], l2/W [4, 4], output/W [3, 2]; new values 0
    (None, [], {"l1/W": 0, "l2/W": 0, "output/W": 1}),  # ifpossible: only unchanged shapes
    ("subset", [], {"l1/W": "corner", "l2/W": 0, "output/W": 1}),
    ("reset", [], {"l1/W": 0, "l2/W": 0, "output/W": 0}),
    ("subset", ["output"], {"l1/W": "corner", "l2/W": 0, "output/W": 0}),  # copy_output_layer False
])
def test_carry_params_modes(mode, reset, expected, capsys):
    from netcompiler.engine.epoch_networks import carry_params
    from netcompiler.network_schedule import EpochNetwork

    old = _Model({"l1/W": (2, 3), "output/W": (3, 2)}, 1.0)
    new = _Model({"l1/W": (2, 4), "l2/W": (4, 4), "output/W": (3, 2)}, 0.0)
    carry_params(old, new, EpochNetwork(2, {}, {}, mode, reset, True))
    for name, want in expected.items():
        if want == "corner":  # the old values in the leading part, the initial values in the rest
            np.testing.assert_array_equal(new.params[name][:, :3], 1.0)
            np.testing.assert_array_equal(new.params[name][:, 3:], 0.0)
        else:
            np.testing.assert_array_equal(new.params[name], want, err_msg=name)
    notices = capsys.readouterr().err
    assert ("parameter 'l1/W' changed its shape [2, 3] -> [2, 4]" in notices) == (mode is None)


def test_load_network_gives_the_final_network(tmp_path):
    net = netcompiler.load_network(write(tmp_path, GET_NETWORK + "num_epochs = 3\n"))
    assert net.layers["l1"].dim == 6  # get_network(epoch=3): l1 has 6 units from epoch 2 on
    assert sorted(net.params) == ["l1/W", "l1/b", "output/W", "output/b"]
