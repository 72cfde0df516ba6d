"""Config keys (issue 10, item 4): every key of the table is implemented, refused with a clear message, or
accepted with a notice saying it changes nothing -- never silently ignored. Plus the cheap ones implemented:
cleanup_old_models, model = None, tf_log_dir, start_epoch, and the error measure checked before training."""

import os
import textwrap
import time

import pytest

from netcompiler.config import (
    KEY_KINDS, NO_EFFECT, NO_EFFECT_KEYS, REFUSED, REFUSED_KEYS, USED, Config, tensorboard_dir,
)
from netcompiler.engine.checkpoints import (
    CleanupRules, complete_checkpoints, default_keep_epochs, remove_checkpoint, restore_for_start_epoch,
    start_epoch_setting,
)
from netcompiler.engine.learning_rate import LearningRateControl, score_names
from netcompiler.errors import ConfigError, InvalidOptionError
from test_run_faults import run, write_config as write_run_config

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

def _sources_reading_keys():
    """netcompiler's sources, config.py without its table of keys (a key listed there is not read there)."""
    sources = {}
    for folder, _, names in os.walk(os.path.join(ROOT, "netcompiler")):
        for name in names:
            if name.endswith(".py"):
                with open(os.path.join(folder, name), encoding="utf-8") as f:
                    sources[os.path.join(folder, name)] = f.read()
    config = sources[os.path.join(ROOT, "netcompiler", "config.py")]
    start, end = config.index("USED_KEYS = frozenset("), config.index("def writes_checkpoints(")
    sources[os.path.join(ROOT, "netcompiler", "config.py")] = config[:start] + config[end:]
    return sources


ENGINE_SOURCES = _sources_reading_keys()
# a value for each refused key that it refuses (its first inert value is the default)
NOT_INERT = {"train_epoch_split": 3, "window": 3, "learning_rate_control_min_num_epochs_per_new_lr": 3,
             "target": "labels", "adam_opts": {"epsilon": 1.0}, "nadam_opts": {"epsilon": 1.0}}


# --- the table ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("key", sorted(KEY_KINDS))
def test_every_key_of_the_table_has_its_kind(key):
    kind = KEY_KINDS[key]
    value = NOT_INERT.get(key, True)
    config = Config({key: value})
    notices = [n for n in config.notices if f"'{key}'" in n]
    assert not any("did you mean" in n for n in notices), notices
    if kind == USED:
        # implemented: read somewhere outside the table, and no notice (model = None has its own one)
        assert any(f'"{key}"' in src or f"'{key}'" in src for src in ENGINE_SOURCES.values()), \
            f"'{key}' is listed as used but nothing reads it"
        assert notices == []
        config.check_refused()
    elif kind == NO_EFFECT:
        assert len(notices) == 1 and "has no effect in netcompiler (" in notices[0] and "ignored" in notices[0]
        config.check_refused()
    else:
        assert kind == REFUSED
        assert len(notices) == 1 and "compile-net refuses it" in notices[0], notices
        with pytest.raises(ConfigError) as info:
            config.check_refused()
        assert f"config key '{key}'" in str(info.value) and " -- " in str(info.value)  # with a suggestion
        for inert in REFUSED_KEYS[key].inert:  # the no-op values are accepted, with a notice
            Config({key: inert}).check_refused()
            assert any("changes nothing" in n for n in Config({key: inert}).notices)


def test_the_table_has_three_disjoint_kinds():
    assert set(KEY_KINDS.values()) == {USED, NO_EFFECT, REFUSED}
    assert not (set(NO_EFFECT_KEYS) & set(REFUSED_KEYS))
    for key in ("cache_size", "log_batch_size"):
        assert KEY_KINDS[key] == NO_EFFECT
    for key in ("train_epoch_split",):
        assert KEY_KINDS[key] == REFUSED
    for key in ("pretrain", "get_network", "use_last_best_model", "cleanup_old_models", "tf_log_dir", "start_epoch", "model", "accum_grad_multiple_step",
                "gradient_noise", "maximize_grad_norm", "gradient_nan_inf_filter"):
        assert KEY_KINDS[key] == USED


def test_start_epoch_is_known_and_starting_epoch_is_not():
    assert not any("did you mean" in n for n in Config({"start_epoch": 3}).notices)
    assert "starting_epoch" not in KEY_KINDS
    assert any("did you mean 'start_epoch'?" in n for n in Config({"start_epochs": 3}).notices)


# --- start_epoch -------------------------------------------------------------------------------------------
class FakeManager:
    """Checkpoint bookkeeping without TensorFlow: `complete` epochs, `restore` records what it was asked."""

    model_prefix = "m/model"

    def __init__(self, epochs):
        self.epochs = list(epochs)
        self.restored = []

    def complete(self):
        return [(e, f"m/model.{e:03d}") for e in self.epochs]

    def path_for(self, epoch):
        return f"m/model.{epoch:03d}"

    def restore(self, path, objects):
        self.restored.append(path)
        return {"from": path}

    def restore_latest(self, objects):
        return (self.epochs[-1], self.restore(self.complete()[-1][1], objects)) if self.epochs else None


