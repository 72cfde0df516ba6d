"""Configs that define the model as Python code (RETURNN's get_model / train_step / forward_step format):
the config format (dims, sparse_dim, Dim(name=)), the losses a train step marks (sums over valid frames of
ragged batches against NumPy, as_error, scale, use_normalized_loss, custom_inv_norm_factor), the errors for
bad configs, the step on TensorFlow inside a tf.function, and the demos end to end."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import netcompiler
import netcompiler.frontend as rf
from netcompiler.config import Config
from netcompiler.engine.frontend_model import FrontendModel
from netcompiler.errors import ConfigError
from netcompiler.extern_data import extern_data_from_config
from netcompiler.tensor import Dim, Tensor, TensorDict, batch_dim

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BACKENDS = ["torch", "tensorflow"]
DEMO_RF = os.path.join(REPO, "configs", "demo-12ax-rf.py")
DEMO_TORCH = os.path.join(REPO, "configs", "demo-12ax-torch.py")


def _need(backend):
    pytest.importorskip(backend, reason=f"the {backend} backend is not installed")


def _raw_to_numpy(backend_name, raw):
    from netcompiler.backends import get_backend

    return np.asarray(get_backend(backend_name).to_numpy(raw))


# --- the config format ------------------------------------------------------------------------------
def test_dim_with_name_is_returnns_constructor():
    time_dim, in_dim = Dim(None, name="time"), Dim(9, name="in")
    assert (time_dim.description, time_dim.size, time_dim.is_dynamic) == ("time", None, True)
    assert (in_dim.description, in_dim.size) == ("in", 9)
    assert Dim(5, "feature", "old-form").description == "old-form"  # the positional form still works
    with pytest.raises(ValueError, match="not both"):
        Dim(3, name="a", description="b")


def test_extern_data_with_dims_and_sparse_dim():
    time_dim, in_dim, out_dim = Dim(None, name="time"), Dim(9, name="in"), Dim(2, name="out")
    templates = extern_data_from_config({"extern_data": {
        "data": {"dims": (batch_dim, time_dim, in_dim), "dtype": "float32"},
        "classes": {"dims": (batch_dim, time_dim), "sparse_dim": out_dim, "dtype": "int32"},
    }})
    data, classes = templates["data"], templates["classes"]
    assert data.dims == (batch_dim, time_dim, in_dim)
    assert (data.time_dim, data.feature_dim, data.dtype) == (time_dim, in_dim, "float32")
    assert classes.dims == (batch_dim, time_dim) and classes.sparse_dim is out_dim
    assert (classes.dtype, classes.dim) == ("int32", 2)


def test_tensor_dict_is_importable_and_maps_keys_to_tensors():
    assert netcompiler.TensorDict is TensorDict
    from netcompiler.tensor import TensorDict as from_tensor

    assert from_tensor is TensorDict
    dim = Dim(3, name="x")
    td = TensorDict({"a": Tensor(netcompiler.Data("a", (dim,)))})
    assert list(td) == ["a"] and "a" in td and td["a"].dims == (dim,)
    with pytest.raises(KeyError, match="keys: a"):
        td["b"]
    with pytest.raises(TypeError):
        td["c"] = 1


def test_dyn_size_ext_is_the_runs_sizes():
    pytest.importorskip("torch")
    from netcompiler.backends import get_backend

    time_dim, in_dim = Dim(None, name="time"), Dim(4, name="in")
    assert time_dim.dyn_size_ext is None and in_dim.dyn_size_ext is None  # outside a run; static
    with rf.RunContext(get_backend("torch")) as run:
        run.set_size(time_dim, np.array([3, 1], dtype="int32"))
        assert time_dim.dyn_size_ext.raw_tensor.tolist() == [3, 1]
        assert time_dim.dyn_size_ext.dims == (batch_dim,)
        other = Dim(None, name="other")  # not known yet: an empty sizes Tensor that model code fills
        other.dyn_size_ext.raw_tensor = time_dim.dyn_size_ext.raw_tensor
        assert run.size(other).raw.tolist() == [3, 1]
        third = Dim(None, name="third")  # RETURNN's other form: assigning the sizes Tensor itself
        third.dyn_size_ext = np.array([2, 2], dtype="int32")
        assert run.size(third).raw.tolist() == [2, 2]
        assert in_dim.dyn_size_ext is None
    with pytest.raises(RuntimeError, match="inside a run"):
        time_dim.dyn_size_ext = np.array([1], dtype="int32")


# --- a small model on the op layer (parameters from rf.create_parameter) --------------------------------
TIME, IN, OUT = Dim(None, name="time"), Dim(3, name="in"), Dim(2, name="out")
EXTERN = {
    "data": {"dims": (batch_dim, TIME, IN), "dtype": "float32"},
    "classes": {"dims": (batch_dim, TIME), "sparse_dim": OUT, "dtype": "int32"},
}
LENGTHS = np.array([4, 1, 3], dtype="int32")


class _LinearModel:
    """logits = data . W (W: [in, out]), its parameter made on the run's backend."""

    def __init__(self):
        backend = rf.get_run_ctx().backend
        self.weight = rf.create_parameter(backend, "weight", [IN, OUT], init="glorot_uniform", seed=3)

    def named_parameters(self):
        yield "linear.weight", self.weight

    def __call__(self, x):
        return rf.matmul(x, self.weight, reduce=IN)


