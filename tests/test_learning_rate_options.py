"""Learning-rate control, the remaining RETURNN options (issue 11 part 4): newbob_learning_rate_growth,
newbob_relative_error_grow_threshold, learning_rate_control_min_num_epochs_per_new_lr,
learning_rate_control_relative_error_relative_lr, min_learning_rate together with growth, and
use_learning_rate_control_always.

Each expectation is worked out by hand from RETURNN's rules (returnn/learning_rate_control.py): newbob_rel/abs
decay when the change is over the threshold and otherwise grow (growth default 1.0: no change); multi-epoch
decays when the mean change is over the threshold and grows when it is below the grow threshold; a decayed rate
is raised to min_learning_rate, a grown one is not capped; with min_num_epochs_per_new_lr = N > 1 the previous
rate is kept while the last N known epochs had different rates or fewer than N epochs are known.
Rates and scores are chosen so that every product is exact in binary (== comparisons are safe).
"""

import pytest

from netcompiler.config import KEY_KINDS, USED, Config
from netcompiler.engine.learning_rate import LearningRateControl
from netcompiler.errors import InvalidOptionError
from test_learning_rate import run


def newbob(**values):
    return LearningRateControl.from_config({"learning_rate": 1.0, "learning_rate_control": "newbob", **values})


def test_newbob_rel_grows_whenever_it_does_not_decay():
    control = newbob(newbob_learning_rate_growth=2.0)
    # epoch 2: one score known, no decision -> 1.0 (no growth either)
    # epoch 3: (9 - 10) / 9 = -0.111 <= -0.01 -> no decay, so growth: 2.0
    # epoch 4: (8.95 - 9) / 8.95 = -0.0056 > -0.01 -> decay: 1.0
    # epoch 5: (8 - 8.95) / 8 = -0.119 -> grow: 2.0
    # epoch 6: (8.1 - 8) / 8.1 = +0.012 -> decay: 1.0
    assert run(control, [10.0, 9.0, 8.95, 8.0, 8.1, 8.0]) == [1.0, 1.0, 2.0, 1.0, 2.0, 1.0]
    # the default growth 1.0 gives plain newbob
    assert run(newbob(), [10.0, 9.0, 8.95, 8.0, 8.1, 8.0]) == [1.0, 1.0, 1.0, 0.5, 0.5, 0.25]


def test_newbob_abs_grows_whenever_it_does_not_decay():
    control = LearningRateControl.from_config({"learning_rate_control": "newbob_abs",
                                               "newbob_learning_rate_growth": 2.0})
    # epoch 3: 9 - 10 = -1 <= -0.01 -> grow: 2.0
    # epoch 4: 8.995 - 9 = -0.005 > -0.01 -> decay: 1.0
    # epoch 5: 9.5 - 8.995 = +0.505 -> decay: 0.5
    assert run(control, [10.0, 9.0, 8.995, 9.5, 9.0]) == [1.0, 1.0, 2.0, 1.0, 0.5]


def test_growth_may_be_a_function():
    control = newbob(newbob_learning_rate_growth=lambda lr: lr + 0.25)
    # epoch 3: (9 - 10) / 9 -> grow: 1.0 + 0.25; epoch 4: (8 - 9) / 8 -> grow: 1.5
    assert run(control, [10.0, 9.0, 8.0, 7.0]) == [1.0, 1.0, 1.25, 1.5]


def test_multi_epoch_grows_below_the_grow_threshold_only():
    control = LearningRateControl.from_config({
        "learning_rate_control": "newbob_multi_epoch", "newbob_multi_num_epochs": 2,
        "newbob_multi_update_interval": 1, "newbob_learning_rate_growth": 2.0,
        "newbob_relative_error_grow_threshold": -0.1})
    # relative changes (new - old) / |new|: 1->2 -1, 2->3 -1, 3->4 -0.0526, 4->5 0, 5->6 +0.05
    # epoch 1, 2: fewer than two known epochs -> 1.0
    # epoch 3: mean(-1) = -1 < -0.1 -> grow: 2.0
    # epoch 4: mean(-1, -1) -> grow: 4.0
    # epoch 5: mean(-1, -0.0526) = -0.53 -> grow: 8.0
    # epoch 6: mean(-0.0526, 0) = -0.026: not > -0.01 (no decay), not < -0.1 (no growth) -> 8.0
    # epoch 7: mean(0, +0.05) = +0.025 > -0.01 -> decay: 4.0
    assert run(control, [8.0, 4.0, 2.0, 1.9, 1.9, 2.0, 2.0]) == [1.0, 1.0, 2.0, 4.0, 8.0, 8.0, 4.0]


