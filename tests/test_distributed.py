"""Training with several workers (`engine/distributed.py`): the sharding rule, the lockstep of uneven shards,
the config and environment errors; slow: two worker processes on loopback (TensorFlow's
MultiWorkerMirroredStrategy from TF_CONFIG, PyTorch's gloo from torchrun's variables) end with the parameters
of one process trained on the combined batches, and only the chief writes files."""

import io
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from netcompiler.engine.datasets import make_dataset
from netcompiler.engine.distributed import (
    ShardedDataset, SingleProcess, _Workers, shard_indices, tf_config_identity, torch_env_identity,
    workers_from_config,
)
from netcompiler.engine.epochs import Scores
from netcompiler.errors import ConfigError, InvalidOptionError

REPO = Path(__file__).resolve().parent.parent
TF_CONFIG = {"cluster": {"worker": ["127.0.0.1:1", "127.0.0.1:2"]}, "task": {"type": "worker", "index": 1}}
TORCH_ENV = {"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"}


# --------------------------------------------------------------------------------- the sharding rule
@pytest.mark.parametrize("num_seqs", [0, 1, 7, 12])
@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_the_shards_of_an_epoch_are_disjoint_and_cover_it_in_its_order(num_seqs, size):
    shards = [list(shard_indices(num_seqs, rank, size)) for rank in range(size)]
    assert sorted(i for shard in shards for i in shard) == list(range(num_seqs))
    for shard in shards:
        assert shard == sorted(shard)
    assert max(map(len, shards)) - min(map(len, shards)) <= 1


def test_a_sharded_dataset_gives_every_size_th_sequence_of_the_epoch():
    whole = make_dataset({"class": "Task12AXDataset", "num_seqs": 11}, "train")
    part = ShardedDataset(make_dataset({"class": "Task12AXDataset", "num_seqs": 11}, "train"), rank=1, size=3)
    whole.init_epoch(2)
    part.init_epoch(2)
    assert part.num_seqs() == 4  # sequences 1, 4, 7, 10 (of 0..10)
    for i, j in enumerate([1, 4, 7, 10]):
        assert part.seq_tag(i) == whole.seq_tag(j)
        assert part.seq_length(i) == whole.seq_length(j)
        for key, value in whole.get_seq(j).items():
            np.testing.assert_array_equal(part.get_seq(i)[key], value)
    assert part.data_keys() == whole.data_keys()


class _ScriptedWorkers(_Workers):
    """Worker 0 of two, whose partner has `other` batches: the sums are this worker's values plus the partner's."""

    def __init__(self, other: int, other_scores=None):
        super().__init__(0, 2)
        self.other, self.other_scores, self.calls = other, other_scores, 0

    def _sum_floats(self, values, purpose):
        if purpose == "lockstep":
            self.calls += 1
            return [values[0] + (1.0 if self.calls <= self.other else 0.0)]
        return [a + b for a, b in zip(values, self.other_scores)]


def test_lockstep_pads_a_shorter_shard_with_empty_batches_until_the_longest_is_done():
    batches = [({"data": np.ones((2, 5, 3))}, {"data": np.array([5, 4])}) for _ in range(2)]
    out = list(_ScriptedWorkers(other=4).lockstep(iter(batches)))
    assert len(out) == 4
    assert [b[0]["data"].shape for b in out] == [(2, 5, 3), (2, 5, 3), (0, 5, 3), (0, 5, 3)]
    assert [b[1]["data"].shape for b in out[2:]] == [(0,), (0,)]
    assert len(list(_ScriptedWorkers(other=1).lockstep(iter(batches)))) == 2  # the longer one: its own batches


def test_a_worker_without_any_batch_while_others_have_some_is_an_error():
    with pytest.raises(ConfigError, match="too few sequences for 2 workers"):
        list(_ScriptedWorkers(other=1).lockstep(iter([])))


def test_epoch_scores_are_summed_over_workers():
    scores = Scores(loss={"output": 3.0}, error={"output": 1.0}, frames={"output": 10.0})
    summed = _ScriptedWorkers(other=0, other_scores=[5.0, 2.0, 30.0]).reduce_scores(scores)
    assert summed.normalized() == {"output": {"loss": 8.0 / 40.0, "error": 3.0 / 40.0}}


