"""Learning-rate control: the newbob rules, history files, resuming.

Expected rates are worked out by hand from the rules in the module doc
(relative change (new - old) / |new| greater than the threshold -> decay).
"""

import json
import os

import pytest

from netcompiler.engine.learning_rate import LearningRateControl, read_history
from netcompiler.errors import CheckpointError, InvalidOptionError


def run(control, dev_scores):
    """Trains len(dev_scores) epochs: returns the rate of each; records dev_score_output."""
    rates = []
    for epoch, score in enumerate(dev_scores, start=1):
        rates.append(control.learning_rate_for_epoch(epoch))
        control.record(epoch, {"train_score_output": score + 1.0, "dev_score_output": score})
    return rates


def test_constant_keeps_rate():
    control = LearningRateControl("constant", 0.25)
    assert run(control, [5.0, 5.0, 5.0, 5.0]) == [0.25] * 4


def test_newbob_decays_exactly_when_improvement_is_below_one_percent():
    control = LearningRateControl.from_config({"learning_rate": 1.0, "learning_rate_control": "newbob"})
    # epoch 2: only one score known -> 1.0
    # epoch 3: (9 - 10) / 9 = -0.111 <= -0.01 -> keep 1.0
    # epoch 4: (8.95 - 9) / 8.95 = -0.0056 > -0.01 -> 0.5
    # epoch 5: (8 - 8.95) / 8 = -0.119 -> keep 0.5
    # epoch 6: (8.1 - 8) / 8.1 = +0.012 (worse) -> 0.25
    assert run(control, [10.0, 9.0, 8.95, 8.0, 8.1, 8.0]) == [1.0, 1.0, 1.0, 0.5, 0.5, 0.25]


def test_newbob_threshold_is_strict_and_configurable():
    # Scores chosen so that the relative change is exactly -1/16 (exact in binary).
    control = LearningRateControl.from_config({
        "learning_rate": 1.0, "learning_rate_control": "newbob_rel",
        "newbob_relative_error_threshold": -0.0625, "newbob_learning_rate_decay": 0.25})
    # epoch 3: (1.0 - 1.0625) / 1.0 = -0.0625, not > -0.0625 -> keep
    # epoch 4: (0.96875 - 1.0) / 0.96875 = -0.032 > -0.0625 -> 0.25
    assert run(control, [1.0625, 1.0, 0.96875, 0.5]) == [1.0, 1.0, 1.0, 0.25]


def test_newbob_divides_by_new_score_unless_div_by_old():
    # old 100, new 99.005: by |new| -0.01005 (keep); by |old| -0.00995 (decay)
    by_new = LearningRateControl("newbob", 1.0)
    by_old = LearningRateControl("newbob", 1.0, relative_error_div_by_old=True)
    assert run(by_new, [100.0, 99.005, 99.0]) == [1.0, 1.0, 1.0]
    assert run(by_old, [100.0, 99.005, 99.0]) == [1.0, 1.0, 0.5]


def test_newbob_respects_min_learning_rate():
    control = LearningRateControl.from_config(
        {"learning_rate": 1.0, "learning_rate_control": "newbob", "min_learning_rate": 0.3})
    assert run(control, [5.0] * 5) == [1.0, 1.0, 0.5, 0.3, 0.3]


def test_newbob_abs_uses_absolute_difference():
    control = LearningRateControl.from_config({"learning_rate": 2.0, "learning_rate_control": "newbob_abs"})
    # epoch 3: 4.995 - 5 = -0.005 > -0.01 -> 1.0; epoch 4: 4.9 - 4.995 = -0.095 -> keep
    assert run(control, [5.0, 4.995, 4.9, 4.0]) == [2.0, 2.0, 1.0, 1.0]


def test_newbob_multi_epoch_uses_mean_and_interval():
    control = LearningRateControl.from_config({
        "learning_rate": 1.0, "learning_rate_control": "newbob_multi_epoch",
        "newbob_multi_num_epochs": 2, "newbob_multi_update_interval": 2})
    # epoch 2: not an update epoch (2 % 2 != 1)      -> 1.0
    # epoch 3: mean of [(9.95 - 10) / 9.95] = -0.005  -> 0.5
    # epoch 4: not an update epoch                    -> 0.5
    # epoch 5: mean of [(9 - 9.95) / 9, (8.99 - 9) / 8.99] = mean(-0.1056, -0.0011) = -0.053 -> keep 0.5
    #          (the last pair alone would have decayed)
    assert run(control, [10.0, 9.95, 9.0, 8.99, 8.98]) == [1.0, 1.0, 0.5, 0.5, 0.5]


def test_explicit_learning_rates_then_rule_continues():
    control = LearningRateControl.from_config({"learning_rate": 1.0, "learning_rates": [0.1, 0.2]})
    assert run(control, [3.0, 2.0, 1.0]) == [0.1, 0.2, 0.2]
    control = LearningRateControl("newbob", 1.0, learning_rates={1: 0.1, 2: 0.2})
    # epoch 3 decides from epochs 1, 2: (2.99 - 3) / 2.99 > -0.01 -> 0.2 * 0.5
    assert run(control, [3.0, 2.99, 1.0]) == [0.1, 0.2, 0.1]


