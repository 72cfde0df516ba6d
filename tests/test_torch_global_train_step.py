"""`network.global_train_step` in eval strings and config functions on the PyTorch trainer: the updates applied so
far as an int64 scalar tensor, as the TensorFlow trainer gives its step variable (engine/torch_trainer.py)."""

import io

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install -e '.[torch]')")

from netcompiler.config import load_config  # noqa: E402
from netcompiler.emit.model import CompiledNetwork  # noqa: E402
from netcompiler.engine.batching import parse_batching  # noqa: E402
from netcompiler.engine.datasets import make_dataset  # noqa: E402
from netcompiler.engine.feeding import numpy_batches  # noqa: E402
from netcompiler.engine.torch_optimizers import make_torch_optimizer  # noqa: E402
from netcompiler.engine.torch_trainer import TorchTrainer, to_torch  # noqa: E402
from netcompiler.network import build_network  # noqa: E402

CONFIG = '''
backend = "torch"
seen = []
def scale_by_step(x, network):
    step = network.global_train_step
    seen.append((network.train_flag, int(step), str(step.dtype)))
    return x * (1.0 + step)
extern_data = {"data": {"dim": 9}, "classes": {"dim": 2, "sparse": True}}
network = {
    "scaled": {"class": "eval", "from": "data",
               "eval": "self.network.get_config().typed_value('scale_by_step')(source(0), self.network)"},
    "shifted": {"class": "eval", "from": "data", "eval": "source(0) + torch.sqrt(self.network.global_train_step * 1.0)"},
    "output": {"class": "softmax", "from": ["scaled", "shifted"], "loss": "ce", "target": "classes"},
}
'''


def setup(tmp_path, accum=1):
    path = tmp_path / "config.py"
    path.write_text(CONFIG)
    config = load_config(str(path))
    network = build_network(config)
    model = CompiledNetwork(network, backend="torch")
    optimizer = make_torch_optimizer({"optimizer": {"class": "sgd"}, "learning_rate": 0.1}, model.trainable_params)
    trainer = TorchTrainer(model, optimizer, None, log=io.StringIO(), accum_grad_steps=accum)
    dataset = make_dataset({"class": "Task12AXDataset", "num_seqs": 4, "fixed_random_seed": 3}, "train")
    dataset.init_epoch(1)
    inputs, lengths = next(iter(numpy_batches(dataset, ["data", "classes"], parse_batching(batch_size=10000,
                                                                                         max_seqs=4))))
    return config.values["seen"], network, model, trainer, to_torch(inputs), to_torch(lengths), inputs, lengths


def test_two_steps_read_the_updates_applied_so_far(tmp_path):
    seen, network, model, trainer, inputs, lengths, raw_inputs, raw_lengths = setup(tmp_path)
    for _ in range(2):
        trainer.train_step(inputs, lengths)
    assert seen == [(True, 0, "torch.int64"), (True, 1, "torch.int64")]
    assert trainer.step_count == 2
    # the value is what the layers compute with: after 2 updates "scaled" is x * 3 and "shifted" x + sqrt(2)
    ctx = model.forward(inputs, lengths, training=False)
    scaled = ctx.value(network.layers["scaled"]).raw.numpy()
    shifted = ctx.value(network.layers["shifted"]).raw.numpy()
    assert seen[-1] == (False, 2, "torch.int64")
    for b, n in enumerate(raw_lengths["data"]):
        np.testing.assert_allclose(scaled[b, :n], raw_inputs["data"][b, :n] * 3.0, rtol=1e-6)
        np.testing.assert_allclose(shifted[b, :n], raw_inputs["data"][b, :n] + np.sqrt(2.0), rtol=1e-6)


def test_with_accumulation_the_step_counts_updates_not_batches(tmp_path):
    seen, _, _, trainer, inputs, lengths, _, _ = setup(tmp_path, accum=2)
    for _ in range(4):
        trainer.train_step(inputs, lengths)
    assert [step for _, step, _ in seen] == [0, 0, 1, 1]


def test_a_restored_or_carried_over_count_is_what_the_layers_read(tmp_path):
    seen, _, _, trainer, inputs, lengths, _, _ = setup(tmp_path)
    trainer.load_state_dict({"step_count": 41})  # a checkpoint's runner state
    trainer.train_step(inputs, lengths)
    trainer.step_count = 7  # as a new runner takes over the count (the network changed)
    trainer.train_step(inputs, lengths)
    assert [step for _, step, _ in seen] == [41, 7]
