"""Ordinary faults of a run, each with a clear error (exit 2) or a clean result: a loss without a target in
the dumps, leftovers of an interrupted save, the model lock, a full disk, a damaged newest checkpoint, a
forward run without a dataset. (Fault injection in subprocesses is in test_faults.py, slow-marked.)"""

import errno
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


# ------------------------------------------------------------------------------------------ leftovers

def test_leftovers_of_interrupted_saves_go_and_nothing_else(tmp_path):
    from netcompiler.engine.checkpoints import remove_incomplete

    def touch(name):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"x")

    leftovers = ["model.tmp-003-abcdef12.index", "model.tmp-003-abcdef12.data-00000-of-00001",
                 "model.tmp-003-abcdef12.meta.json", "model.learning_rates.json.tmp-ab_d12x4",
                 "model.004.data-00000-of-00001", "model.004.meta.json"]
    tf_folder = "model.tmp-003-abcdef12_temp"  # TensorFlow's sharded save, killed mid-way
    kept = ["model.003.index", "model.003.data-00000-of-00001", "model.003.meta.json", "model.lock",
            "model.learning_rates.json", "model.tmp-notes.txt", "model.tmp-003-abcdef1.index",
            "other.tmp-003-abcdef12.index", "model.forward.hdf", "notes/model.tmp-003-abcdef12.index",
            "model.tmp-004-0123abcd_temp/sub/part-00000", "model.004.meta.json.d/x"]
    for name in leftovers + kept + [f"{tf_folder}/part-00000-of-00001.data-00000-of-00001.tempstate123",
                                    f"{tf_folder}/part-00000-of-00001.index"]:
        touch(name)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "precious").write_bytes(b"y")
    os.symlink(tmp_path / "elsewhere", tmp_path / "model.tmp-005-0123abcd_temp")

    removed = remove_incomplete(str(tmp_path / "model"))
    assert sorted(removed) == sorted(leftovers + [tf_folder])
    for name in kept:
        assert (tmp_path / name).exists(), name
    assert not (tmp_path / tf_folder).exists()
    assert (tmp_path / "elsewhere" / "precious").read_bytes() == b"y"
    assert os.path.islink(tmp_path / "model.tmp-005-0123abcd_temp")


# ------------------------------------------------------------------------------------------ lock

def test_second_lock_is_refused_naming_the_holder(tmp_path):
    from netcompiler.engine.lock import ModelLock
    from netcompiler.errors import ModelFolderError

    prefix = str(tmp_path / "out" / "model")
    with ModelLock(prefix, "train") as first:
        record = json.loads((tmp_path / "out" / "model.lock").read_text())
        assert record["pid"] == os.getpid() and record["task"] == "train" and record["host"]
        with pytest.raises(ModelFolderError) as info:
            ModelLock(prefix, "eval").acquire()  # a second open file description: flock refuses it
        message = str(info.value)
        assert f"process {os.getpid()}" in message and "running since" in message and prefix in message
        assert info.value.reason == "in use"
        assert first.fd is not None
    assert (tmp_path / "out" / "model.lock").read_text() == ""  # released: the record is emptied
    with ModelLock(prefix):
        pass


def dead_pid():
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_stale_record_of_a_dead_process_is_taken_over(tmp_path):
    import socket

    from netcompiler.engine.lock import ModelLock

    prefix = str(tmp_path / "model")
    stale = {"pid": dead_pid(), "host": socket.gethostname(), "started": 1.0, "task": "train"}
    (tmp_path / "model.lock").write_text(json.dumps(stale))
    with ModelLock(prefix) as lock:
        assert lock.took_over == stale
        assert json.loads((tmp_path / "model.lock").read_text())["pid"] == os.getpid()


