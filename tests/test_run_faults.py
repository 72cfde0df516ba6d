"""Ordinary faults of a run, each with a clear error (exit 2) or a clean result: a loss without a target in
the dumps, leftovers of an interrupted save, the model lock, a full disk, a damaged newest checkpoint, a
forward run without a dataset. (Fault injection in subprocesses is in test_faults.py, slow-marked.)"""

import json
import os
import textwrap

import pytest

from netcompiler.cli import compile_net_main, dump_net_main

HEADER = 'extern_data = {"data": {"dim": 9}, "classes": {"dim": 2, "sparse": True}}\n'


def write_config(tmp_path, body, name="config.py"):
    path = tmp_path / name
    path.write_text(HEADER + textwrap.dedent(body).lstrip("\n"), encoding="utf-8")
    return str(path)


# ------------------------------------------------------------------------------------------ as_is: no target

AS_IS = """
    train = {"class": "Task12AXDataset", "num_seqs": 20}
    network = {"l": {"class": "linear", "n_out": 3, "from": "data", "activation": None},
               "output": {"class": "copy", "loss": "as_is", "from": "l"}}
    num_epochs = 1
    learning_rate = 0.001
"""


@pytest.mark.parametrize("flag", [None, "--json", "--dot"])
def test_loss_without_target_dumps(tmp_path, capsys, flag):
    path = write_config(tmp_path, AS_IS)
    capsys.readouterr()
    status = dump_net_main([path] + ([flag] if flag else []))
    out, err = capsys.readouterr()
    assert status == 0, err
    if flag is None:
        line = next(line for line in out.splitlines() if line.startswith("output "))
        assert line.endswith("loss as_is"), line
    elif flag == "--json":
        record = next(layer for layer in json.loads(out)["layers"] if layer["name"] == "output")
        assert (record["loss"], record["target"]) == ("as_is", None)


def test_loss_without_target_trains(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = write_config(tmp_path, textwrap.dedent(AS_IS) + 'model = "out/model"\n')
    status = compile_net_main([path])
    out, err = capsys.readouterr()
    assert status == 0, err
    assert "loss as_is" in out and "epoch 1  train as_is " in out, out
    assert os.path.exists(tmp_path / "out" / "model.001.index")
