"""Training layer-dict networks on PyTorch (`backend = "torch"`): the step runner, optimizers, clipping,
gradient accumulation, checkpoints, resume, eval/forward, and the same numbers as on TensorFlow.

Fast tests run the 12AX demo network in-process on a few hundred sequences; the one marked slow runs
`compile-net ... ++backend torch` in a subprocess on the README demo's own settings.
"""

import ast
import copy
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install -e '.[torch]')")
tf = pytest.importorskip("tensorflow")

from netcompiler.builtin import load_builtin_layers  # noqa: E402
from netcompiler.emit.model import CompiledNetwork  # noqa: E402
from netcompiler.engine.batching import parse_batching  # noqa: E402
from netcompiler.engine.datasets import make_dataset  # noqa: E402
from netcompiler.engine.epochs import accum_grad_steps, format_scores  # noqa: E402
from netcompiler.engine.feeding import numpy_batches  # noqa: E402
from netcompiler.engine.main import run_task  # noqa: E402
from netcompiler.engine.optimizers import clip_gradients, make_optimizer  # noqa: E402
from netcompiler.engine.torch_checkpoints import TorchCheckpointManager  # noqa: E402
from netcompiler.engine.torch_optimizers import (  # noqa: E402
    clip_torch_gradients, make_torch_optimizer, optimizer_step, process_gradients_fn, set_torch_learning_rate,
)
from netcompiler.engine.torch_trainer import TorchTrainer, to_torch  # noqa: E402
from netcompiler.engine.trainer import Trainer  # noqa: E402
from netcompiler.errors import CheckpointError, ConfigError, InvalidOptionError, UnknownOptionError  # noqa: E402
from netcompiler.network import build_from_dict  # noqa: E402

load_builtin_layers()
REPO = Path(__file__).resolve().parent.parent
EXTERN = {"data": {"dim": 9}, "classes": {"dim": 2, "sparse": True}}
NETWORK = {
    "lstm": {"class": "rec", "unit": "lstm", "n_out": 10, "from": "data"},
    "output": {"class": "softmax", "loss": "ce", "from": "lstm", "target": "classes"},
}
EPOCH_LINE = re.compile(r"^epoch (\d+)  train ce \d+\.\d{3} fer \d+\.\d{3}  dev ce (\d+\.\d{3}) fer (\d+\.\d{3})"
                        r"  lr \S+  \d+:\d{2}:\d{2}$")

CONFIG = """
backend = "torch"
task = "train"
train = {"class": "Task12AXDataset", "num_seqs": 200}
dev = {"class": "Task12AXDataset", "num_seqs": 30, "fixed_random_seed": 1}
extern_data = %r
batch_size = 2000
max_seqs = 10
network = %r
optimizer = {"class": "adam"}
learning_rate = 0.01
num_epochs = 2
model = %r
torch_num_threads = 1  # small networks: one thread is fastest, and much faster on a busy machine
"""