def test_multi_epoch_grow_threshold_defaults_to_the_decay_threshold():
    control = LearningRateControl.from_config({
        "learning_rate_control": "newbob_multi_epoch", "newbob_multi_num_epochs": 1,
        "newbob_multi_update_interval": 1, "newbob_learning_rate_growth": 2.0})
    # epoch 3: (1.9 - 2) / 1.9 = -0.0526 < -0.01 -> grow: 2.0 (with the grow threshold -0.1 above it would not)
    # epoch 4: (1.9 - 1.9) = 0 > -0.01 -> decay: 1.0
    assert run(control, [2.0, 1.9, 1.9, 1.9]) == [1.0, 1.0, 2.0, 1.0]


def test_grow_threshold_above_the_decay_threshold_is_refused():
    with pytest.raises(InvalidOptionError, match="newbob_relative_error_grow_threshold"):
        LearningRateControl.from_config({"learning_rate_control": "newbob_multi_epoch",
                                         "newbob_relative_error_grow_threshold": 0.5})


def test_min_num_epochs_per_new_lr_keeps_each_rate_for_n_epochs():
    control = newbob(learning_rate_control_min_num_epochs_per_new_lr=3)
    # a constant score: every newbob decision decays ((5 - 5) / 5 = 0 > -0.01)
    # epoch 1: nothing known -> rule: 1.0
    # epoch 2, 3: fewer than 3 epochs known -> keep 1.0
    # epoch 4: last 3 rates [1, 1, 1] all equal -> rule: decay 0.5
    # epoch 5: [1, 1, 0.5], epoch 6: [1, 0.5, 0.5] -> changed recently: keep 0.5
    # epoch 7: [0.5, 0.5, 0.5] -> rule: 0.25; epoch 8: keep 0.25
    assert run(control, [5.0] * 8) == [1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.25, 0.25]
    # without it: epoch 2 keeps (one score), then a decay every epoch
    assert run(newbob(), [5.0] * 5) == [1.0, 1.0, 0.5, 0.25, 0.125]
    # 0 and 1 mean no delay
    assert run(newbob(learning_rate_control_min_num_epochs_per_new_lr=1), [5.0] * 4) == [1.0, 1.0, 0.5, 0.25]


def test_min_num_epochs_per_new_lr_must_be_a_whole_number():
    with pytest.raises(InvalidOptionError, match="learning_rate_control_min_num_epochs_per_new_lr"):
        newbob(learning_rate_control_min_num_epochs_per_new_lr=-1)
    with pytest.raises(InvalidOptionError, match="newbob_learning_rate_growth"):
        newbob(newbob_learning_rate_growth="fast")


def test_relative_error_relative_lr_scales_the_change_by_the_rate():
    values = {"learning_rate": 1.0, "learning_rates": [0.25, 0.25]}
    # epoch 3: (10 - 10.05) / 10 = -0.005 > -0.01 -> plain newbob decays to 0.125;
    # relative to the rate: -0.005 / (0.25 / 1.0) = -0.02 <= -0.01 -> keep 0.25
    assert run(newbob(**values), [10.05, 10.0, 9.0]) == [0.25, 0.25, 0.125]
    relative = newbob(learning_rate_control_relative_error_relative_lr=True, **values)
    assert run(relative, [10.05, 10.0, 9.0]) == [0.25, 0.25, 0.25]


def test_min_learning_rate_caps_decay_but_not_growth():
    control = newbob(min_learning_rate=0.3, newbob_learning_rate_growth=2.0)
    # epoch 3: (5 - 5) / 5 = 0 -> decay 0.5 (>= 0.3)
    # epoch 4: 0 -> decay 0.25, raised to 0.3
    # epoch 5: (1 - 5) / 1 = -4 -> grow 0.6 (not capped)
    assert run(control, [5.0, 5.0, 5.0, 1.0, 1.0]) == [1.0, 1.0, 0.5, 0.3, 0.6]


def test_the_options_are_accepted_by_the_config():
    for key in ("newbob_learning_rate_growth", "newbob_relative_error_grow_threshold",
                "learning_rate_control_min_num_epochs_per_new_lr", "min_learning_rate",
                "learning_rate_control_relative_error_relative_lr"):
        assert KEY_KINDS[key] == USED, key
    config = Config({"learning_rate_control_min_num_epochs_per_new_lr": 3, "newbob_learning_rate_growth": 1.5})
    config.check_refused()
    assert not any("min_num_epochs" in n or "growth" in n for n in config.notices)


def test_use_learning_rate_control_always_is_used_by_pretraining():
    # what it changes in pretraining epochs is tested in test_pretrain_training.py
    assert KEY_KINDS["use_learning_rate_control_always"] == USED
    config = Config({"use_learning_rate_control_always": True})
    config.check_refused()
    assert not any("use_learning_rate_control_always" in n for n in config.notices)