# ------------------------------------------------------------------------- config and environment errors
@pytest.mark.parametrize("text, message", [
    (None, "TF_CONFIG is not"),
    ("{cluster", "no JSON"),
    (json.dumps({"task": {"type": "worker", "index": 0}}), "cluster.worker"),
    (json.dumps({"cluster": {"worker": ["a:1"], "ps": ["b:1"]}, "task": {"type": "worker", "index": 0}}),
     "only 'worker' jobs"),
    (json.dumps({"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": 2}}), "index"),
    (json.dumps({"cluster": {"worker": ["a:1"]}, "task": {"type": "chief", "index": 0}}), "'type': 'worker'"),
])
def test_a_malformed_tf_config_is_a_config_error(text, message):
    with pytest.raises(ConfigError, match=message):
        tf_config_identity(text)


def test_tf_config_gives_rank_and_size():
    assert tf_config_identity(json.dumps(TF_CONFIG)) == {"rank": 1, "size": 2, "workers": TF_CONFIG["cluster"]["worker"]}
    assert torch_env_identity(TORCH_ENV) == {"rank": 1, "size": 2}


@pytest.mark.parametrize("env, message", [
    ({}, "RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT are not"),
    (dict(TORCH_ENV, RANK="2"), "0 <= RANK < WORLD_SIZE"),
    (dict(TORCH_ENV, WORLD_SIZE="two"), "0 <= RANK < WORLD_SIZE"),
])
def test_missing_or_bad_torchrun_variables_are_a_config_error(env, message):
    with pytest.raises(ConfigError, match=message):
        torch_env_identity(env)


@pytest.mark.parametrize("values, backend, env, error, message", [
    ({"torch_distributed": {}}, "tensorflow", TORCH_ENV, ConfigError, "needs backend = 'torch'"),
    ({"distributed_tf": {}}, "torch", {"TF_CONFIG": json.dumps(TF_CONFIG)}, ConfigError, "use torch_distributed"),
    ({"distributed_tf": {}, "torch_distributed": {}}, "torch", TORCH_ENV, ConfigError, "both"),
    ({"distributed_tf": {}}, "tensorflow", {}, ConfigError, "TF_CONFIG is not"),
    ({"distributed_tf": {"local_only": True}}, "tensorflow", {"TF_CONFIG": json.dumps(TF_CONFIG)},
     InvalidOptionError, "unknown option.*'local_only'"),
    ({"distributed_tf": {"timeout_sec": 0}}, "tensorflow", {"TF_CONFIG": json.dumps(TF_CONFIG)},
     InvalidOptionError, "timeout_sec"),
    ({"distributed_tf": {"strategy": "mirrored"}}, "tensorflow", {"TF_CONFIG": json.dumps(TF_CONFIG)},
     InvalidOptionError, "only 'multi_worker'"),
    ({"distributed_tf": 3}, "tensorflow", {"TF_CONFIG": json.dumps(TF_CONFIG)}, InvalidOptionError, "a dict"),
    ({"torch_distributed": {"reduce_type": "param", "param_sync_step": 10}}, "torch", TORCH_ENV,
     InvalidOptionError, "param_sync_step"),
    ({"torch_distributed": {"reduce_type": "param"}}, "torch", TORCH_ENV, InvalidOptionError, "reduce_type 'grad'"),
    ({"torch_distributed": {"backend": "nccl"}}, "torch", TORCH_ENV, InvalidOptionError, "only backend 'gloo'"),
    ({"distributed_tf": {}, "tf_jit": True}, "tensorflow", {"TF_CONFIG": json.dumps(TF_CONFIG)}, ConfigError,
     "XLA does not compile collective"),
    ({"torch_distributed": {}, "maximize_grad_norm": 0.1}, "torch", TORCH_ENV, ConfigError, "maximize_grad_norm"),
])
def test_distribution_settings_that_cannot_work_are_refused(values, backend, env, error, message):
    with pytest.raises(error, match=message) as info:
        workers_from_config(values, backend, "train", environ=env)
    assert "\n" not in str(info.value)


def test_tf_config_without_distributed_tf_and_other_tasks_train_alone_with_a_notice(capsys):
    assert isinstance(workers_from_config({}, "tensorflow", "train", environ={"TF_CONFIG": "x"}), SingleProcess)
    assert "TF_CONFIG is set, but the config has no distributed_tf" in capsys.readouterr().err
    assert isinstance(workers_from_config({}, "torch", "train", environ=TORCH_ENV), SingleProcess)
    assert "WORLD_SIZE is 2 (torchrun?), but the config has no torch_distributed" in capsys.readouterr().err
    workers = workers_from_config({"torch_distributed": {}}, "torch", "eval", environ=TORCH_ENV)
    assert type(workers) is SingleProcess
    assert "task 'eval' runs on worker 1 alone" in capsys.readouterr().err


