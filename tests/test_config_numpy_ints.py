"""Integer config values checked with `limits.is_int`: a NumPy int counts as an int (and comes out as a Python
int, so it can be written to JSON and the learning-rate file), a bool does not."""

import json

import numpy as np
import pytest

from netcompiler.engine.checkpoint_cleanup import CleanupRules
from netcompiler.engine.distributed import tf_config_identity
from netcompiler.engine.epochs import accum_grad_steps
from netcompiler.engine.last_best_model import LastBestModel
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