def _batch(seed=0, garbage=1e4):
    """Ragged inputs whose padding holds large garbage (and class 1), so unmasked sums would show it."""
    rng = np.random.RandomState(seed)
    n, t = len(LENGTHS), int(LENGTHS.max())
    data = rng.randn(n, t, IN.size).astype("float32")
    classes = rng.randint(0, OUT.size, size=(n, t)).astype("int32")
    for b, length in enumerate(LENGTHS):
        data[b, length:] = garbage
        classes[b, length:] = 1
    return {"data": data, "classes": classes}, {"data": LENGTHS, "classes": LENGTHS}


def _model(train_step, backend="torch", **values):
    _need(backend)
    config = Config(dict(extern_data=EXTERN, get_model=lambda **_: _LinearModel(), train_step=train_step,
                         **values), path="test-config.py")
    return FrontendModel(config, backend)


def _sq_and_error_step(*, model, extern_data, **_):
    """Per frame: sum of squared logits (a loss, scale 0.5, normalised) and whether argmax != class
    (an error); and the squared inputs as a second loss with a custom norm factor 10."""
    logits = model(extern_data["data"])
    sq = rf.reduce_sum(logits * logits, axis=OUT)
    rf.get_run_ctx().mark_as_loss(sq, "sq", scale=0.5, use_normalized_loss=True)
    wrong = rf.compare(rf.reduce_argmax(logits, axis=OUT), "not_equal", extern_data["classes"])
    rf.get_run_ctx().mark_as_loss(wrong, "fer", as_error=True)
    data = extern_data["data"]
    inputs_sq = rf.reduce_sum(data * data, axis=IN)
    inputs_sq.mark_as_loss(name="in_sq", custom_inv_norm_factor=10.0)


def _numpy_reference(weight, inputs):
    data, classes = inputs["data"], inputs["classes"]
    valid = np.arange(data.shape[1])[None, :] < LENGTHS[:, None]
    logits = data @ weight
    sq = (logits ** 2).sum(-1)[valid].sum()
    fer = (logits.argmax(-1) != classes)[valid].sum()
    in_sq = (data ** 2).sum(-1)[valid].sum()
    return sq, fer, in_sq, valid.sum()