def test_start_epoch_values():
    assert start_epoch_setting(None) is None and start_epoch_setting("auto") is None
    assert start_epoch_setting(3) == 3 and start_epoch_setting("3") == 3
    for bad in (0, -1, "first", 2.5, True):
        with pytest.raises(InvalidOptionError, match="config key 'start_epoch'"):
            start_epoch_setting(bad)


def test_start_epoch_restores_the_epoch_before():
    manager = FakeManager([1, 2])
    assert restore_for_start_epoch(manager, 3, {}) == (2, {"from": "m/model.002"})
    assert restore_for_start_epoch(FakeManager([1, 2]), None, {}) == (2, {"from": "m/model.002"})
    assert restore_for_start_epoch(FakeManager([]), 1, {}) is None
    with pytest.raises(InvalidOptionError, match=r"epoch 4 \('m/model.004'\), which does not exist \(complete "
                                                 r"checkpoints of epochs: 1, 2\)"):
        restore_for_start_epoch(FakeManager([1, 2]), 5, {})
    with pytest.raises(InvalidOptionError, match="checkpoints of epoch 2 and later exist .*never overwritten"):
        restore_for_start_epoch(FakeManager([1, 2]), 2, {})


# --- cleanup_old_models ------------------------------------------------------------------------------------
def test_default_keep_pattern_is_returnns():
    assert default_keep_epochs(10) == {4, 5, 8, 10}
    assert default_keep_epochs(50) == {5, 10, 20, 40}
    assert default_keep_epochs(100) == {10, 20, 40, 80}
    assert default_keep_epochs(500) == {20, 40, 80, 160, 320}  # every 80 * next_power_of_two(3) = 320


def test_cleanup_rules_keep_last_best_and_listed_epochs():
    epochs = list(range(1, 13))
    scores = {e: {"dev_score_output": abs(e - 6) + 0.5, "train_score_output": 10.0 - e / 10} for e in epochs}
    rules = CleanupRules.from_setting({"keep_last_n": 2, "keep_best_n": 1, "keep": [3]})
    # 11, 12: last two; 6: best dev; 12: best train; 3: listed
    assert rules.epochs_to_keep(epochs, scores, 12) == {3, 6, 11, 12}
    assert CleanupRules.from_setting(True).epochs_to_keep(epochs, {}, 12) == \
        ({5, 10, 11, 12} | {e for e in default_keep_epochs(12)}) & set(epochs)


def test_cleanup_never_removes_the_newest_or_a_best_one():
    rules = CleanupRules.from_setting({"keep_last_n": 0, "keep_best_n": 0, "keep": []})
    scores = {1: {"dev_score": 3.0}, 2: {"dev_score": 1.0}, 3: {"dev_score": 2.0}, 4: {"dev_score": float("nan")}}
    assert rules.epochs_to_keep([1, 2, 3, 4], scores, 4) == {2, 4}


@pytest.mark.parametrize("value,phrase", [("yes", "expected True or a dict"), ({"keep_lats_n": 1}, "did you mean "
                                                                                "'keep_last_n'?"),
                                          ({"keep_best_n": -1}, ">= 0"), ({"keep": "all"}, "list of epochs")])
def test_cleanup_setting_errors(value, phrase):
    with pytest.raises(InvalidOptionError, match="config key 'cleanup_old_models'") as info:
        CleanupRules.from_setting(value)
    assert phrase in str(info.value)
    assert CleanupRules.from_setting(None) is None and CleanupRules.from_setting(False) is None


def test_cleanup_removes_only_the_files_of_removed_checkpoints(tmp_path):
    prefix = str(tmp_path / "model")
    for epoch in range(1, 7):
        for suffix in (".index", ".data-00000-of-00001", ".meta.json"):
            (tmp_path / f"model.{epoch:03d}{suffix}").write_text("x")
    (tmp_path / "model.learning_rates.json").write_text("{}")
    (tmp_path / "model.lock").write_text("")
    manager = FakeManager([])
    manager.model_prefix = prefix
    manager.complete = lambda: complete_checkpoints(prefix)
    removed = CleanupRules.from_setting({"keep_last_n": 2, "keep_best_n": 1, "keep": []}).apply(
        manager, {e: {"dev_score": float(e % 3 + 1)} for e in range(1, 7)}, 6)  # best: 3 and 6 (score 1.0)
    assert [os.path.basename(p) for p in removed] == ["model.001", "model.002", "model.004"]
    assert sorted(os.listdir(tmp_path)) == sorted(
        [f"model.{e:03d}{s}" for e in (3, 5, 6) for s in (".index", ".data-00000-of-00001", ".meta.json")]
        + ["model.learning_rates.json", "model.lock"])
    remove_checkpoint(prefix, 9)  # nothing there: nothing happens


