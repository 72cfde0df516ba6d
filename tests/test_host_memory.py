"""A compile-net run keeps freed host memory for the next step (engine/host_memory.py, set by `Session`): the
PyTorch train steps of a BLSTM after the first few fault no pages in, where with glibc's defaults each faults in
tens of MB again; and oneDNN's primitive cache is bounded (unless the environment sizes it). Each case runs in a
process of its own, since malloc's settings and oneDNN's cache are the process's."""

import os
import subprocess
import sys

import pytest

pytest.importorskip("torch", reason="PyTorch is not installed (pip install -e '.[torch]')")

# Prints the median page faults of 5 train steps of a BLSTM (2 x 128 per direction, 500 classes, 16 x 200
# frames) after 3 warm-up steps; with argument "keep" after `keep_freed_host_memory`, as compile-net runs.
SCRIPT = '''
import resource, sys
import numpy as np
import torch
from netcompiler.builtin import load_builtin_layers
from netcompiler.config import Config
from netcompiler.emit.model import CompiledNetwork
from netcompiler.engine import torch_trainer
from netcompiler.engine.host_memory import keep_freed_host_memory
from netcompiler.engine.torch_optimizers import make_torch_optimizer
from netcompiler.network import build_network

if sys.argv[1] == "keep":
    assert keep_freed_host_memory()
torch.set_num_threads(1)
load_builtin_layers()
net = {}
for i in range(2):
    for name, direction in (("fw", 1), ("bw", -1)):
        net[f"lstm{i}_{name}"] = {"class": "rec", "unit": "nativelstm2", "n_out": 128, "direction": direction,
                                  "from": [f"lstm{i - 1}_fw", f"lstm{i - 1}_bw"] if i else "data"}
net["output"] = {"class": "softmax", "n_out": 500, "loss": "ce", "from": ["lstm1_fw", "lstm1_bw"]}
config = Config({"backend": "torch", "network": net, "optimizer": {"class": "adam"}, "learning_rate": 1e-3,
                 "extern_data": {"data": {"dim": 40}, "classes": {"dim": 500, "sparse": True}}})
model = CompiledNetwork(build_network(config), backend="torch")
trainer = torch_trainer.TorchTrainer(model, make_torch_optimizer(config.values, model.trainable_params), None)
rng = np.random.RandomState(0)
inputs = {"data": torch.from_numpy(rng.randn(16, 200, 40).astype(np.float32)),
          "classes": torch.from_numpy(rng.randint(0, 500, (16, 200)).astype(np.int32))}
lengths = {key: torch.full([16], 200, dtype=torch.int32) for key in inputs}
faults = []
for _ in range(8):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    trainer.train_step(inputs, lengths)
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(sorted(faults[3:])[2])
'''


def page_faults_per_step(case):
    run = subprocess.run([sys.executable, "-c", SCRIPT, case], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return int(run.stdout.split()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc settings")
def test_train_steps_fault_no_memory_in_again():
    default = page_faults_per_step("default")
    assert default > 1000  # glibc's defaults give memory back between the steps (10-40 thousand faults here)
    # kept: usually 0-3 faults per step; right after other processes' multi-GB runs, a few hundred were seen
    assert page_faults_per_step("keep") < min(1000, default // 10)


def test_every_compile_net_run_keeps_freed_memory(monkeypatch, tmp_path):
    from netcompiler.config import load_config
    from netcompiler.engine import session
    from netcompiler.network import build_network

    calls = []
    monkeypatch.setattr(session, "keep_freed_host_memory", lambda: calls.append(1))
    path = tmp_path / "c.py"
    path.write_text('backend = "torch"\nextern_data = {"data": {"dim": 3}, "classes": {"dim": 4, "sparse": True}}\n'
                    'network = {"output": {"class": "softmax", "from": "data", "loss": "ce"}}\n')
    config = load_config(str(path))
    session.Session(config, build_network(config), log=None, task="forward").close()  # (ends the denormal flush)
    assert calls == [1]


# An LSTM run on three sequence lengths, then on the first again; prints oneDNN's verbose lines of that last run
# (cache_hit: its primitives came from the cache). The capacity is `set_up_process`'s, made 2 here unless the
# environment sets one.
CACHE_SCRIPT = '''
import torch
from netcompiler.engine import host_memory, session

host_memory.PRIMITIVE_CACHE_CAPACITY = 2
session.set_up_process()  # after importing torch: oneDNN reads the capacity when it builds its first primitive
lstm = torch.nn.LSTM(4, 3)

def run(steps):
    out, _ = lstm(torch.randn(steps, 2, 4))
    out.sum().backward()

for steps in (5, 6, 7):
    run(steps)
with torch.backends.mkldnn.verbose(2):
    run(5)
'''


def primitive_cache_lookups(environment):
    env = {k: v for k, v in os.environ.items() if k != "ONEDNN_PRIMITIVE_CACHE_CAPACITY"}
    run = subprocess.run([sys.executable, "-c", CACHE_SCRIPT], capture_output=True, text=True, timeout=300,
                         env={**env, **environment})
    assert run.returncode == 0, run.stderr
    return {outcome: run.stdout.count(f"create:cache_{outcome}") for outcome in ("hit", "miss")}


def test_the_primitive_cache_is_bounded_unless_the_environment_sets_its_size():
    bounded = primitive_cache_lookups({})
    assert bounded["miss"] > 0 and bounded["hit"] == 0  # 2 entries: the first length's primitives were evicted
    chosen = primitive_cache_lookups({"ONEDNN_PRIMITIVE_CACHE_CAPACITY": "1024"})
    assert chosen["hit"] > 0 and chosen["miss"] == 0


def test_set_up_process_keeps_a_cache_size_the_environment_sets(monkeypatch):
    from netcompiler.engine import host_memory
    from netcompiler.engine.session import set_up_process

    monkeypatch.delenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", raising=False)
    set_up_process()
    assert os.environ["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] == str(host_memory.PRIMITIVE_CACHE_CAPACITY)
    monkeypatch.setenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "7")
    set_up_process()
    assert os.environ["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] == "7"