def test_without_flock_the_record_decides(tmp_path, monkeypatch):
    import errno
    import fcntl
    import socket

    from netcompiler.engine.lock import ModelLock
    from netcompiler.errors import ModelFolderError

    def no_flock(fd, operation):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_flock)
    prefix = str(tmp_path / "model")
    live = {"pid": os.getppid(), "host": socket.gethostname(), "started": 1.0}
    (tmp_path / "model.lock").write_text(json.dumps(live))
    with pytest.raises(ModelFolderError, match=f"process {os.getppid()} on host"):
        ModelLock(prefix).acquire()
    (tmp_path / "model.lock").write_text(json.dumps(dict(live, pid=dead_pid())))
    with ModelLock(prefix) as lock:
        assert lock.took_over is not None


# ------------------------------------------------------------------------------------------ full disk

def test_full_disk_during_save_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    import hashlib

    import tensorflow as tf

    from netcompiler.engine.checkpoints import CheckpointManager
    from netcompiler.errors import CheckpointError

    prefix = str(tmp_path / "model")
    manager = CheckpointManager(prefix)
    module = tf.Module()
    module.v = tf.Variable([1.0, 2.0])
    manager.save(1, {"model": module})
    before = {n: hashlib.sha256((tmp_path / n).read_bytes()).hexdigest() for n in os.listdir(tmp_path)}

    def full_disk(self, file_prefix, options=None):  # what TensorFlow leaves and raises on ENOSPC
        os.makedirs(file_prefix + "_temp")
        (tmp_path / (os.path.basename(file_prefix) + "_temp") / "part-00000-of-00001.index").write_bytes(b"")
        raise tf.errors.ResourceExhaustedError(None, None, f"{file_prefix}_temp/part-00000-of-00001.data-00000-"
                                                           f"of-00001.tempstate1; No space left on device")

    monkeypatch.setattr(tf.train.Checkpoint, "write", full_disk)
    with pytest.raises(CheckpointError) as info:
        manager.save(2, {"model": module})
    message = str(info.value)
    assert "the disk is full" in message and f"{prefix}.002" in message, message
    assert f"last complete checkpoint is '{prefix}.001' (intact)" in message, message
    after = {n: hashlib.sha256((tmp_path / n).read_bytes()).hexdigest() for n in os.listdir(tmp_path)}
    assert after == before  # nothing of the failed write is left, nothing before changed




@pytest.mark.parametrize("size", [10, 1_000_000])  # fails when the file is closed / inside torch.save's writes
def test_full_disk_during_torch_save_keeps_the_previous_checkpoint(tmp_path, monkeypatch, size):
    """torch.save turns a failed write into a RuntimeError without errno ("basic_ios::clear: iostream error",
    "[enforce fail at inline_container.cc] unexpected pos ..."): the full disk must still be reported as on
    TensorFlow. The temporary file torch.save writes is made a link to /dev/full, whose every write fails with
    ENOSPC as on a full disk."""
    import hashlib
    import uuid

    torch = pytest.importorskip("torch")
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    from netcompiler.engine import torch_checkpoints
    from netcompiler.errors import CheckpointError

    prefix = str(tmp_path / "model")
    manager = torch_checkpoints.TorchCheckpointManager(prefix)
    params = {"w": torch.ones(size)}
    manager.save(1, {"model": params})
    before = {n: hashlib.sha256((tmp_path / n).read_bytes()).hexdigest() for n in os.listdir(tmp_path)}
    monkeypatch.setattr(torch_checkpoints.uuid, "uuid4", lambda: uuid.UUID(int=0))
    os.symlink("/dev/full", tmp_path / "model.tmp-002-00000000.pt")
    with pytest.raises(CheckpointError) as info:
        manager.save(2, {"model": params})
    message = str(info.value)
    assert message.startswith(f"the disk is full: checkpoint '{prefix}.002.pt' could not be written in "
                              f"'{tmp_path}' ([Errno 28] No space left on device); nothing of it was kept; "), message
    assert f"the last complete checkpoint is '{prefix}.001.pt' (intact): run again to resume after epoch 1" in message
    after = {n: hashlib.sha256((tmp_path / n).read_bytes()).hexdigest() for n in os.listdir(tmp_path)}
    assert after == before  # nothing of the failed write is left (the link neither), nothing before changed
    assert torch_checkpoints.TorchCheckpointManager(prefix).latest_complete() == (1, f"{prefix}.001.pt")


