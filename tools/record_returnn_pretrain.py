"""Records the network of each pretraining epoch that RETURNN builds: the fixture of `tests/test_network_schedule.py`.

For each case (a network and `pretrain` options) this runs RETURNN's `pretrain_from_config` on a config holding just
them (no training, no TensorFlow graph) and records, for epochs 1 .. (pretraining epochs + 1), each layer's name and
its `from`, as `Pretrain.get_network_json_for_epoch` gives them, plus the number of pretraining epochs. The test
builds the same schedule with netcompiler's `NetworkSchedule` and compares, so it needs nothing from RETURNN.

RETURNN is never a dependency of netcompiler; run this in the scratch virtualenv:

    /tmp/returnn_venv/bin/python tools/record_returnn_pretrain.py

Output: `tests/fixtures/returnn/pretrain.json`.
"""

from __future__ import annotations

import copy
import json
import os

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "returnn", "pretrain.json")


def _blstm_net(num_layers: int):
    """RETURNN's usual stacked BLSTM: fw/bw pairs, each pair reading the pair before, then a softmax."""
    net, sources = {}, ["data"]
    for i in range(1, num_layers + 1):
        for direction, sign in (("fw", 1), ("bw", -1)):
            net[f"lstm{i}_{direction}"] = {"class": "rec", "unit": "lstm", "n_out": 4, "direction": sign,
                                           "from": list(sources)}
        sources = [f"lstm{i}_fw", f"lstm{i}_bw"]
    net["output"] = {"class": "softmax", "loss": "ce", "from": list(sources), "target": "classes"}
    return net


def _linear_net():
    """Three linear layers in a chain, an output layer that is no softmax (found by its `target`) and a
    parameter-free layer (trainable False) right after the input."""
    return {
        "win": {"class": "copy", "trainable": False, "from": ["data"]},
        "l1": {"class": "linear", "activation": "tanh", "n_out": 5, "from": ["win"]},
        "l2": {"class": "linear", "activation": "tanh", "n_out": 5, "from": ["l1"]},
        "l3": {"class": "linear", "activation": "tanh", "n_out": 5, "from": ["l2"]},
        "output": {"class": "linear", "activation": None, "n_out": 2, "loss": "mse", "target": "classes",
                   "from": ["l3"]},
    }


CASES = [
    # name, network, pretrain setting
    ("blstm3_default", _blstm_net(3), "default"),
    ("blstm3_repetitions_int", _blstm_net(3), {"repetitions": 2}),
    ("blstm3_repetitions_list", _blstm_net(3), {"repetitions": [1, 3]}),
    ("blstm3_repetitions_dict_final", _blstm_net(3), {"repetitions": {"default": 2, "final": 1}}),
    ("blstm3_repetitions_dict_steps", _blstm_net(3), {"repetitions": {"default": 1, 0: 3, 1: 2}}),
    ("blstm4_from_input", _blstm_net(4), {"construction_algo": "from_input"}),
    ("blstm2_no_modifications", _blstm_net(2), {"construction_algo": "no_network_modifications", "repetitions": 2}),
    ("linear3_default", _linear_net(), "default"),
    ("linear3_from_input", _linear_net(), {"construction_algo": "from_input", "repetitions": [2, 1]}),
]


def record_case(network, pretrain):
    from returnn.config import Config
    from returnn.pretrain import pretrain_from_config

    config = Config()
    config.update({"network": copy.deepcopy(network), "pretrain": copy.deepcopy(pretrain)})
    schedule = pretrain_from_config(config)
    num = schedule.get_train_num_epochs()
    epochs = []
    for epoch in range(1, num + 2):
        net = schedule.get_network_json_for_epoch(epoch)
        epochs.append({name: list(layer.get("from", ["data"])) for name, layer in sorted(net.items())})
    return {"num_pretrain_epochs": num, "layers_per_epoch": epochs}


def main():
    import returnn

    cases = []
    for name, network, pretrain in CASES:
        # JSON keys are strings: a repetitions dict's step index 0 is written as "0" (the test turns it back)
        record = {"name": name, "network": network, "pretrain": pretrain}
        record.update(record_case(network, pretrain))
        cases.append(record)
    data = {"returnn_version": returnn.__version__, "cases": cases}
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(data, f, indent=1, default=str)
        f.write("\n")
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
