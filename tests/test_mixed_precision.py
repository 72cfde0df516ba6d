"""bfloat16 mixed precision (`tf_amp`, `torch_amp`) and compiled steps (`tf_jit`, `torch_compile`):
the config keys, and one small network (linear + ReLU, layer norm, softmax with CE) trained a step on both
backends: the parameters stay float32 (a layer's bfloat16 output under torch's autocast stands for its float32
template), the step computes in bfloat16 (its loss differs from the float32 one,
but by little), the update is finite; XLA gives the float32 numbers."""
import io
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install -e '.[torch]')")
tf = pytest.importorskip("tensorflow")

from netcompiler.builtin import load_builtin_layers  # noqa: E402
from netcompiler.emit.model import CompiledNetwork  # noqa: E402
from netcompiler.engine.optimizers import make_optimizer  # noqa: E402
from netcompiler.engine import precision  # noqa: E402
from netcompiler.engine.precision import StepCompute, step_compute  # noqa: E402
from netcompiler.engine.torch_optimizers import make_torch_optimizer  # noqa: E402
from netcompiler.engine.torch_trainer import TorchTrainer, to_torch  # noqa: E402
from netcompiler.engine.trainer import Trainer  # noqa: E402
from netcompiler.errors import InvalidOptionError  # noqa: E402
from netcompiler.network import build_from_dict  # noqa: E402
from netcompiler.backends.torch.core import CoreOps as TorchCore  # noqa: E402

load_builtin_layers()
EXTERN = {"data": {"dim": 16}, "classes": {"dim": 12, "sparse": True}}
NETWORK = {
    "hidden": {"class": "linear", "n_out": 64, "activation": "relu", "from": "data"},
    "proj": {"class": "linear", "n_out": 32, "with_bias": False, "from": "hidden"},  # on torch: a bf16 output
    "norm": {"class": "layer_norm", "from": "proj"},
    "output": {"class": "softmax", "loss": "ce", "from": "norm", "target": "classes"},
}
OPTIMIZER = {"optimizer": {"class": "adam"}, "learning_rate": 0.01}
BF16 = StepCompute(amp_dtype="bfloat16")