def test_error_measure_selects_the_deciding_score():
    def epochs(control):
        rates = []
        for epoch, (score, error) in enumerate([(3.0, 0.5), (2.0, 0.5), (1.0, 0.5)], start=1):
            rates.append(control.learning_rate_for_epoch(epoch))
            control.record(epoch, {"train_score_output": 9.0, "dev_score_output": score, "dev_error_output": error})
        rates.append(control.learning_rate_for_epoch(4))
        return rates

    # default: dev_score_output (improves a lot) -> no decay
    assert epochs(LearningRateControl("newbob", 1.0)) == [1.0, 1.0, 1.0, 1.0]
    # dev_error (tried as given, then with "_output") does not improve -> decay
    assert epochs(LearningRateControl("newbob", 1.0, error_measure="dev_error")) == [1.0, 1.0, 0.5, 0.25]


def test_error_key_default_prefers_first_dev_score():
    control = LearningRateControl()
    assert control.error_key({"train_score_out": 1.0, "dev_score_out": 2.0, "dev_score_ctc": 3.0}) == "dev_score_out"
    assert control.error_key({"train_score_output": 1.0, "dev_error_output": 2.0}) == "dev_error_output"
    assert control.error_key({"train_score_output": 1.0}) == "train_score_output"


def test_unknown_error_measure_is_a_config_error():
    control = LearningRateControl("newbob", 1.0, error_measure="dev_scor_output")
    with pytest.raises(InvalidOptionError) as info:
        control.record(1, {"dev_score_output": 1.0})
    message = str(info.value)
    assert "config key 'learning_rate_control_error_measure'" in message
    assert "did you mean 'dev_score_output'" in message


def test_unknown_control_suggests_the_close_name():
    with pytest.raises(InvalidOptionError) as info:
        LearningRateControl.from_config({"learning_rate_control": "newbbo"})
    message = str(info.value)
    assert message.startswith("config key 'learning_rate_control': ")
    assert "did you mean 'newbob'?" in message
    with pytest.raises(InvalidOptionError, match="config key 'newbob_learning_rate_decay'"):
        LearningRateControl.from_config({"learning_rate_control": "newbob", "newbob_learning_rate_decay": "half"})
    with pytest.raises(InvalidOptionError, match="config key 'learning_rates'"):
        LearningRateControl.from_config({"learning_rates": 0.1})


def test_history_round_trip(tmp_path):
    path = str(tmp_path / "lr.json")
    control = LearningRateControl("newbob", 0.5, filename=path)
    run(control, [4.0, 3.0, 2.99])
    assert sorted(os.listdir(tmp_path)) == ["lr.json"]  # no temporary file left behind
    with open(path) as f:
        assert json.load(f)["epochs"]["3"] == {"learning_rate": 0.5,
                                               "scores": {"train_score_output": 3.99, "dev_score_output": 2.99}}
    again = LearningRateControl("newbob", 0.5, filename=path)
    assert again.history() == control.history()
    assert read_history(path) == control.epochs


def test_resumed_schedule_equals_uninterrupted(tmp_path):
    scores = [10.0, 9.0, 8.95, 8.9, 8.0, 8.1, 7.0, 6.99]
    config = {"learning_rate": 1.0, "learning_rate_control": "newbob", "model": str(tmp_path / "model")}
    uninterrupted = run(LearningRateControl.from_config(dict(config, model=str(tmp_path / "other"))), scores)
    assert uninterrupted == [1.0, 1.0, 1.0, 0.5, 0.25, 0.25, 0.125, 0.125]

    first = LearningRateControl.from_config(config)
    rates = run(first, scores[:5])
    assert os.path.exists(str(tmp_path / "model.learning_rates.json"))
    resumed = LearningRateControl.from_config(config)  # a new process reads the history back
    for epoch in range(6, 9):
        rates.append(resumed.learning_rate_for_epoch(epoch))
        resumed.record(epoch, {"train_score_output": 0.0, "dev_score_output": scores[epoch - 1]})
    assert rates == uninterrupted


def test_rate_once_chosen_is_kept_by_a_resumed_run(tmp_path):
    path = str(tmp_path / "lr.json")
    LearningRateControl("constant", 0.1, filename=path).learning_rate_for_epoch(1)
    # The config's learning_rate changed meanwhile: epoch 1 keeps its recorded rate.
    assert LearningRateControl("constant", 0.7, filename=path).learning_rate_for_epoch(1) == 0.1


def test_reads_returnn_newbob_data(tmp_path):
    path = tmp_path / "newbob.data"
    path.write_text("{\n1: EpochData(learningRate=0.001, error={\n'dev_score': 2.0, 'train_score': 3.0,\n}),\n"
                    "2: EpochData(learningRate=0.001, error={'dev_score': 1.99, 'train_score': nan}),\n}\n")
    control = LearningRateControl.from_config(
        {"learning_rate": 0.001, "learning_rate_control": "newbob", "learning_rate_file": str(path)})
    # (1.99 - 2.0) / 1.99 = -0.005 > -0.01 -> decay
    assert control.learning_rate_for_epoch(3) == pytest.approx(0.0005)
    assert read_history(str(path))[3].learning_rate == pytest.approx(0.0005)  # written back (as JSON)


def test_damaged_history_file_names_the_file(tmp_path):
    path = tmp_path / "lr.json"
    path.write_text('{"format": "netcompiler-learning-rate-history", "version": 1, "epochs": {"1": ')
    with pytest.raises(CheckpointError, match="lr.json"):
        LearningRateControl("newbob", filename=str(path))
