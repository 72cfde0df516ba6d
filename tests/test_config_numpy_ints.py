"""Integer config values checked with `limits.is_int`: a NumPy int counts as an int (and comes out as a Python
int, so it can be written to JSON and the learning-rate file), a bool does not. Numbers checked with
`limits.is_number` likewise take NumPy ints and floats (as Python floats), not bools."""

import json

import numpy as np
import pytest

from netcompiler.engine.checkpoint_cleanup import CleanupRules
from netcompiler.engine.datasets.dummy import DummyDataset, RandomDataset
from netcompiler.engine.dynamic_learning_rate import DynamicLearningRate
from netcompiler.engine.distributed import tf_config_identity
from netcompiler.engine.epochs import accum_grad_steps
from netcompiler.engine.last_best_model import LastBestModel
from netcompiler.engine.learning_rate import LearningRateControl
from netcompiler.engine.optimizers import optimizer_settings
from netcompiler.engine.start_epoch import start_epoch_setting
from netcompiler.errors import ConfigError
from netcompiler.extern_data import data_from_options, extern_data_from_config
from netcompiler.pretrain_construction import repetitions_per_step


def _all_python_ints(values):
    return all(type(v) is int for v in values)


def test_extern_data_takes_numpy_ints_as_python_ints():
    data = data_from_options("x", {"dim": np.int64(5), "shape": (None, np.int32(5)),
                                   "batch_dim_axis": np.int64(0), "time_dim_axis": np.int64(1)})
    plain = data_from_options("x", {"dim": 5, "shape": (None, 5), "batch_dim_axis": 0, "time_dim_axis": 1})
    assert repr(data) == repr(plain)
    assert _all_python_ints(d.size for d in data.dims if d.size is not None)
    sparse = data_from_options("y", {"dim": np.int64(7), "sparse": True})
    assert type(sparse.sparse_dim.size) is int and sparse.sparse_dim.size == 7
    outputs = extern_data_from_config({"num_outputs": {"classes": [np.int64(4), np.int64(1)],
                                                       "data": [np.int64(3), np.int64(2)]}})
    assert outputs["classes"].sparse_dim.size == 4
    assert outputs["data"].dim == 3 and type(outputs["data"].dim) is int


@pytest.mark.parametrize("opts, option", [
    ({"dim": True}, "'dim'"), ({"dim": 3, "shape": (None, True)}, "'shape'"),
    ({"dim": 3, "batch_dim_axis": True}, "'batch_dim_axis'"), ({"dim": 3, "time_dim_axis": False}, "'time_dim_axis'"),
])
def test_extern_data_refuses_bools(opts, option):
    with pytest.raises(ConfigError, match=option):
        data_from_options("z", opts)


def test_num_outputs_takes_numpy_ints():
    for outputs in (np.int64(10), {"classes": np.int32(10), "data": np.int64(3)}):
        plain = extern_data_from_config({"num_outputs": {key: int(v) for key, v in outputs.items()}
                                         if isinstance(outputs, dict) else int(outputs)})
        data = extern_data_from_config({"num_outputs": outputs})
        assert {k: repr(v) for k, v in data.items()} == {k: repr(v) for k, v in plain.items()}
        assert data["classes"].sparse_dim.size == 10 and type(data["classes"].sparse_dim.size) is int
    assert data["data"].dim == 3 and type(data["data"].dim) is int and not data["data"].sparse


@pytest.mark.parametrize("outputs", [True, {"classes": True}, np.bool_(True), {"classes": np.bool_(False)}])
def test_num_outputs_refuses_bools(outputs):
    with pytest.raises(ConfigError, match="num_outputs"):
        extern_data_from_config({"num_outputs": outputs})


def test_extern_data_refuses_bool_ndim():
    with pytest.raises(ConfigError, match="ndim must be an int"):
        extern_data_from_config({"num_outputs": {"classes": [4, True]}})


def test_pretrain_repetitions_take_numpy_ints():
    reps = repetitions_per_step({"default": np.int64(2), np.int64(1): np.int32(3)}, 3)
    assert reps == [2, 3, 2] and _all_python_ints(reps)
    assert json.loads(json.dumps(repetitions_per_step([np.int64(1), 2], 3))) == [1, 2, 2]
    assert repetitions_per_step(np.int64(4), 2) == [4, 4]


@pytest.mark.parametrize("repetitions", [True, [1, True], {True: 2}, {"default": True}])
def test_pretrain_repetitions_refuse_bools(repetitions):
    with pytest.raises(ConfigError, match="repetitions"):
        repetitions_per_step(repetitions, 3)


def test_engine_settings_take_numpy_ints_as_python_ints():
    rules = CleanupRules.from_setting({"keep_last_n": np.int64(3), "keep_best_n": np.int32(1),
                                       "keep": [np.int64(10), 20]})
    assert (rules.keep_last_n, rules.keep_best_n, rules.keep) == (3, 1, {10, 20})
    assert _all_python_ints([rules.keep_last_n, rules.keep_best_n, *rules.keep])
    for value in (start_epoch_setting(np.int64(4)), accum_grad_steps(np.int16(2)),
                  LastBestModel.from_config({"modulo": np.int64(5)}).modulo):
        assert type(value) is int
    assert json.dumps([start_epoch_setting(np.int64(4)), accum_grad_steps(np.int16(2))]) == "[4, 2]"