@pytest.fixture(autouse=True, scope="module")
def one_torch_thread():
    """As the configs here say (torch_num_threads = 1), also for the steps run directly."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def write_config(tmp_path, **extra):
    prefix = str(tmp_path / "out" / "model")
    text = CONFIG % (EXTERN, NETWORK, prefix) + "".join(f"{k} = {v!r}\n" for k, v in extra.items())
    path = tmp_path / "config.py"
    path.write_text(text)
    return str(path), prefix


def run(path, *overrides, task=None):
    log = io.StringIO()
    assert run_task(path, list(overrides), task=task, log=log) == 0
    return log.getvalue()


def epoch_lines(text):
    return [EPOCH_LINE.match(line) for line in text.splitlines() if line.startswith("epoch ")]


def batches(num_seqs=12, max_seqs=4, seed=3):
    """12AX batches (NumPy), as the feeding makes them."""
    dataset = make_dataset({"class": "Task12AXDataset", "num_seqs": num_seqs, "fixed_random_seed": seed}, "train")
    dataset.init_epoch(1)
    return list(numpy_batches(dataset, ["data", "classes"], parse_batching(batch_size=10000, max_seqs=max_seqs)))


def concatenated(parts):
    """One batch of all sequences of `parts`, padded with garbage (the losses must mask it)."""
    rng = np.random.RandomState(0)
    time = max(inputs["data"].shape[1] for inputs, _ in parts)
    inputs, lengths = {}, {}
    for key in ("data", "classes"):
        rows = []
        for part_inputs, _ in parts:
            value = part_inputs[key]
            filler = rng.randint(0, 2, size=value.shape[:1] + (time - value.shape[1],) + value.shape[2:])
            rows.append(np.concatenate([value, filler.astype(value.dtype)], axis=1) if time > value.shape[1]
                        else value)
        inputs[key] = np.concatenate(rows)
        lengths[key] = np.concatenate([part_lengths[key] for _, part_lengths in parts])
    return inputs, lengths


def torch_model(seed=0):
    return CompiledNetwork(build_from_dict(NETWORK, EXTERN), seed=seed, backend="torch")


def tf_model(seed=0):
    return CompiledNetwork(build_from_dict(NETWORK, EXTERN), seed=seed, backend="tensorflow")


def values(model):
    return {name: (p.detach().numpy() if torch.is_tensor(p) else p.numpy()).copy() for name, p in model.params.items()}


# --------------------------------------------------------------------------------------------- end to end

def test_config_backend_torch_trains_evaluates_forwards_and_resumes(tmp_path):
    path, prefix = write_config(tmp_path)
    text = run(path)
    lines = epoch_lines(text)
    assert [m and int(m[1]) for m in lines] == [1, 2], text
    dev_ce = [float(m[2]) for m in lines]
    assert dev_ce[1] < dev_ce[0], text
    assert os.path.exists(prefix + ".001.pt") and os.path.exists(prefix + ".002.pt.meta.json")
    assert not os.path.exists(prefix + ".002.index")  # no TensorFlow checkpoint

    # eval reads the newest checkpoint: the same dev scores as training printed for epoch 2
    evaluated = run(path, task="eval").strip().splitlines()[-1]
    assert evaluated.startswith(prefix + ".002.pt  dev ce ")
    assert f"dev ce {lines[1][2]} fer {lines[1][3]}" in evaluated

    # forward writes one sequence per dev sequence, the network's softmax output of the checkpoint
    output = str(tmp_path / "fwd.hdf")
    run(path, "++output_file", output, task="forward")
    import h5py

    with h5py.File(output, "r") as f:
        lengths = f["seqLengths"][:, 0]
        probs = f["inputs"][:]
    assert len(lengths) == 30
    np.testing.assert_allclose(probs.sum(axis=-1), 1.0, rtol=1e-5)

    # a second run continues at epoch 3 from the saved parameters
    resumed = run(path, "++num_epochs", "3")
    assert f"resuming after epoch 2 from {prefix}.002.pt" in resumed
    assert [int(m[1]) for m in epoch_lines(resumed)] == [3]


def test_damaged_checkpoint_is_named_with_the_previous_one(tmp_path):
    path, prefix = write_config(tmp_path, num_epochs=2)
    run(path)
    with open(prefix + ".002.pt", "r+b") as f:
        f.truncate(200)
    with pytest.raises(CheckpointError) as info:
        run(path, task="eval")
    message = str(info.value)
    assert f"checkpoint '{prefix}.002.pt' cannot be read: the file is damaged or truncated" in message
    assert f"the previous checkpoint '{prefix}.001.pt' is intact: use it with ++load {prefix}.001.pt" in message
    with pytest.raises(CheckpointError, match=re.escape(f"delete (or move away) the damaged checkpoint's files "
                                                        f"'{prefix}.002.pt' and '{prefix}.002.pt.meta.json'")):
        run(path, "++num_epochs", "3")
    assert "dev ce" in run(path, "++load", prefix + ".001.pt", task="eval")


def test_import_model_train_epoch1_reads_a_torch_checkpoint(tmp_path):
    path, prefix = write_config(tmp_path, num_epochs=1)
    first = epoch_lines(run(path))[0]
    other = str(tmp_path / "other" / "model")
    text = run(path, "++model", other, "++import_model_train_epoch1", prefix + ".001", "++num_epochs", "1",
               "++learning_rate", "0.0")  # no change: epoch 1 of the copy scores what the original's ended with
    assert f"initialised the parameters from {prefix}.001" in text
    copied = epoch_lines(text)[0]
    assert (copied[2], copied[3]) == (first[2], first[3])
    with pytest.raises(CheckpointError, match="does not exist"):
        run(path, "++model", other + "2", "++import_model_train_epoch1", prefix + ".009")


def test_accum_grad_multiple_step_from_the_config_halves_the_updates(tmp_path):
    path, prefix = write_config(tmp_path, num_epochs=1, max_seqs=10)
    run(path)
    run(path, "++model", prefix + "-accum", "++accum_grad_multiple_step", "2")
    updates = [torch.load(p + ".001.pt", weights_only=True)["step"]["step_count"] for p in (prefix, prefix + "-accum")]
    assert updates[0] >= 10 and updates[1] == (updates[0] + 1) // 2, updates  # 200 sequences, 10 per batch
    with pytest.raises(InvalidOptionError, match="accum_grad_multiple_step"):
        run(path, "++accum_grad_multiple_step", "0")


def test_backend_choice_errors_and_notices(tmp_path, capsys):
    path, prefix = write_config(tmp_path, tf_session_opts={"log_device_placement": False}, num_epochs=1)
    with pytest.raises(ConfigError, match="unknown backend 'torhc'.*did you mean 'torch'"):
        run(path, "++backend", "torhc")
    run(path)
    assert "config key 'tf_session_opts' is a TensorFlow setting; it has no effect with backend 'torch'" \
        in capsys.readouterr().err
    # the torch checkpoints are not read as TensorFlow's, nor silently trained over from scratch
    with pytest.raises(ConfigError, match="has checkpoints of backend 'torch'.*set backend = 'torch'"):
        run(path, "++backend", "tensorflow", "++num_epochs", "2")


def test_configure_torch_flushes_denormals_as_tensorflow_does():
    """A fresh process: the flush is a thread's floating-point mode, which this test process may have set already.
    The flush holds in threads started afterwards (PyTorch's intra-op threads)."""
    code = """
import threading
import numpy as np
import torch
from netcompiler.engine.torch_trainer import configure_torch

tiny = torch.tensor([1e-40, 1e-30])
print((tiny * 1.0).tolist())
configure_torch(1)
print((tiny * 1.0).tolist())
out = []
thread = threading.Thread(target=lambda: out.append((tiny * 1.0).tolist()))
thread.start()
thread.join()
print(out[0])
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    before, after, in_thread = (ast.literal_eval(line) for line in result.stdout.split("\n")[:3])
    assert before[0] != 0.0 and before[1] == pytest.approx(1e-30, rel=1e-6)
    assert after == [0.0, pytest.approx(1e-30, rel=1e-6)] and in_thread == after


def test_a_run_in_this_process_gives_the_floating_point_mode_back(tmp_path):
    """compile-net flushes denormals during a torch run (above); a process that goes on after `run_task` (a notebook,
    these tests) gets its mode back, so that NumPy and other libraries keep their subnormal floats."""
    from netcompiler.engine.torch_trainer import denormals_flushed

    torch.set_flush_denormal(False)
    path, _prefix = write_config(tmp_path, num_epochs=1)
    run(path)
    assert not denormals_flushed()
    assert float(np.float32(1e-40) * np.float32(2.0)) == pytest.approx(2e-40, rel=1e-3)


def test_an_extern_data_dim_the_data_do_not_have_is_a_config_error_before_any_step(tmp_path):
    """As the TensorFlow feed: the numpy batches of the torch trainer are checked against extern_data first
    (without the check, the step failed inside the network with a template mismatch of layer 'data')."""
    path, prefix = write_config(tmp_path, extern_data={"data": {"dim": 7}, "classes": {"dim": 2, "sparse": True}})
    with pytest.raises(ConfigError, match=r"dataset 'train': data key 'data' has frames of shape \(9,\) in the "
                                          r"dataset, but the network expects \(7,\) -- make extern_data\['data'\]"):
        run(path)
    assert not [name for name in os.listdir(os.path.dirname(prefix)) if name.endswith(".pt")]  # no step taken


# --------------------------------------------------------------------------------------------- resume

def train_epoch(trainer, epoch):
    dataset = make_dataset({"class": "Task12AXDataset", "num_seqs": 40}, "train")
    return trainer.train_epoch(dataset, epoch, None)


def test_restored_state_continues_exactly_like_the_uninterrupted_run(tmp_path):
    batching = parse_batching(batch_size=2000, max_seqs=8)

    def setup(seed):
        model = torch_model(seed)
        optimizer = make_torch_optimizer({"optimizer": {"class": "adam"}, "learning_rate": 0.01},
                                         model.trainable_params)
        trainer = TorchTrainer(model, optimizer, batching, log=io.StringIO())
        return model, optimizer, trainer, {"model": model.params, "optimizer": optimizer, "step": trainer}

    model, optimizer, trainer, state = setup(0)
    train_epoch(trainer, 1)
    manager = TorchCheckpointManager(str(tmp_path / "model"))
    saved_path = manager.save(1, state, {"learning_rate": 0.01})
    saved = values(model)
    with pytest.raises(CheckpointError, match="never overwritten"):
        manager.save(1, state)

    other, other_optimizer, other_trainer, other_state = setup(7)  # different initial parameters
    assert any(not np.array_equal(saved[k], v) for k, v in values(other).items())
    epoch, extra = TorchCheckpointManager(str(tmp_path / "model")).restore_latest(other_state)
    assert (epoch, extra) == (1, {"learning_rate": 0.01}) and manager.latest_path() == saved_path
    assert all(np.array_equal(saved[k], v) for k, v in values(other).items())
    assert other_trainer.step_count == trainer.step_count > 0

    train_epoch(trainer, 2)
    train_epoch(other_trainer, 2)
    for name, value in values(model).items():
        np.testing.assert_array_equal(values(other)[name], value, err_msg=name)  # optimizer moments restored too


def test_restore_names_parameters_that_differ(tmp_path):
    model = torch_model()
    manager = TorchCheckpointManager(str(tmp_path / "model"))
    manager.save(1, {"model": model.params})
    wider = CompiledNetwork(build_from_dict(dict(NETWORK, lstm=dict(NETWORK["lstm"], n_out=12)), EXTERN),
                            backend="torch")
    with pytest.raises(CheckpointError) as info:
        manager.restore(manager.latest_path(), {"model": wider.params})
    message = str(info.value)
    assert "does not match the network" in message
    assert "lstm/rec/W_re: checkpoint (10, 40), network (12, 48)" in message
    renamed = dict(wider.params)
    renamed["extra/W"] = renamed.pop("output/b")
    with pytest.raises(CheckpointError, match=r"missing in the checkpoint: extra/W.*network does not have: output/b"):
        manager.restore(manager.latest_path(), {"model": renamed})


# --------------------------------------------------------------------------------------------- optimizers

OPTIMIZER_CASES = [
    {"optimizer": {"class": "adam"}},
    {"optimizer": {"class": "adam", "beta1": 0.5, "beta2": 0.9, "epsilon": 1e-8}},
    {"optimizer": {"class": "adam", "weight_decay": 0.1}},
    {"optimizer": {"class": "adamw", "weight_decay": 0.05, "amsgrad": True}},
    {"optimizer": {"class": "nadam", "epsilon": 1e-7}},
    {"optimizer": {"class": "sgd"}},
    {"optimizer": {"class": "momentum", "momentum": 0.9, "use_nesterov": True}},
    {"momentum": 0.5},
    {"optimizer": {"class": "rmsprop", "decay": 0.8, "momentum": 0.3, "epsilon": 1e-6}},
    {"optimizer": {"class": "rmsprop", "centered": True}},
    {"optimizer": {"class": "adagrad", "epsilon": 1e-6}},
    {"optimizer": {"class": "adadelta", "rho": 0.9, "epsilon": 1e-6}},
]


@pytest.mark.parametrize("config", OPTIMIZER_CASES, ids=lambda c: repr(c)[:60])
def test_optimizer_steps_match_tensorflow(config):
    """Three steps with the same gradients move the parameters the same way on both backends."""
    rng = np.random.RandomState(1)
    start = rng.randn(3, 4).astype("float32")
    grads = [rng.randn(3, 4).astype("float32") for _ in range(3)]
    config = dict(config, learning_rate=0.05)
    tf_var = tf.Variable(start)
    tf_opt = make_optimizer(config)
    param = torch.nn.Parameter(torch.from_numpy(start.copy()))
    torch_opt = make_torch_optimizer(config, [param])
    for grad in grads:
        tf_opt.apply_gradients([(tf.constant(grad), tf_var)])
        param.grad = torch.from_numpy(grad)
        torch_opt.step()
    np.testing.assert_allclose(param.detach().numpy(), tf_var.numpy(), rtol=2e-4, atol=2e-6)
    assert not np.allclose(param.detach().numpy(), start)


@pytest.mark.parametrize("config", OPTIMIZER_CASES, ids=lambda c: repr(c)[:60])
def test_the_trainers_update_function_updates_as_optimizer_step_does(config):
    """`optimizer_step` (the direct fused kernels for Adam and AdamW) leaves parameters and state exactly as
    ``optimizer.step`` does, over updates where one parameter has no gradient, a new one gets its first, and the
    rate changes; only updates that make state go through ``step``."""
    rng = np.random.RandomState(3)
    start = [rng.randn(3, 4).astype("float32"), rng.randn(5).astype("float32")]
    grads = [[rng.randn(*a.shape).astype("float32") for a in start] for _ in range(4)]
    grads[0][1] = None  # the second parameter's state is made at the second update
    sides = []
    for _ in range(2):
        params = [torch.nn.Parameter(torch.from_numpy(a.copy())) for a in start]
        sides.append((params, make_torch_optimizer(dict(config, learning_rate=0.05), params)))
    (params, reference), (params_b, optimizer) = sides
    update, calls = optimizer_step(optimizer), []
    step = optimizer.step
    optimizer.step = lambda: [calls.append(1), step()][1]
    for i, step_grads in enumerate(grads):
        if i == 2:
            set_torch_learning_rate(reference, 0.02)
            set_torch_learning_rate(optimizer, 0.02)
        for ps in (params, params_b):
            for p, g in zip(ps, step_grads):
                p.grad = None if g is None else torch.from_numpy(g)
        reference.step()
        update()
    for p, q in zip(params, params_b):
        assert torch.equal(p, q)
        for key, value in reference.state[p].items():
            assert torch.equal(value, optimizer.state[q][key]), key
    direct = config.get("optimizer", {}).get("class") in ("adam", "adamw")
    assert len(calls) == (2 if direct else 0)


@pytest.mark.parametrize("config", [{"optimizer": {"class": "adam"}}, {"optimizer": {"class": "adamw"}}])
def test_the_update_function_uses_state_loaded_after_it_was_made(config):
    """A resumed run loads the optimizer's state into the optimizer the trainer already holds: the direct update
    must then use the loaded state and rates, not those it saw before."""
    rng = np.random.RandomState(4)
    start = rng.randn(3, 4).astype("float32")
    grads = [rng.randn(3, 4).astype("float32") for _ in range(5)]
    sides = []
    for _ in range(2):
        param = torch.nn.Parameter(torch.from_numpy(start.copy()))
        sides.append((param, make_torch_optimizer(dict(config, learning_rate=0.05), [param])))
    (p_a, saved), (p_b, resumed) = sides
    update = optimizer_step(resumed)
    for grad in grads[:2]:  # the resumed side's own steps before it loads the saved state
        p_b.grad = torch.from_numpy(grad)
        update()
    for grad in grads[2:4]:
        p_a.grad = torch.from_numpy(grad)
        saved.step()
    set_torch_learning_rate(saved, 0.01)
    resumed.load_state_dict(copy.deepcopy(saved.state_dict()))  # as from a checkpoint file: no shared tensors
    with torch.no_grad():
        p_b.copy_(p_a)
    p_a.grad, p_b.grad = torch.from_numpy(grads[4]), torch.from_numpy(grads[4])
    saved.step()
    update()
    assert torch.equal(p_a, p_b)
    for key, value in saved.state[p_a].items():
        assert torch.equal(value, resumed.state[p_b][key]), key


def test_optimizer_errors_are_the_tensorflow_sides():
    for config in ({"optimizer": {"class": "adam", "epsilom": 0.1}}, {"optimizer": {"class": "adma"}},
                   {"optimizer": {"class": "momentum"}}, {"optimizer": {"class": "adam", "learning_rate": 1}}):
        with pytest.raises(ConfigError) as on_tf:
            make_optimizer(config)
        with pytest.raises(ConfigError) as on_torch:
            make_torch_optimizer(config, [torch.nn.Parameter(torch.zeros(2))])
        assert type(on_torch.value) is type(on_tf.value) and str(on_torch.value) == str(on_tf.value)
    with pytest.raises(UnknownOptionError, match="did you mean 'epsilon'"):
        make_torch_optimizer({"optimizer": {"class": "adam", "epsilom": 0.1}}, [])


def test_learning_rate_is_set_per_epoch_with_its_multiplier():
    param = torch.nn.Parameter(torch.zeros(2))
    optimizer = make_torch_optimizer({"optimizer": {"class": "sgd", "learning_rate_multiplier": 2.0},
                                      "learning_rate": 0.1}, [param])
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.2)
    set_torch_learning_rate(optimizer, 0.25)
    param.grad = torch.ones(2)
    optimizer.step()
    np.testing.assert_allclose(param.detach().numpy(), [-0.5, -0.5])


@pytest.mark.parametrize("clip", [
    {"value": 0.3, "norm": 0.0, "global_norm": 0.0},
    {"value": 0.0, "norm": 1.0, "global_norm": 0.0},
    {"value": 0.0, "norm": 0.0, "global_norm": 1.5},
    {"value": 0.5, "norm": 0.8, "global_norm": 1.0},
])
def test_gradient_clipping_matches_tensorflow(clip):
    rng = np.random.RandomState(2)
    grads = [rng.randn(4, 3).astype("float32") * 2, None, rng.randn(5).astype("float32")]
    expected = clip_gradients([None if g is None else tf.constant(g) for g in grads], clip)
    got = clip_torch_gradients([None if g is None else torch.from_numpy(g) for g in grads], clip)
    assert got[1] is None
    for want, have, raw in zip(expected, got, grads):
        if raw is not None:
            np.testing.assert_allclose(have.numpy(), want.numpy(), rtol=1e-5, atol=1e-7)
    assert any(not np.allclose(h.numpy(), g) for h, g in zip(got, grads) if g is not None)


def test_clipping_nan_filter_and_noise_from_the_config():
    params = [torch.nn.Parameter(torch.zeros(3)), torch.nn.Parameter(torch.zeros(2))]
    params[0].grad = torch.tensor([3.0, float("nan"), -4.0])
    params[1].grad = torch.tensor([float("inf"), 0.5])
    process_gradients_fn({"gradient_clip": 1.0, "gradient_nan_inf_filter": True})(params)
    np.testing.assert_array_equal(params[0].grad.numpy(), [1.0, 0.0, -1.0])
    np.testing.assert_array_equal(params[1].grad.numpy(), [1.0, 0.5])  # clipped to 1 before the filter
    assert process_gradients_fn({}) is None
    torch.manual_seed(0)
    noisy = torch.nn.Parameter(torch.zeros(1000))
    noisy.grad = torch.zeros(1000)
    process_gradients_fn({"gradient_noise": 0.1})([noisy])
    noise = noisy.grad.numpy()
    assert 0.07 < noise.std() < 0.1 and np.abs(noise).max() <= 0.2 + 1e-6  # truncated at 2 stddev


# --------------------------------------------------------------------------------------------- steps

def test_nonfinite_objective_skips_the_update():
    model = torch_model()
    trainer = TorchTrainer(model, make_torch_optimizer({"optimizer": "sgd", "learning_rate": 1.0},
                                                       model.trainable_params), None, log=io.StringIO())
    inputs, lengths = batches()[0]
    before = values(model)
    bad = dict(inputs, data=np.where(np.arange(9) == 3, np.nan, inputs["data"]).astype("float32"))
    results, objective = trainer.train_step(*map(to_torch, (bad, lengths)))
    assert not np.isfinite(float(objective)) and trainer.step_count == 0
    assert all(np.array_equal(before[k], v) for k, v in values(model).items())
    trainer.train_step(*map(to_torch, (inputs, lengths)))
    assert trainer.step_count == 1 and any(not np.array_equal(before[k], v) for k, v in values(model).items())


def test_maximize_grad_norm_gradients_match_tensorflow():
    """RETURNN's maximize_grad_norm: the gradient of -f * |grad| is added, a second-order term (TF's own test
    checks it against finite differences)."""
    inputs, lengths = batches()[0]
    torch_net, tf_net = torch_model(), tf_model()
    trainer = TorchTrainer(torch_net, None, None, maximize_grad_norm=0.5)
    losses, objective = trainer._losses(*map(to_torch, (inputs, lengths)), training=True)
    trainer._backward(objective)
    got = [p.grad.numpy() for p in torch_net.trainable_params]
    want = Trainer(tf_net, None, None, maximize_grad_norm=0.5)._gradients(inputs, lengths, tf_net.trainable_params)[2]
    plain = Trainer(tf_net, None, None)._gradients(inputs, lengths, tf_net.trainable_params)[2]
    for have, expected, base in zip(got, want, plain):
        np.testing.assert_allclose(have, tf.convert_to_tensor(expected).numpy(), rtol=2e-3, atol=1e-5)
    assert any(not np.allclose(e.numpy(), tf.convert_to_tensor(b).numpy(), atol=1e-5) for e, b in zip(want, plain))


def _torch_run(parts, accum):
    model = torch_model()
    optimizer = make_torch_optimizer({"optimizer": "adam", "learning_rate": 0.01}, model.trainable_params)
    trainer = TorchTrainer(model, optimizer, None, log=io.StringIO(), accum_grad_steps=accum)
    for inputs, lengths in parts:
        trainer.train_step(to_torch(inputs), to_torch(lengths))
    trainer.flush()
    return values(model), trainer.step_count


def _tf_run(parts, accum):
    model = tf_model()
    optimizer = make_optimizer({"optimizer": "adam", "learning_rate": 0.01})
    trainer = Trainer(model, optimizer, None, log=io.StringIO(), accum_grad_steps=accum)
    for inputs, lengths in parts:
        trainer.train_step(inputs, lengths)
    trainer.flush()
    return values(model), int(trainer.step_count.numpy())


@pytest.mark.parametrize("runner", [_torch_run, pytest.param(_tf_run, marks=pytest.mark.slow)],
                         ids=["torch", "tensorflow"])  # TensorFlow: 4 traced train steps, ~10-20 s
def test_accum_grad_multiple_step_equals_one_step_on_the_joined_batch(runner):
    parts = batches(num_seqs=6, max_seqs=3)[:2]
    assert len(parts) == 2 and parts[0][0]["data"].shape[1] != parts[1][0]["data"].shape[1]
    accumulated, steps = runner(parts, accum=2)
    joined, joined_steps = runner([concatenated(parts)], accum=1)
    separate, separate_steps = runner(parts, accum=1)
    assert (steps, joined_steps, separate_steps) == (1, 1, 2)
    for name, value in joined.items():
        np.testing.assert_allclose(accumulated[name], value, rtol=1e-4, atol=1e-6, err_msg=name)
    assert any(not np.allclose(separate[k], v, atol=1e-6) for k, v in joined.items())
    # three batches with N = 2: one full update and the epoch-end flush of the third batch's gradients
    _, steps = runner(batches(num_seqs=9, max_seqs=3), accum=2)
    assert steps == 2


def test_accum_grad_multiple_step_setting_is_checked():
    assert accum_grad_steps(None) == 1 and accum_grad_steps(4) == 4
    for bad in (0, 1.5, "2", True):
        with pytest.raises(InvalidOptionError, match="accum_grad_multiple_step"):
            accum_grad_steps(bad)


def test_same_initial_parameters_and_first_step_as_tensorflow():
    torch_net, tf_net = torch_model(seed=5), tf_model(seed=5)
    start = values(tf_net)
    for name, value in values(torch_net).items():
        np.testing.assert_array_equal(value, start[name], err_msg=name)
    inputs, lengths = batches()[0]
    torch_trainer = TorchTrainer(torch_net, make_torch_optimizer({"adam": True, "learning_rate": 0.01},
                                                                 torch_net.trainable_params), None)
    tf_trainer = Trainer(tf_net, make_optimizer({"adam": True, "learning_rate": 0.01}), None)
    torch_results, torch_objective = torch_trainer.train_step(to_torch(inputs), to_torch(lengths))
    tf_results, tf_objective = tf_trainer.train_step(inputs, lengths)
    np.testing.assert_allclose(float(torch_objective), float(tf_objective), rtol=1e-5)
    assert float(torch_results["output"][2]) == float(tf_results["output"][2]) == lengths["classes"].sum()
    after = values(tf_net)
    for name, value in values(torch_net).items():
        np.testing.assert_allclose(value, after[name], rtol=1e-4, atol=1e-6, err_msg=name)
        assert not np.array_equal(value, start[name])
    names = torch_net.loss_names()
    assert names == tf_net.loss_names() == ({"output": "ce"}, {"output": "fer"})
    assert format_scores("train", _scores(torch_results), *names) == format_scores("train", _scores(tf_results), *names)


def _scores(results):
    from netcompiler.engine.epochs import Scores

    scores = Scores()
    scores.add(results)
    return scores


# --------------------------------------------------------------------------------------------- search

def test_beam_search_on_torch_finds_the_hypotheses_tensorflow_finds():
    """The attention config's beam search (beam 4) with the same initial parameters on both backends."""
    from netcompiler.config import load_config
    from netcompiler.engine.main import _build_search_output
    from netcompiler.engine.searching import run_search, search_output_layer
    from netcompiler.network import build_network

    config = load_config(str(REPO / "configs" / "attention-copy.py"), [])
    network = build_network(config, search=True)
    _build_search_output(network, "decision")
    dataset = make_dataset({"class": "CopyTaskDataset", "nsymbols": 10, "minlen": 2, "maxlen": 6, "num_seqs": 9,
                            "fixed_random_seed": 3}, "dev")
    results = {}
    for backend in ("torch", "tensorflow"):
        model = CompiledNetwork(network, seed=3, backend=backend)
        layer = search_output_layer(network, "output")  # the searching rec layer: whole beams with scores
        results[backend] = run_search(model, dataset, layer, parse_batching(batch_size=2000, max_seqs=4),
                                      target_key="classes", do_eval=True)
    torch_result, tf_result = results["torch"], results["tensorflow"]
    assert len(torch_result.hyps) == 9 and all(len(beam) == 4 for beam in torch_result.hyps.values())
    for tag, beam in tf_result.hyps.items():
        assert [text for _, text in torch_result.hyps[tag]] == [text for _, text in beam], tag
        np.testing.assert_allclose([score for score, _ in torch_result.hyps[tag]], [score for score, _ in beam],
                                   rtol=1e-4, atol=1e-4)
    assert (torch_result.edits, torch_result.ref_labels) == (tf_result.edits, tf_result.ref_labels)