def test_compile_net_names_the_key_when_torch_distributed_is_set_on_tensorflow(tmp_path, monkeypatch):
    from netcompiler.engine.main import run_task

    config = tmp_path / "c.py"
    config.write_text(_config(backend="tensorflow", distributed="torch_distributed = {}", max_seqs=5, num_epochs=1))
    for key, value in TORCH_ENV.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(ConfigError, match="config key 'torch_distributed'.*needs backend = 'torch'"):
        run_task(str(config), [], log=io.StringIO())
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------- two workers
def _config(backend: str, distributed: str, max_seqs: int, num_epochs: int) -> str:
    return f"""
backend = {backend!r}
torch_num_threads = 1
task = "train"
train = {{"class": "Task12AXDataset", "num_seqs": 41}}  # worker 1 takes an empty step after its 4 batches
extern_data = {{"data": {{"dim": 9}}, "classes": {{"dim": 2, "sparse": True}}}}
batch_size = 100000
max_seqs = {max_seqs}
network = {{"hidden": {{"class": "linear", "activation": "tanh", "n_out": 8, "from": "data"}},
           "output": {{"class": "softmax", "loss": "ce", "from": "hidden", "target": "classes"}}}}
optimizer = {{"class": "sgd"}}  # linear in the gradient: summed and averaged gradients would differ (Adam: not)
learning_rate = 0.002
num_epochs = {num_epochs}
model = "out/model"
{distributed}
"""


