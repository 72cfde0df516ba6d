"""A compile-net run keeps freed host memory for the next step (engine/host_memory.py, set by `Session`): the
PyTorch train steps of a BLSTM after the first few fault no pages in, where with glibc's defaults each faults in
tens of MB again. Each case runs in a process of its own, since malloc's settings are the process's."""

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
    assert page_faults_per_step("default") > 1000  # glibc's defaults give memory back between the steps
    assert page_faults_per_step("keep") < 100


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
    session.Session(config, build_network(config), log=None, task="forward")
    assert calls == [1]