@pytest.mark.parametrize("check", [
    lambda: CleanupRules.from_setting({"keep_last_n": True}), lambda: CleanupRules.from_setting({"keep": [True]}),
    lambda: start_epoch_setting(True), lambda: accum_grad_steps(True),
    lambda: LastBestModel.from_config({"modulo": True}),
    lambda: tf_config_identity(json.dumps({"cluster": {"worker": ["a:1", "b:2"]},
                                           "task": {"type": "worker", "index": True}})),
])
def test_engine_settings_refuse_bools(check):
    with pytest.raises(ConfigError):
        check()


def test_tf_config_index_is_an_int():
    spec = {"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "worker", "index": 1}}
    assert tf_config_identity(json.dumps(spec))["rank"] == 1


def test_learning_rate_settings_take_numpy_ints(tmp_path):
    path = tmp_path / "lr.json"
    control = LearningRateControl("newbob_multi_epoch", 0.1, learning_rates={np.int64(2): 0.5},
                                  multi_num_epochs=np.int64(3), min_num_epochs_per_new_lr=np.int32(0),
                                  filename=str(path))
    assert type(control.multi_num_epochs) is int and control.multi_num_epochs == 3
    assert [type(e) for e in control.explicit_learning_rates] == [int]
    assert control.learning_rate_for_epoch(np.int64(2)) == 0.5
    assert control.learning_rate_for_epoch(np.int64(1)) == 0.1
    assert sorted(control.epochs) == [1, 2] and {type(e) for e in control.epochs} == {int}
    assert sorted(json.loads(path.read_text())["epochs"]) == ["1", "2"]
    assert DynamicLearningRate({"interval": np.int64(10), "decay": 0.9}).interval == 10
    assert type(DynamicLearningRate({"interval": np.int64(10), "decay": 0.9}).interval) is int


@pytest.mark.parametrize("check", [
    lambda: LearningRateControl("newbob_multi_epoch", 0.1, multi_num_epochs=True),
    lambda: LearningRateControl("constant", 0.1, learning_rates={True: 0.5}),
    lambda: DynamicLearningRate({"interval": True, "decay": 0.9}),
])
def test_learning_rate_settings_refuse_bools(check):
    with pytest.raises(ConfigError):
        check()


def test_learning_rate_for_epoch_refuses_bools():
    with pytest.raises(ValueError, match="epochs count from 1"):
        LearningRateControl("constant", 0.1).learning_rate_for_epoch(True)


def test_dummy_datasets_take_numpy_ints_and_refuse_bools():
    random = RandomDataset(input_dim=2, output_dim=3, num_seqs=2, seq_len_range=(np.int64(2), np.int32(4)))
    assert (random._min_len, random._max_len) == (2, 4)
    with pytest.raises(ConfigError, match="seq_len_range"):
        RandomDataset(input_dim=2, output_dim=3, num_seqs=2, seq_len_range=(True, 3))
    with pytest.raises(ConfigError, match="seq_len"):
        DummyDataset(input_dim=2, output_dim=3, num_seqs=2, seq_len={"data": True, "classes": 2})


def test_optimizer_settings_take_numpy_numbers_as_python_floats():
    settings = optimizer_settings({"learning_rate": np.float32(1e-3),
                                   "optimizer": {"class": "adam", "beta1": np.float32(0.5), "epsilon": np.int64(1),
                                                 "learning_rate_multiplier": np.int32(2)}})
    assert settings.learning_rate == float(np.float32(1e-3)) and type(settings.learning_rate) is float
    assert settings.kwargs == {"beta_1": 0.5, "epsilon": 1.0} and settings.multiplier == 2.0
    assert {type(v) for v in [settings.multiplier, *settings.kwargs.values()]} == {float}
    assert optimizer_settings({"rmsprop": np.float32(0.5)}).kwargs["rho"] == 0.5  # RETURNN's rmsprop = decay
    assert optimizer_settings({"momentum": np.float16(0.5)}).kwargs["momentum"] == 0.5
    assert optimizer_settings({"adam": True, "optimizer_epsilon": np.float64(0.25)}).kwargs["epsilon"] == 0.25


def test_learning_rate_settings_take_numpy_floats():
    control = LearningRateControl.from_config({"learning_rate": np.float32(0.5), "learning_rates": [np.float32(0.25)],
                                               "min_learning_rate": np.float64(0.125)})
    assert control.learning_rate_for_epoch(1) == 0.25 and control.default_learning_rate == 0.5
    assert type(control.default_learning_rate) is float and control.min_learning_rate == 0.125
    decay = DynamicLearningRate({"interval": 10, "decay": np.float32(0.5)})
    assert decay.decay == 0.5 and type(decay.decay) is float


@pytest.mark.parametrize("config", [
    {"learning_rate": True}, {"learning_rate": np.bool_(True)}, {"optimizer": {"class": "adam", "beta1": True}},
    {"optimizer": {"class": "sgd", "learning_rate_multiplier": np.bool_(True)}}, {"adam": True, "optimizer_epsilon": False},
])
def test_optimizer_settings_refuse_bools(config):
    with pytest.raises(ConfigError, match="expected a number"):
        optimizer_settings(config)


@pytest.mark.parametrize("check", [
    lambda: LearningRateControl("constant", np.bool_(True)),
    lambda: DynamicLearningRate({"interval": 10, "decay": True}),
])
def test_learning_rate_numbers_refuse_bools(check):
    with pytest.raises(ConfigError):
        check()
