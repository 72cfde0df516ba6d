"""The PyTorch trainer keeps freed host memory for the next step (engine/host_memory.py): the train steps of a
BLSTM after the first few fault no pages in, where with glibc's defaults each faults in tens of MB again. Each
case runs in a process of its own, since malloc's settings are the process's."""

import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("torch", reason="PyTorch is not installed (pip install -e '.[torch]')")

# Prints the median page faults of 5 train steps of a BLSTM (2 x 128 per direction, 500 classes, 16 x 200
# frames) after 3 warm-up steps; with argument "default" the trainer leaves malloc's settings alone.
SCRIPT = '''
import resource, sys
import numpy as np
import torch
from netcompiler.builtin import load_builtin_layers
from netcompiler.config import Config
from netcompiler.emit.model import CompiledNetwork
from netcompiler.engine import torch_trainer
from netcompiler.engine.torch_optimizers import make_torch_optimizer
from netcompiler.network import build_network

if sys.argv[1] == "default":
    torch_trainer.keep_freed_host_memory = lambda: False
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
    assert page_faults_per_step("trainer") < 100


def test_forward_and_search_keep_freed_memory_too(monkeypatch):
    from netcompiler.engine import torch_trainer

    calls = []
    monkeypatch.setattr(torch_trainer, "keep_freed_host_memory", lambda: calls.append(1))
    run = torch_trainer.inference_fn(lambda inputs, lengths: inputs["data"] * 2)
    assert calls == [1]
    assert run({"data": np.ones(3, np.float32)}, {}).tolist() == [2.0, 2.0, 2.0]
