"""A compile-net run maps PyTorch's large tensors in huge pages and keeps a heap for the smaller ones
(engine/host_memory.py, set by `Session`): the PyTorch train steps of a BLSTM fault a few hundred pages in, where
with glibc's defaults and 4 KB pages each faults in tens of thousands (its LSTM workspaces, mapped and unmapped by
malloc in every step); and oneDNN's primitive cache is bounded (unless the environment sizes it). Each case runs in
a process of its own, since PyTorch reads the variable at its first allocation and oneDNN its cache size at its
first primitive."""

import os
import subprocess
import sys

import pytest

from netcompiler.engine import host_memory

pytest.importorskip("torch", reason="PyTorch is not installed (pip install -e '.[torch]')")

# Prints the median page faults of 5 train steps of a BLSTM (2 x 128 per direction, 500 classes, 16 x 200
# frames) after 3 warm-up steps; with argument "set-up" after `set_up_process`, as compile-net runs.
SCRIPT = '''
import resource, sys
import numpy as np
import torch
from netcompiler.builtin import load_builtin_layers
from netcompiler.config import Config
from netcompiler.emit.model import CompiledNetwork
from netcompiler.engine import torch_trainer
from netcompiler.engine.session import set_up_process
from netcompiler.engine.torch_optimizers import make_torch_optimizer
from netcompiler.network import build_network

if sys.argv[1] == "set-up":
    set_up_process()
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


def environment_without(*names):
    """This process's environment without the variables `names` (an earlier test's set_up_process may have set
    them here)."""
    return {key: value for key, value in os.environ.items() if key not in names}


def page_faults_per_step(case):
    run = subprocess.run([sys.executable, "-c", SCRIPT, case], capture_output=True, text=True, timeout=300,
                         env=environment_without(host_memory.HUGE_PAGES_VARIABLE))
    assert run.returncode == 0, run.stderr
    return int(run.stdout.split()[-1])


def transparent_huge_pages():
    """The kernel's transparent huge page mode (always, madvise or never), None where it does not say."""
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            return f.read().split("[")[1].split("]")[0]
    except (OSError, IndexError):
        return None


@pytest.mark.skipif(transparent_huge_pages() not in ("always", "madvise"), reason="no transparent huge pages")
def test_train_steps_fault_fewer_pages_in():
    default = page_faults_per_step("default")
    assert default > 5000  # 4 KB pages: the LSTM workspaces fault in again in every step (~10 thousand here)
    # set up: 0.5-0.8 thousand here (huge pages for the mapped blocks, a heap kept for the smaller ones)
    assert page_faults_per_step("set-up") < default // 5


def torch_config(folder):
    """A config file of a one-layer network on backend torch, in `folder`."""
    path = folder / "c.py"
    path.write_text('backend = "torch"\nextern_data = {"data": {"dim": 3}, "classes": {"dim": 4, "sparse": True}}\n'
                    'network = {"output": {"class": "softmax", "from": "data", "loss": "ce"}}\n')
    return path


def test_every_compile_net_run_sets_up_its_process(monkeypatch, tmp_path):
    from netcompiler.config import load_config
    from netcompiler.engine import session
    from netcompiler.network import build_network

    calls = []
    monkeypatch.setattr(session, "set_up_host_memory", lambda: calls.append(1))
    path = torch_config(tmp_path)
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
    run = subprocess.run([sys.executable, "-c", CACHE_SCRIPT], capture_output=True, text=True, timeout=300,
                         env={**environment_without("ONEDNN_PRIMITIVE_CACHE_CAPACITY"), **environment})
    assert run.returncode == 0, run.stderr
    return {outcome: run.stdout.count(f"create:cache_{outcome}") for outcome in ("hit", "miss")}


def test_the_primitive_cache_is_bounded_unless_the_environment_sets_its_size():
    bounded = primitive_cache_lookups({})
    assert bounded["miss"] > 0 and bounded["hit"] == 0  # 2 entries: the first length's primitives were evicted
    chosen = primitive_cache_lookups({"ONEDNN_PRIMITIVE_CACHE_CAPACITY": "1024"})
    assert chosen["hit"] > 0 and chosen["miss"] == 0


@pytest.mark.parametrize("variable, ours", [
    ("ONEDNN_PRIMITIVE_CACHE_CAPACITY", str(host_memory.PRIMITIVE_CACHE_CAPACITY)),
    (host_memory.HUGE_PAGES_VARIABLE, "1")])
def test_set_up_process_keeps_what_the_environment_sets(monkeypatch, variable, ours):
    from netcompiler.engine.session import set_up_process

    monkeypatch.delenv(variable, raising=False)
    set_up_process()
    assert os.environ[variable] == ours
    monkeypatch.setenv(variable, "0")
    set_up_process()
    assert os.environ[variable] == "0"


# A torch compile-net session on a small config, then five tensors of 3 MB: prints how many start on a 4 KB page
# boundary (PyTorch's alignment for huge-page tensors; otherwise 64 bytes).
SESSION_SCRIPT = '''
import sys
import torch
from netcompiler.builtin import load_builtin_layers
from netcompiler.config import load_config
from netcompiler.engine.session import Session
from netcompiler.network import build_network

load_builtin_layers()
config = load_config(sys.argv[1])
Session(config, build_network(config), log=None, task="forward").close()
print(sum(torch.empty(3 * 2 ** 18 + 999 * i).data_ptr() % 4096 == 0 for i in range(5)))
'''


def test_a_torch_session_allocates_in_huge_pages(tmp_path):
    """Session sets the variable before the model's first tensor (PyTorch reads it at its first allocation)."""
    path = torch_config(tmp_path)
    run = subprocess.run([sys.executable, "-c", SESSION_SCRIPT, str(path)], capture_output=True, text=True,
                         timeout=300, env=environment_without(host_memory.HUGE_PAGES_VARIABLE))
    assert run.returncode == 0, run.stderr
    assert run.stdout.split()[-1] == "5"
