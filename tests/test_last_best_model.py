"""use_last_best_model (`engine/last_best_model.py`): which epoch training goes on from, by RETURNN's rules
(`LearningRateControl.get_last_best_epoch` and the engine's modulo / filter_score check), worked out by hand; and a
training run on TensorFlow that goes back to the best epoch's parameters."""

from __future__ import annotations

import math

import numpy as np
import pytest

from netcompiler.engine.last_best_model import LastBestModel, last_best_epoch
from netcompiler.engine.learning_rate import LearningRateControl
from netcompiler.errors import ConfigError


def control_with(dev_scores):
    """A learning-rate control whose history has these dev scores for epochs 1, 2, ..."""
    control = LearningRateControl(learning_rate=0.1)
    for epoch, score in enumerate(dev_scores, start=1):
        control.record(epoch, {"train_score_output": 1.0, "dev_score_output": score})
    return control


def best(scores, last_epoch, **options):
    control = control_with(scores)
    return last_best_epoch(control.history(), control.error_key, last_epoch, **options)


def test_the_best_epoch_by_returnns_rules():
    scores = [0.9, 0.5, 0.7, 0.6]
    assert best(scores, 4) == 2  # the lowest dev score
    assert best(scores, 2) is None  # the last epoch is the best: nothing to go back to
    assert best(scores, 4, only_last_epochs=2) is None  # epochs 3, 4: the last one (0.6) is the best
    assert best(scores, 4, only_last_n=2) is None  # of the candidates, only epochs 3 and 4
    assert best(scores, 4, min_score_dist=0.05) == 2  # 0.5 + 0.05 < 0.6
    assert best(scores, 4, min_score_dist=0.2) is None  # 0.5 + 0.2 is not below 0.6
    assert best(scores, 4, filter_score=0.45) is None  # every score is above the filter
    assert best(scores, 4, first_epoch=3) is None


def test_modulo_and_filter_score_decide_when_to_look():
    control = control_with([0.9, 0.5, 0.7, 0.6])
    rule = LastBestModel.from_config({"modulo": 5})
    assert rule.epoch_to_reload(5, control) == 2  # 5 % 5 == 0: look
    control = control_with([0.9, 0.5, 0.7])
    assert rule.epoch_to_reload(4, control) is None  # 4 % 5 != 0 and epoch 3's 0.7 passes the filter (inf)
    rule = LastBestModel.from_config({"modulo": 5, "filter_score": 0.6})
    assert rule.epoch_to_reload(4, control) == 2  # epoch 3 scored worse than the filter: look anyway
    pretraining = LastBestModel.from_config(True, num_pretrain_epochs=3)
    assert pretraining.epoch_to_reload(3, control_with([0.5, 0.9])) is None  # never in pretraining
    assert pretraining.options["first_epoch"] == 3


@pytest.mark.parametrize("value", [{"modulo": 0}, {"every": 2}, "yes", {"modulo": True}])
def test_bad_settings(value):
    with pytest.raises(ConfigError, match="config key 'use_last_best_model'"):
        LastBestModel.from_config(value)


def test_off():
    assert LastBestModel.from_config(None) is None and LastBestModel.from_config(False) is None
    assert math.isinf(LastBestModel.from_config(True).options.get("filter_score", math.inf))


CONFIG = """
task = "train"
train = {"class": "Task12AXDataset", "num_seqs": 20}
dev = {"class": "Task12AXDataset", "num_seqs": 5, "fixed_random_seed": 1}
extern_data = {"data": {"dim": 9}, "classes": {"dim": 2, "sparse": True}}
batch_size = 2000
network = {"l1": {"class": "linear", "activation": "tanh", "n_out": 5, "from": "data"},
           "output": {"class": "softmax", "loss": "ce", "from": "l1", "target": "classes"}}
optimizer = {"class": "sgd"}
learning_rates = [0.5, 200.0, 0.0]  # epoch 2 overshoots (worse dev score); epoch 3 changes nothing
use_last_best_model = True
num_epochs = 3
"""


@pytest.mark.slow
def test_training_goes_on_from_the_best_epoch(tmp_path):
    from netcompiler.engine.checkpoint_interchange import read_params
    from tests.run_helpers import run

    path = tmp_path / "config.py"
    path.write_text(CONFIG + f"model = {str(tmp_path / 'model')!r}\n")
    log = run(str(path))
    history = LearningRateControl.from_config({"model": str(tmp_path / "model")})
    history.load()
    dev = {e: s["dev_score_output"] for e, (_, s) in history.history().items()}
    assert dev[2] > dev[1], dev  # the overshooting epoch is worse: epoch 3 starts from epoch 1's parameters
    assert "epoch 3: epoch 2 is not the best; going on from epoch 1" in log
    first, third = (read_params(str(tmp_path / f"model.{e:03d}")) for e in (1, 3))
    for name in first:  # epoch 3 trained with rate 0 from epoch 1's parameters
        np.testing.assert_array_equal(third[name], first[name], err_msg=name)