def batch(seed=0, size=6, time=20):
    rng = np.random.RandomState(seed)
    lengths = rng.randint(time // 2, time + 1, size=size).astype("int32")
    lengths[0] = time
    inputs = {"data": rng.randn(size, time, 16).astype("float32") * 2,
              "classes": rng.randint(0, 12, size=(size, time)).astype("int32")}
    return inputs, {"data": lengths, "classes": lengths}


def model(backend):
    return CompiledNetwork(build_from_dict(NETWORK, EXTERN), seed=1, backend=backend)


def tf_optimizer(net):
    optimizer = make_optimizer(OPTIMIZER)
    optimizer.build(net.trainable_params)  # as compile-net does before the first step
    return optimizer


def param_values(net):
    return {name: np.array(p.detach().numpy() if torch.is_tensor(p) else p.numpy()) for name, p in net.params.items()}


# --------------------------------------------------------------------------------------------- config keys

@pytest.mark.parametrize("value", ["bfloat16", {"dtype": "bfloat16"}])
def test_amp_keys_accept_bfloat16(value):
    assert step_compute({"tf_amp": value}, "tensorflow") == BF16
    assert step_compute({"torch_amp": value}, "torch") == BF16
    assert step_compute({}, "torch") == StepCompute()
    assert step_compute({"tf_jit": True}, "tensorflow") == StepCompute(jit=True)


@pytest.mark.parametrize("key,value,message", [
    ("tf_amp", "bfloat61", "config key 'tf_amp'.*expected 'bfloat16', got 'bfloat61'"),
    ("tf_amp", "float16", "config key 'tf_amp'.*float16 is not supported"),
    ("tf_amp", {"dtype": "bfloat16", "grad_scaler": {}}, "config key 'tf_amp'.*takes only 'dtype'"),
    ("tf_jit", "yes", "config key 'tf_jit'.*expected True or False"),
])
def test_bad_values_are_errors_naming_the_key(key, value, message):
    with pytest.raises(InvalidOptionError, match=message):
        step_compute({key: value}, "tensorflow")
    def torch_name(text):
        return text.replace("tf_amp", "torch_amp").replace("tf_jit", "torch_compile")
    with pytest.raises(InvalidOptionError, match=torch_name(message)):
        step_compute({torch_name(key): value}, "torch")


def test_keys_of_the_other_backend_get_a_notice_and_xla_with_amp_is_refused():
    log = io.StringIO()
    assert step_compute({"torch_amp": "bfloat16", "tf_amp": None}, "tensorflow", log=log) == StepCompute()
    assert "config key 'torch_amp' is a torch setting; it has no effect with backend 'tensorflow' (use 'tf_amp')" \
        in log.getvalue()
    with pytest.raises(InvalidOptionError, match="'tf_amp' and 'tf_jit'.*set only one"):
        step_compute({"tf_amp": "bfloat16", "tf_jit": True}, "tensorflow")


# --------------------------------------------------------------------------------------------- TensorFlow

def test_tensorflow_bf16_step_keeps_float32_parameters_and_computes_in_bf16():
    net = model("tensorflow")
    inputs, lengths = batch()
    fp32 = Trainer(net, None, None, log=io.StringIO())
    bf16 = Trainer(net, tf_optimizer(net), None, log=io.StringIO(), compute=BF16)
    exact = float(fp32.eval_step(inputs, lengths)[1])
    mixed = float(bf16.eval_step(inputs, lengths)[1])
    assert float(fp32.eval_step(inputs, lengths)[1]) == exact  # float32 again after the bf16 call
    # bfloat16 has 8 bits of mantissa: the summed CE moves by about 1e-3 relative, never 0
    assert mixed != exact and abs(mixed - exact) < 2e-2 * abs(exact), (mixed, exact)
    before = param_values(net)
    _, objective = bf16.train_step(inputs, lengths)
    assert abs(float(objective) - mixed) < 1e-6 * abs(mixed)  # training computes as eval does (no dropout here)
    after = param_values(net)
    for name, variable in net.params.items():
        assert variable.dtype == tf.float32, name
        assert np.isfinite(after[name]).all() and not np.array_equal(after[name], before[name]), name
    assert int(bf16.step_count) == 1


def test_tensorflow_bf16_step_leaves_the_rewrite_lists_of_the_environment_as_they_were(monkeypatch):
    deny, infer = (f"TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_{n}" for n in ("DENYLIST_ADD", "INFERLIST_REMOVE"))
    monkeypatch.setenv(deny, "Tanh")
    monkeypatch.delenv(infer, raising=False)
    with precision._float32_log_softmax_lists():  # what grappler reads while a bf16 step runs
        assert (os.environ[deny], os.environ[infer]) == ("Tanh,LogSoftmax", "LogSoftmax")
    assert os.environ[deny] == "Tanh" and infer not in os.environ
    Trainer(model("tensorflow"), None, None, log=io.StringIO(), compute=BF16).eval_step(*batch())
    assert os.environ[deny] == "Tanh" and infer not in os.environ


@pytest.mark.slow  # XLA compiles twice (about 15 s)
def test_tensorflow_jit_step_matches_the_plain_step():
    inputs, lengths = batch(seed=2)
    results = []
    for compute in (StepCompute(), StepCompute(jit=True)):
        net = model("tensorflow")
        trainer = Trainer(net, tf_optimizer(net), None, log=io.StringIO(), compute=compute)
        first = float(trainer.train_step(inputs, lengths)[1])
        second = float(trainer.train_step(*batch(seed=3, time=13))[1])  # another shape: XLA compiles again
        results.append((first, second, param_values(net)))
    (a1, a2, pa), (b1, b2, pb) = results
    np.testing.assert_allclose([b1, b2], [a1, a2], rtol=1e-4)
    for name in pa:
        np.testing.assert_allclose(pb[name], pa[name], rtol=1e-4, atol=1e-5, err_msg=name)


# --------------------------------------------------------------------------------------------- PyTorch

def test_torch_bf16_step_keeps_float32_parameters_and_computes_in_bf16():
    net = model("torch")
    inputs, lengths = map(to_torch, batch())
    fp32 = TorchTrainer(net, None, None, log=io.StringIO())
    exact = float(fp32.eval_step(inputs, lengths)[1])
    bf16 = TorchTrainer(net, make_torch_optimizer(OPTIMIZER, net.trainable_params), None, log=io.StringIO(),
                        compute=BF16)
    results, mixed = bf16.eval_step(inputs, lengths)
    assert mixed.dtype == torch.float32 and results["output"][0].dtype == torch.float32  # the loss in float32
    mixed = float(mixed)
    assert mixed != exact and abs(mixed - exact) < 2e-2 * abs(exact), (mixed, exact)
    before = param_values(net)
    seen = {}
    net.params["output/W"].register_hook(lambda grad: seen.update(grad=grad.dtype))
    _, objective = bf16.train_step(inputs, lengths)
    assert seen["grad"] == torch.float32  # what the optimizer gets
    after = param_values(net)
    for name, param in net.params.items():
        assert param.dtype == torch.float32, name
        assert np.isfinite(after[name]).all() and not np.array_equal(after[name], before[name]), name
    assert bf16.step_count == 1


def test_torch_softmax_and_sums_stay_float32_under_autocast():
    x = torch.randn(4, 7).to(torch.bfloat16)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert TorchCore.softmax_raw(x, -1, log=True).dtype == torch.float32
        assert TorchCore.reduce_raw(x, "mean", [1]).dtype == torch.float32
        assert TorchCore.matmul_raw(torch.randn(4, 7), torch.randn(7, 3)).dtype == torch.bfloat16
    assert TorchCore.softmax_raw(x, -1, log=False).dtype == torch.bfloat16  # outside autocast: as given


def test_an_xla_step_traces_float_dropout_masks():
    """XLA's CPU code for the 16-bit keep masks is slow: a `tf_jit` step draws a float per entry instead."""
    import tensorflow as tf

    from netcompiler.backends.tensorflow.keep_mask import keep_mask
    from netcompiler.engine.precision import tf_step_function

    for jit, wanted in ((True, "RandomUniform"), (False, "StatelessRandomUniformFullIntV2")):
        step = tf_step_function(lambda shape: keep_mask(shape, [None, 64], 0.1), [tf.TensorSpec([2], tf.int32)],
                                StepCompute(jit=jit))
        assert wanted in {op.type for op in step.get_concrete_function().graph.get_operations()}, jit