def _free_ports(count: int):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def _run_workers(folders, config_text: str, worker_env):
    """compile-net in each folder (worker i: environment `worker_env(i)`), all at once; their stdouts."""
    command = [sys.executable, "-c", "import sys; from netcompiler.cli import compile_net_main; "
                                     "sys.exit(compile_net_main())", "config.py"]
    procs = []
    for rank, folder in enumerate(folders):
        (folder / "config.py").write_text(config_text)
        env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
                   TF_CPP_MIN_LOG_LEVEL="2", **worker_env(rank))
        procs.append(subprocess.Popen(command, cwd=str(folder), env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-3000:]
        outputs.append(out)
    return outputs


def _single_process_run(folder: Path, backend: str, num_epochs: int) -> str:
    """The reference: one process, max_seqs 10 (each batch the union of the two workers' batches of 5; the last,
    sequence 40 alone, is worker 0's while worker 1 steps with an empty batch)."""
    from netcompiler.engine.main import run_task

    folder.mkdir()
    (folder / "config.py").write_text(_config(backend, "", max_seqs=10, num_epochs=num_epochs))
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        assert run_task("config.py", [], log=io.StringIO()) == 0
    finally:
        os.chdir(cwd)
    return str(folder / "out" / "model")


def _epochs(log: str):
    """The epochs whose result line a log has (`epoch 2  train ce ...`)."""
    return [int(line.split()[1]) for line in log.splitlines() if line.startswith("epoch ") and "  train " in line]


def _tf_params(path):
    import tensorflow as tf

    reader = tf.train.load_checkpoint(path)
    return {name: reader.get_tensor(name) for name, _ in tf.train.list_variables(path) if "/params/" in name}


def _torch_params(path):
    import torch

    return {k: v.numpy() for k, v in torch.load(path + ".pt", weights_only=False)["model"].items()}


def _assert_same_params(got, want):
    assert sorted(got) == sorted(want) and got
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.slow
def test_two_tensorflow_workers_equal_one_process_with_the_combined_batch(tmp_path):
    """Two MultiWorkerMirroredStrategy workers (TF_CONFIG on loopback), batches of 5 sequences each, 2 epochs;
    the chief's last checkpoint against one process with batches of 10. The other worker writes nothing."""
    pytest.importorskip("tensorflow")
    folders = [tmp_path / "w0", tmp_path / "w1"]
    for folder in folders:
        folder.mkdir()
    workers = [f"127.0.0.1:{p}" for p in _free_ports(2)]

    def env(rank):
        return {"TF_CONFIG": json.dumps({"cluster": {"worker": workers}, "task": {"type": "worker", "index": rank}})}
    outs = _run_workers(folders, _config("tensorflow", "distributed_tf = {'timeout_sec': 120}", 5, 2), env)
    reference = _single_process_run(tmp_path / "single", "tensorflow", num_epochs=2)
    _assert_same_params(_tf_params(str(folders[0] / "out" / "model.002")), _tf_params(reference + ".002"))
    assert os.listdir(folders[1]) == ["config.py"]  # the follower wrote no checkpoint, history, log or lock
    assert "model.learning_rates.json" in os.listdir(folders[0] / "out")
    assert [_epochs(out) for out in outs] == [[1, 2], [1, 2]]


@pytest.mark.slow
def test_two_torch_workers_equal_one_process_with_the_combined_batch_also_after_resuming(tmp_path):
    """Two gloo workers (torchrun's variables on loopback) train epoch 1, then resume for epoch 2 from the chief's
    checkpoint (copied to the follower's folder: a shared model folder); against one process with batches of 10.
    The follower writes nothing."""
    pytest.importorskip("torch")
    folders = [tmp_path / "w0", tmp_path / "w1"]
    for folder in folders:
        folder.mkdir()
    port = _free_ports(1)[0]

    def env(rank):
        return {"RANK": str(rank), "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
    _run_workers(folders, _config("torch", "torch_distributed = {}", 5, 1), env)
    assert os.listdir(folders[1]) == ["config.py"]
    shutil.copytree(folders[0] / "out", folders[1] / "out")
    before = sorted(os.listdir(folders[1] / "out"))
    port = _free_ports(1)[0]
    outs = _run_workers(folders, _config("torch", "torch_distributed = {}", 5, 2), env)
    assert [_epochs(out) for out in outs] == [[2], [2]]  # both resumed after epoch 1
    assert sorted(os.listdir(folders[1] / "out")) == before  # the follower still wrote nothing
    reference = _single_process_run(tmp_path / "single", "torch", num_epochs=2)
    _assert_same_params(_torch_params(str(folders[0] / "out" / "model.002")), _torch_params(reference + ".002"))


def test_torch_workers_take_their_process_group_down_before_the_interpreter_exits():
    """Left to interpreter exit, gloo's threads sometimes ended a finished run with SIGABRT ("terminate called
    without an active exception", seen once in CI): the group is destroyed by an exit handler of its own, which
    runs before this check (registered earlier, so run later)."""
    pytest.importorskip("torch")
    script = """
import atexit, os
import torch.distributed as dist
atexit.register(lambda: print("initialized at exit:", dist.is_initialized(), flush=True))
from netcompiler.engine.distributed import TorchWorkers
workers = TorchWorkers({"rank": 0, "size": 1}, "gloo", 60)
print("summed:", workers._sum_floats([1.5, 2.0], "check"), flush=True)
"""
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_ports(1)[0]))
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "summed: [1.5, 2.0]" in proc.stdout and "initialized at exit: False" in proc.stdout, proc.stdout


def test_a_compile_net_worker_ends_after_its_exit_handlers_with_its_exit_status():
    """gloo's C++ teardown at interpreter exit still sometimes aborted a finished worker (1 of 8 two-worker runs
    on a loaded machine): a compile-net run that started a torch process group ends with os._exit after its exit
    handlers (`end_worker_process`), stdout flushed and its exit status kept."""
    script = """
import atexit, sys
from netcompiler.engine.distributed import end_worker_process
atexit.register(lambda: print("exit handler ran"))
sys.stdout.write("not flushed yet; ")
end_worker_process(3)
print("never printed")
"""
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stderr[-3000:]
    assert proc.stdout == "not flushed yet; exit handler ran\n"


def test_compile_net_ends_its_process_only_when_its_run_started_a_torch_group(monkeypatch, tmp_path):
    from netcompiler import cli
    from netcompiler.engine import distributed

    ended = []
    monkeypatch.setattr(distributed, "end_worker_process", ended.append)
    monkeypatch.setattr(cli, "run_tool", lambda *args: 0)
    assert cli.compile_net_main(["config.py"]) == 0 and ended == []

    def run_starting_a_group(*args):
        monkeypatch.setattr(distributed, "_TORCH_GROUPS_STARTED", distributed._TORCH_GROUPS_STARTED + 1)
        return 4
    monkeypatch.setattr(cli, "run_tool", run_starting_a_group)
    assert cli.compile_net_main(["config.py"]) == 4 and ended == [4]