@pytest.mark.parametrize("backend, newest", [("torch", "model.002.pt"), ("tensorflow", "model.001")])
def test_full_disk_outside_the_checkpoint_writer_names_the_runs_newest_checkpoint(tmp_path, backend, newest):
    """A full disk met by the learning-rate history, TensorBoard or forward output names the newest complete
    checkpoint of the run's backend: on PyTorch its .pt file (not "no complete checkpoint" for want of .index)."""
    from netcompiler.engine.main import _storage_problem

    for name in ("model.001.index", "model.001.data-00000-of-00001", "model.001.pt", "model.002.pt"):
        (tmp_path / name).write_bytes(b"")
    history = str(tmp_path / "model.learning_rates.json")
    problem = _storage_problem(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), history), str(tmp_path / "model"),
                               backend)
    assert problem.reason == "disk full" and problem.path == history
    message = str(problem)
    assert message.startswith(f"the disk is full: cannot write '{history}'; "), message
    assert f"the last complete checkpoint is '{tmp_path / newest}' (intact)" in message, message
    assert _storage_problem(ValueError("not about storage"), str(tmp_path / "model"), backend) is None


# ------------------------------------------------------------------------------------------ whole runs

SMALL = """
    train = {"class": "Task12AXDataset", "num_seqs": 30}
    dev = {"class": "Task12AXDataset", "num_seqs": 10, "fixed_random_seed": 1}
    network = {"output": {"class": "softmax", "loss": "ce", "from": "data", "target": "classes"}}
    optimizer = {"class": "adam"}
    learning_rate = 0.01
    model = "out/model"
"""


def run(capsys, *argv):
    capsys.readouterr()
    status = compile_net_main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, [line for line in err.splitlines() if line.strip()]


def test_damaged_newest_checkpoint_says_how_to_use_the_previous_one(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = write_config(tmp_path, SMALL)
    status, out, err = run(capsys, config, "++num_epochs", "2")
    assert status == 0, err
    data = tmp_path / "out" / "model.002.data-00000-of-00001"
    data.write_bytes(data.read_bytes()[:len(data.read_bytes()) // 2])

    status, out, err = run(capsys, config, "++num_epochs", "3")
    assert status == 2 and len(err) == 1, err
    assert "out/model.002" in err[0] and "truncated" in err[0], err
    assert "the previous checkpoint 'out/model.001' is intact" in err[0], err
    assert "'out/model.002.index', 'out/model.002.data-*' and 'out/model.002.meta.json'" in err[0], err
    assert (tmp_path / "out" / "model.lock").read_text() == ""  # released after the error

    status, out, err = run(capsys, config, "--task", "eval")
    assert status == 2 and "use it with ++load out/model.001" in err[0], err
    status, out, err = run(capsys, config, "--task", "eval", "++load", "out/model.001")
    assert status == 0 and out.splitlines()[-1].startswith("out/model.001  dev ce "), (out, err)

    for name in ("model.002.index", "model.002.data-00000-of-00001", "model.002.meta.json"):  # as told
        os.unlink(tmp_path / "out" / name)
    status, out, err = run(capsys, config, "++num_epochs", "3")
    assert status == 0, err
    assert "resuming after epoch 1 from out/model.001" in out, out


def test_forward_without_a_dataset_is_a_config_error(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = write_config(tmp_path, SMALL)
    status, out, err = run(capsys, config, "++num_epochs", "1")
    assert status == 0, err
    status, out, err = run(capsys, config, "--task", "forward", "++train", "None", "++dev", "None")
    assert status == 2 and len(err) == 1, err
    assert "nothing to forward: the config has none of 'eval', 'dev', 'train'" in err[0], err