@pytest.mark.parametrize("backend", BACKENDS)
def test_loss_sums_over_valid_frames_of_a_ragged_batch(backend):
    model = _model(_sq_and_error_step, backend)
    inputs, lengths = _batch()
    values, objective = model.step_losses(inputs, lengths, training=True)
    by_name = {v.name: v for v in values}
    weight = _raw_to_numpy(backend, model.params["linear.weight"])
    sq, fer, in_sq, frames = _numpy_reference(weight, inputs)
    np.testing.assert_allclose(_raw_to_numpy(backend, by_name["sq"].loss_sum), sq, rtol=1e-5)
    assert by_name["sq"].error_sum is None and by_name["sq"].scale == 0.5 and by_name["sq"].normalized
    assert _raw_to_numpy(backend, by_name["sq"].num_frames) == frames == LENGTHS.sum()
    # the error: reported, not minimised
    assert by_name["fer"].loss_sum is None
    assert _raw_to_numpy(backend, by_name["fer"].error_sum) == fer
    # the custom norm factor replaces the frame count
    np.testing.assert_allclose(_raw_to_numpy(backend, by_name["in_sq"].loss_sum), in_sq, rtol=1e-5)
    assert _raw_to_numpy(backend, by_name["in_sq"].num_frames) == 10.0
    assert not by_name["in_sq"].normalized
    # RETURNN's total loss: 0.5 * sq / frames (normalised) + in_sq (summed; its norm factor is for reporting)
    np.testing.assert_allclose(_raw_to_numpy(backend, objective), 0.5 * sq / frames + in_sq, rtol=1e-5)
    names, errors = model.loss_names()
    assert names == {"sq": "sq", "fer": None, "in_sq": "in_sq"}
    assert errors == {"sq": None, "fer": "fer", "in_sq": None}


def test_raw_torch_loss_counts_every_element_as_a_frame():
    torch = pytest.importorskip("torch")

    def step(*, model, extern_data, **_):
        lengths = extern_data["data"].dims[1].dyn_size_ext.raw_tensor
        x = extern_data["data"].raw_tensor
        packed = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        rf.get_run_ctx().mark_as_loss(name="packed", loss=packed.data.sum(-1))
        rf.get_run_ctx().mark_as_loss(name="big", loss=packed.data.sum(-1) > 0, as_error=True)

    model = _model(step, "torch")
    inputs, lengths = _batch()
    values, objective = model.step_losses(inputs, lengths, training=False)
    by_name = {v.name: v for v in values}
    valid = np.arange(inputs["data"].shape[1])[None, :] < LENGTHS[:, None]
    per_frame = inputs["data"].sum(-1)[valid]
    np.testing.assert_allclose(by_name["packed"].loss_sum.item(), per_frame.sum(), rtol=1e-5)
    assert by_name["packed"].num_frames.item() == LENGTHS.sum()
    assert by_name["big"].error_sum.item() == (per_frame > 0).sum()
    np.testing.assert_allclose(objective.item(), per_frame.sum(), rtol=1e-5)


def test_tensorflow_step_runs_inside_a_tf_function():
    tf = pytest.importorskip("tensorflow")
    model = _model(_sq_and_error_step, "tensorflow")
    signature = model.input_signature(keys=model.input_keys())

    @tf.function(input_signature=list(signature), autograph=False)
    def step(inputs, lengths):
        with tf.GradientTape() as tape:
            values, objective = model.step_losses(inputs, lengths, training=True)
        grads = tape.gradient(objective, model.trainable_params)
        return {v.name: v.num_frames for v in values}, objective, grads

    for seed in (0, 1):  # a second batch of another shape reuses the trace
        inputs, lengths = _batch(seed)
        frames, objective, grads = step(inputs, lengths)
        sq, _, in_sq, n = _numpy_reference(model.params["linear.weight"].numpy(), inputs)
        np.testing.assert_allclose(objective.numpy(), 0.5 * sq / n + in_sq, rtol=1e-5)
        assert frames["sq"].numpy() == n and all(g is not None for g in grads)
    assert step.experimental_get_tracing_count() == 1


def _logits_forward_step(*, model, extern_data, **_):
    rf.get_run_ctx().mark_as_default_output(model(extern_data["data"]))