# --------------------------------------------------------------------------------------------- the CLI

@pytest.mark.slow
def test_readme_demo_on_torch_reaches_the_tensorflow_dev_score(tmp_path):
    """`compile-net configs/demo-12ax-lstm.py ++backend torch`, 3 epochs, against the same on TensorFlow."""
    command = [sys.executable, "-c", "import sys; from netcompiler.cli import compile_net_main; "
                                     "sys.exit(compile_net_main())"]
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    dev_fer = {}
    for backend in ("torch", "tensorflow"):
        threads = ["++torch_num_threads", "1"] if backend == "torch" else []  # fast also on a busy machine
        proc = subprocess.run(command + [str(REPO / "configs" / "demo-12ax-lstm.py"), "++backend", backend,
                                         "++num_epochs", "3", "++model", str(tmp_path / backend / "model")] + threads,
                              cwd=str(tmp_path), capture_output=True, text=True, timeout=600, env=env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        lines = epoch_lines(proc.stdout)
        assert [int(m[1]) for m in lines] == [1, 2, 3], proc.stdout
        dev_fer[backend] = float(lines[-1][3])
    assert dev_fer["torch"] <= 0.05  # the majority class alone: ~0.14
    assert abs(dev_fer["torch"] - dev_fer["tensorflow"]) <= 0.01, dev_fer
    assert os.path.exists(tmp_path / "torch" / "model.003.pt")