# --- the error measure, checked before training ------------------------------------------------------------
def test_error_measure_is_checked_against_the_scores_the_run_will_record():
    names = score_names(["output"], with_dev=True)
    assert names == ["train_score_output", "train_error_output", "dev_score_output", "dev_error_output"]
    control = LearningRateControl(learning_rate=0.1, kind="newbob", error_measure="dev_score_output:exp")
    with pytest.raises(InvalidOptionError) as info:
        control.check_error_measure(names)
    message = str(info.value)
    assert "config key 'learning_rate_control_error_measure'" in message
    assert "'dev_score_output:exp' is not among the scores" in message and "calculate_exp_loss" in message
    assert "did you mean 'dev_score_output'?" in message
    LearningRateControl(learning_rate=0.1, error_measure="dev_score").check_error_measure(names)  # _output added
    with pytest.raises(InvalidOptionError, match="dev_error_output"):
        LearningRateControl(learning_rate=0.1, error_measure="dev_error_output").check_error_measure(
            score_names(["output"], with_dev=False))


SMALL = """
    train = {"class": "Task12AXDataset", "num_seqs": 20}
    dev = {"class": "Task12AXDataset", "num_seqs": 10, "fixed_random_seed": 1}
    network = {"output": {"class": "softmax", "loss": "ce", "from": "data", "target": "classes"}}
    optimizer = {"class": "adam"}
    learning_rate = 0.01
"""


def write_config(tmp_path, body):
    return write_run_config(tmp_path, textwrap.dedent(SMALL).lstrip("\n") + textwrap.dedent(body))


def test_a_wrong_error_measure_fails_before_the_first_epoch(tmp_path, capsys, monkeypatch):
    import tensorflow  # noqa: F401 - imported before the clock starts: the check, not the import, is timed

    monkeypatch.chdir(tmp_path)
    config = write_config(tmp_path, 'model = "out/model"\nlearning_rate_control = "newbob"\n'
                                    'learning_rate_control_error_measure = "dev_score_output:exp"\n')
    start = time.perf_counter()
    status, out, err = run(capsys, config)
    elapsed = time.perf_counter() - start
    assert status == 2 and "did you mean 'dev_score_output'?" in err[-1], err
    assert "epoch 1" not in out and not os.path.exists(tmp_path / "out" / "model.001.index")
    assert elapsed < 1.0, elapsed


def test_refused_key_stops_compile_net_at_once(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = write_config(tmp_path, 'model = "out/model"\ntrain_epoch_split = 3\n')
    status, out, err = run(capsys, config)
    assert status == 2 and "config key 'train_epoch_split'" in err[-1] and "config.py:" in err[-1], err
    assert not os.path.exists(tmp_path / "out")


def test_model_none_trains_without_checkpoints_and_tf_log_dir(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = write_config(tmp_path, 'model = None\nnum_epochs = 2\ntf_log_dir = "logs/tb"\n')
    status, out, err = run(capsys, config)
    assert status == 0, err
    assert "epoch 2  train ce" in out, out
    assert any("config key 'model' is None: training writes no checkpoints" in n for n in err), err
    assert not os.path.exists(tmp_path / "out")  # no checkpoints, no lock, no history file
    assert os.listdir(tmp_path / "logs" / "tb")  # the TensorBoard events went where tf_log_dir says
    assert tensorboard_dir({}, "out/model") == os.path.join("out", "tensorboard")
    with pytest.raises(ConfigError, match="tf_log_dir"):
        tensorboard_dir({"tf_log_dir": 3}, "out/model")


def test_cleanup_and_start_epoch_in_a_run(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = write_config(tmp_path, 'model = "out/model"\nnum_epochs = 4\n'
                                    'cleanup_old_models = {"keep_last_n": 1, "keep_best_n": 0, "keep": []}\n')
    status, out, err = run(capsys, config)
    assert status == 0, err
    kept = [e for e, _ in complete_checkpoints(str(tmp_path / "out" / "model"))]
    assert 4 in kept and len(kept) < 4, kept  # the newest stays, the best by each score stays
    status, out, err = run(capsys, config, "++num_epochs", "5", "++start_epoch", "2")
    assert status == 2 and "config key 'start_epoch'" in err[-1] and "never overwritten" in err[-1], err
    status, out, err = run(capsys, config, "++num_epochs", "5", "++start_epoch", "5")
    assert status == 0 and "resuming after epoch 4" in out and "epoch 5  train" in out, (out, err)