@pytest.mark.parametrize("backend", BACKENDS)
def test_forward_step_output_takes_the_declared_dims_and_sizes(backend):
    """model_outputs with the model's own Dims: the output is laid out as declared (here [B, out, T], unlike
    the model's [B, T, out]) and its time dim has the batch's lengths."""
    model = _model(_sq_and_error_step, backend, forward_step=_logits_forward_step,
                   model_outputs={"output": {"dims": (batch_dim, OUT, TIME), "dtype": "float32"}})
    inputs, lengths = _batch()
    run = model.forward_outputs(inputs, lengths)
    output = run.outputs["output"]
    assert output.dims == (batch_dim, OUT, TIME)
    expected = inputs["data"] @ _raw_to_numpy(backend, model.params["linear.weight"])
    valid = np.arange(expected.shape[1])[None, :] < LENGTHS[:, None]
    got = _raw_to_numpy(backend, output.raw).transpose(0, 2, 1)
    np.testing.assert_allclose(got[valid], expected[valid], rtol=1e-5)
    assert _raw_to_numpy(backend, run.size(TIME).raw).tolist() == LENGTHS.tolist()


def test_forward_step_output_with_other_dims_than_declared_is_named():
    model = _model(_sq_and_error_step, forward_step=_logits_forward_step, model_outputs={"output": {"dim": 2}})
    with pytest.raises(ValueError, match="'output' has dims .* model_outputs"):
        model.forward_outputs(*_batch())


def test_dump_net_shows_the_parameters_and_marked_losses(capsys):
    pytest.importorskip("torch")
    from netcompiler.cli import dump_net_main

    assert dump_net_main([DEMO_RF]) == 0
    out = capsys.readouterr().out
    sizes = [(9, 50), (50,), (50, 100), (100,), (100, 2), (2,)]  # demo-rf's three Linear layers
    assert f"6 parameter tensors, {sum(int(np.prod(s)) for s in sizes)} parameters" in out
    assert "param layer1.weight ['in'(9), 'hidden'(50)] (450)" in out
    assert "loss     ce         [B, T|'time'] float32" in out


# --- errors --------------------------------------------------------------------------------------
def _config(**values):
    return Config(dict(extern_data=EXTERN, **values), path="my-config.py")


def test_get_model_without_train_step_is_a_config_error():
    with pytest.raises(ConfigError, match="my-config.py.*no 'train_step'.*mark_as_loss"):
        FrontendModel(_config(get_model=lambda **_: _LinearModel()), "torch")


def test_network_and_get_model_together_are_refused():
    with pytest.raises(ConfigError, match="both 'network'.*and 'get_model'"):
        FrontendModel(_config(get_model=lambda **_: _LinearModel(), train_step=_sq_and_error_step,
                              network={"output": {"class": "copy", "from": "data"}}), "torch")


def test_train_step_that_marks_nothing_is_a_config_error():
    model = _model(lambda **_: None)
    with pytest.raises(ConfigError, match="my-config.py|test-config.py") as info:
        model.loss_names()
    assert "marked no loss" in str(info.value) and "mark_as_loss" in str(info.value)


