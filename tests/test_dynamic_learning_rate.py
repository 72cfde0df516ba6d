"""dynamic_learning_rate (issue 11 part 4): RETURNN's per-step learning rate, on TensorFlow and PyTorch.

The rule is unit-tested against hand-computed rates; end to end, a config's function is called before every
step with the update count and the epoch's rate, and what it returns is the rate the optimizer uses (a rate of
0 leaves the parameters unchanged: the dev score stays that of the initial parameters).
"""

import re

import pytest

from netcompiler.config import KEY_KINDS, USED
from netcompiler.engine.dynamic_learning_rate import DynamicLearningRate
from netcompiler.errors import InvalidOptionError
from tests.run_helpers import run, task_12ax_config


def noam(*, global_train_step, learning_rate, warmup_steps=4, **kwargs):
    """Noam warm-up as RETURNN configs write it: linear rise for warmup_steps, then ~ 1/sqrt(step)."""
    step = global_train_step + 1
    return learning_rate * warmup_steps ** 0.5 * min(step * warmup_steps ** -1.5, step ** -0.5)


def test_function_form_gives_the_functions_rate():
    rule = DynamicLearningRate(noam)
    # step s = global_train_step + 1, warmup 4: 2 * min(s / 8, 1 / sqrt(s)) * lr
    # s=1: 2 * 1/8 = 0.25; s=2: 0.5; s=4: 2 * min(0.5, 0.5) = 1.0; s=16: 2 * min(2, 0.25) = 0.5
    assert [rule.rate(step, 2.0, 1) for step in (0, 1, 3, 15)] == [0.5, 1.0, 2.0, 1.0]


def test_cyclic_dict_form():
    rule = DynamicLearningRate({"interval": 3, "decay": 0.5})
    # lr * 0.5 ** (step % 3): steps 0..4 -> 1, 0.5, 0.25, 1, 0.5 (times lr = 4)
    assert [rule.rate(step, 4.0, 1) for step in range(5)] == [4.0, 2.0, 1.0, 4.0, 2.0]


def test_tensor_results_are_read_as_numbers():
    tf = pytest.importorskip("tensorflow")
    rule = DynamicLearningRate(lambda *, global_train_step, learning_rate, **kw:
                               tf.cast(global_train_step, tf.float32) * learning_rate)
    assert rule.rate(3, 0.5, 1) == 1.5


@pytest.mark.parametrize("setting, words", [
    (lambda *, global_train_step, learning_rate: learning_rate, "**kwargs"),
    (lambda *, global_train_step, learning_rate, epoch_continuous, **kwargs: learning_rate, "epoch_continuous"),
    ({"interval": 3}, "missing"),
    ({"interval": 0, "decay": 0.5}, "interval"),
    (0.001, "expected a function"),
])
def test_bad_settings_name_the_key(setting, words):
    with pytest.raises(InvalidOptionError, match="dynamic_learning_rate") as info:
        DynamicLearningRate(setting)
    assert words in str(info.value)


def test_a_bad_result_is_an_error_naming_the_step():
    rule = DynamicLearningRate(lambda *, global_train_step, **kwargs: float("nan") if global_train_step else 1.0)
    assert rule.rate(0, 1.0, 1) == 1.0
    with pytest.raises(InvalidOptionError, match=r"global_train_step=1\)"):
        rule.rate(1, 1.0, 1)


def test_the_key_is_used():
    assert KEY_KINDS["dynamic_learning_rate"] == USED


# --- end to end, both backends ---------------------------------------------------------------------------------
CONFIG = """
backend = %(backend)r
task = "train"
""" + task_12ax_config(40, 10, batch_size=400) + """
network = {
    "hidden": {"class": "linear", "activation": "tanh", "n_out": 8, "from": "data"},
    "output": {"class": "softmax", "loss": "ce", "from": "hidden", "target": "classes"},
}
optimizer = {"class": "sgd"}
learning_rates = [0.5, 0.25]
num_epochs = 2
model = %(model)r
torch_num_threads = 1

def dynamic_learning_rate(*, global_train_step, learning_rate, epoch, **kwargs):
    with open(%(calls)r, "a") as f:
        f.write("%%d %%r %%d\\n" %% (global_train_step, learning_rate, epoch))
    return %(rate)s
"""
DEV_CE = re.compile(r"^epoch (\d+) .* dev ce (\d+\.\d+)", re.M)


def train(tmp_path, backend, rate, name):
    calls = tmp_path / f"{name}.calls"
    path = tmp_path / f"{name}.py"
    path.write_text(CONFIG % dict(backend=backend, model=str(tmp_path / name / "model"), calls=str(calls),
                                  rate=rate))
    text = run(str(path))
    lines = [line.split() for line in calls.read_text().splitlines()]
    return [float(ce) for _, ce in DEV_CE.findall(text)], [(int(s), float(lr), int(e)) for s, lr, e in lines]


@pytest.mark.parametrize("backend", ["tensorflow", "torch"])
def test_the_function_sets_each_steps_rate(tmp_path, backend):
    if backend == "torch":
        pytest.importorskip("torch")
    same_ce, calls = train(tmp_path, backend, "learning_rate", "same")
    # called before each step: the update count runs on over both epochs, with each epoch's rate
    steps = [s for s, _, _ in calls]
    assert steps == list(range(len(steps))) and len(steps) >= 4
    assert {(lr, e) for _, lr, e in calls} == {(0.5, 1), (0.25, 2)}
    assert [e for _, _, e in calls] == sorted(e for _, _, e in calls)
    assert same_ce[1] != same_ce[0]  # it learns
    # rate 0 in every step: the parameters never change, so both epochs have the same dev score ...
    frozen_ce, _ = train(tmp_path, backend, "0.0", "frozen")
    assert frozen_ce[0] == frozen_ce[1]
    # ... and the rate the function returns is the one used: returning the epoch's rate learns as without it
    assert frozen_ce[0] != same_ce[0]


@pytest.mark.parametrize("backend", ["tensorflow", "torch"])
def test_a_resumed_run_continues_the_step_count(tmp_path, backend):
    if backend == "torch":
        pytest.importorskip("torch")
    calls = tmp_path / "calls"
    path = tmp_path / "config.py"
    path.write_text(CONFIG % dict(backend=backend, model=str(tmp_path / "out" / "model"), calls=str(calls),
                                  rate="learning_rate"))
    run(str(path), "++num_epochs", "1")
    first = len(calls.read_text().splitlines())
    resumed = run(str(path))
    assert "resuming after epoch 1" in resumed
    lines = [line.split() for line in calls.read_text().splitlines()]
    # epoch 2 starts at the update count the checkpoint of epoch 1 holds, not at 0
    assert [int(s) for s, _, _ in lines] == list(range(len(lines))) and len(lines) > first
    assert {int(e) for _, _, e in lines[first:]} == {2}