@pytest.mark.parametrize("body, message", [
    ("", "defines 'get_model' but no 'train_step'"),
    ("def train_step(*, model, extern_data, **_):\n    pass\n", "train_step marked no loss"),
    ("network = {'output': {'class': 'copy', 'from': 'data'}}\n"
     "def train_step(*, model, extern_data, **_):\n    pass\n", "both 'network'"),
])
def test_compile_net_names_the_config_file_of_a_frontend_config_that_cannot_train(tmp_path, capsys, body,
                                                                                   message):
    pytest.importorskip("torch")
    from netcompiler.cli import compile_net_main

    path = tmp_path / "bad.py"
    path.write_text("import netcompiler.frontend as rf\nfrom netcompiler import Dim, batch_dim\n"
                    "backend = 'torch'\nextern_data = {'data': {'dim': 3}}\n"
                    "class M(rf.Module):\n    pass\n"
                    "def get_model(**_):\n    return M()\n" + body
                    + f"model = {str(tmp_path / 'model')!r}\n")
    assert compile_net_main([str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and message in err, err


def test_only_errors_leave_nothing_to_minimise():
    def step(*, model, extern_data, **_):
        rf.reduce_sum(extern_data["data"], axis=IN).mark_as_loss(name="e", as_error=True)

    model = _model(step)
    inputs, lengths = _batch()
    with pytest.raises(ConfigError, match="nothing to minimise"):
        model.step_losses(inputs, lengths, training=True)
    values, _ = model.step_losses(inputs, lengths, training=False)  # evaluation may report errors only
    assert values[0].error_sum is not None


def test_get_model_returning_none_or_a_torch_module_on_tensorflow():
    torch = pytest.importorskip("torch")
    _need("tensorflow")
    with pytest.raises(ConfigError, match="returned None"):
        FrontendModel(_config(get_model=lambda **_: None, train_step=_sq_and_error_step), "torch")
    with pytest.raises(ConfigError, match="runs only with backend 'torch'"):
        FrontendModel(_config(get_model=lambda **_: torch.nn.Linear(3, 2), train_step=_sq_and_error_step),
                      "tensorflow")


# --- the demos through compile-net (in this process: the frameworks are imported once) --------------------


DEV_SMALL = {"class": "Task12AXDataset", "num_seqs": 20, "fixed_random_seed": 1}


def _compile_net(config, tmp_path, *overrides, task=None, seqs=40, dev=DEV_SMALL):
    """compile-net on `config` with the model under tmp_path, `seqs` training sequences and `dev` (None: the
    config's); the printed lines."""
    import io

    from netcompiler.engine.main import run_task

    log = io.StringIO()
    args = ["++model", str(tmp_path / "model"), "++learning_rate_file", str(tmp_path / "learning_rates"),
            "++train", repr({"class": "Task12AXDataset", "num_seqs": seqs}), *overrides]
    if dev is not None:
        args += ["++dev", repr(dev)]
    assert run_task(config, [str(a) for a in args], task=task, log=log) == 0
    return log.getvalue().splitlines()


def _epoch_scores(lines):
    """{epoch: {"dev ce": value, ...}} from the `epoch N  train ce 0.1  dev ce ...` lines."""
    result = {}
    for line in lines:
        if line.startswith("epoch ") and "  " in line:
            words = line.split()
            scores = {f"{words[i]} {words[i + 1]}": float(words[i + 2])
                      for i in range(2, len(words) - 2) if words[i] in ("train", "dev")}
            result[int(words[1])] = scores
    return result


def test_demo_torch_one_epoch_then_resume_and_forward(tmp_path):
    """RETURNN's plain PyTorch demo: an epoch with dev ce and fer, a second epoch resumed from the
    checkpoint, and --task forward writing the logits of dev with each sequence's length."""
    pytest.importorskip("torch")
    first = _compile_net(DEMO_TORCH, tmp_path, "++num_epochs", 1)
    scores = _epoch_scores(first)[1]
    assert set(scores) == {"train ce", "train fer", "dev ce", "dev fer"}
    assert 0.0 < scores["dev ce"] < 0.7 and 0.0 <= scores["dev fer"] <= 1.0
    assert os.path.exists(str(tmp_path / "model.001.pt"))
    second = _compile_net(DEMO_TORCH, tmp_path, "++num_epochs", 2)
    assert any(line.startswith("resuming after epoch 1") for line in second)
    assert set(_epoch_scores(second)) == {2}
    evaluated = _compile_net(DEMO_TORCH, tmp_path, "++num_epochs", 2, task="eval")
    assert any("model.002.pt" in line and "dev ce" in line and "dev fer" in line for line in evaluated)
    out = tmp_path / "forward.hdf"
    lines = _compile_net(DEMO_TORCH, tmp_path, "++num_epochs", 2, "++output_file", str(out), task="forward")
    assert any("20 sequences of 'dev'" in line for line in lines)
    import h5py

    from netcompiler.engine.datasets import make_dataset

    dev = make_dataset({"class": "Task12AXDataset", "num_seqs": 20, "fixed_random_seed": 1}, "dev")
    dev.init_epoch(1)
    with h5py.File(out, "r") as f:
        lengths = f["seqLengths"][:, 0] if f["seqLengths"].ndim == 2 else f["seqLengths"][:]
        logits = f["inputs"][:]
    assert logits.shape == (int(lengths.sum()), 2) and np.isfinite(logits).all() and logits.std() > 0
    assert list(lengths) == [dev.seq_length(i)["data"] for i in range(20)]


def test_demo_rf_one_epoch_on_both_backends(tmp_path):
    """RETURNN's frontend demo trains an epoch on PyTorch and on TensorFlow from the same initial parameters
    (drawn with NumPy from random_seed) on the same batches: the same scores; a rerun resumes."""
    for backend in BACKENDS:
        _need(backend)
    results = {}
    for backend in BACKENDS:
        lines = _compile_net(DEMO_RF, tmp_path / backend, "++num_epochs", 1, "++backend", backend)
        results[backend] = _epoch_scores(lines)[1]
        assert set(results[backend]) == {"train ce", "dev ce"}
        assert 0.0 < results[backend]["dev ce"] < 0.7
    for key in ("train ce", "dev ce"):
        assert results["torch"][key] == pytest.approx(results["tensorflow"][key], abs=2e-3)
    for backend in BACKENDS:  # the rf.Module's parameters ("layer1.weight") restored from each backend's files
        again = _compile_net(DEMO_RF, tmp_path / backend, "++num_epochs", 2, "++backend", backend)
        assert any(line.startswith("resuming after epoch 1") for line in again)
        straight = _compile_net(DEMO_RF, tmp_path / f"straight-{backend}", "++num_epochs", 2, "++backend", backend)
        resumed, uninterrupted = _epoch_scores(again), _epoch_scores(straight)
        assert set(resumed) == {2}
        for key in ("train ce", "dev ce"):  # epoch 2 continues from the restored values, not from new ones
            assert resumed[2][key] == pytest.approx(uninterrupted[2][key], abs=1e-3)


def _context_free_optimum():
    """The lowest dev ce any model that sees one frame at a time can reach on the demos' dev set: the entropy of
    the class given the frame's input symbol, per frame (12AX targets depend on earlier symbols)."""
    from netcompiler.engine.datasets import make_dataset

    dev = make_dataset({"class": "Task12AXDataset", "num_seqs": 100, "fixed_random_seed": 1}, "dev")
    dev.init_epoch(1)
    seqs = [dev.get_seq(i) for i in range(dev.num_seqs())]
    symbols = np.concatenate([s["data"].argmax(-1) for s in seqs])
    classes = np.concatenate([s["classes"] for s in seqs])
    total = 0.0
    for symbol in np.unique(symbols):
        p = classes[symbols == symbol].mean()
        if 0 < p < 1:
            total += (symbols == symbol).sum() * -(p * np.log(p) + (1 - p) * np.log(1 - p))
    return total / len(classes)


@pytest.mark.slow
@pytest.mark.parametrize("config, backend", [(DEMO_TORCH, "torch"), (DEMO_RF, "torch"), (DEMO_RF, "tensorflow")])
def test_demo_five_epochs_reach_returnns_range(tmp_path, config, backend):
    """The demos as configured (1000 sequences, 5 epochs, their dev set): the conv model of demo-torch (13
    frames of context) flags the 12AX targets (dev fer well under 0.1); demo-rf's model is a frame-wise MLP,
    which cannot see context: it ends at the best a context-free model can do (RETURNN's would too)."""
    _need(backend)
    lines = _compile_net(config, tmp_path, "++backend", backend, seqs=1000, dev=None)
    scores = _epoch_scores(lines)[5]
    if config == DEMO_TORCH:
        assert scores["dev fer"] < 0.05 and scores["dev ce"] < 0.1
    else:
        assert scores["dev ce"] == pytest.approx(_context_free_optimum(), abs=0.005)
