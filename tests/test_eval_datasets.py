"""RETURNN's `eval_datasets` (engine/eval_datasets.py): a dict name -> dataset options scored after each training
epoch next to dev (scores named by key in the log, the learning-rate file and TensorBoard, usable as the
learning-rate control's error measure) and by `--task eval`; the list-of-config-keys form; errors."""

import glob
import io
import json

import pytest

from run_helpers import run
from test_learning_curve import write_config  # its training config: train and dev of 12AX, 2 epochs

from netcompiler.engine.eval_datasets import eval_dataset_options
from netcompiler.engine.main import run_task
from netcompiler.errors import ConfigError, InvalidOptionError

# "same" is dev's dataset under another name: its scores must equal dev's; "other" is other data
EVAL_DATASETS = """
eval_datasets = {"same": dict(dev), "other": {"class": "Task12AXDataset", "num_seqs": 5, "fixed_random_seed": 7}}
"""


def recorded_scores(prefix):
    """epoch -> scores of the learning-rate file."""
    with open(prefix + ".learning_rates.json") as f:
        data = json.load(f)
    epochs = data["epochs"] if "epochs" in data else data
    return {int(e): record["scores"] for e, record in epochs.items()}


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["tensorflow", "torch"])
def test_training_scores_each_eval_dataset_by_name(tmp_path, backend):
    if backend == "torch":
        pytest.importorskip("torch")
    path, prefix = write_config(tmp_path, EVAL_DATASETS + "learning_rate_control_error_measure = 'other_score'\n")
    log = run(path, "++backend", backend)
    scores = recorded_scores(prefix)
    assert sorted(scores) == [1, 2]
    for epoch, record in scores.items():
        for kind in ("score", "error"):
            assert record[f"same_{kind}_output"] == pytest.approx(record[f"dev_{kind}_output"], rel=1e-6)
        assert record["other_score_output"] != pytest.approx(record["dev_score_output"], rel=1e-3)
    epoch_lines = [line for line in log.splitlines() if line.startswith("epoch ")]
    assert len(epoch_lines) == 2 and all(" same " in line and " other " in line for line in epoch_lines)
    # TensorBoard has them too, under the same names
    import tensorflow as tf

    tags = {value.tag for event_file in glob.glob(str(tmp_path / "out" / "**" / "events.*"), recursive=True)
            for event in tf.compat.v1.train.summary_iterator(event_file) for value in event.summary.value}
    assert {"same_score_output", "other_score_output", "other_error_output", "dev_score_output"} <= tags
    # --task eval scores dev and the eval_datasets, with the numbers of the last epoch (logged rounded)
    lines = [line for line in run(path, "++backend", backend, task="eval").splitlines() if "model.002" in line]
    assert [line.split("  ")[1].split()[0] for line in lines] == ["dev", "same", "other"]
    _, ce, score, fer, error = lines[2].split("  ")[1].split()
    assert (ce, fer) == ("ce", "fer")
    assert float(score) == pytest.approx(scores[2]["other_score_output"], abs=6e-4)
    assert float(error) == pytest.approx(scores[2]["other_error_output"], abs=6e-4)


@pytest.mark.slow
def test_the_error_measure_is_checked_against_the_eval_dataset_names_before_training(tmp_path):
    path, prefix = write_config(tmp_path, EVAL_DATASETS + "learning_rate_control_error_measure = 'othr_score'\n")
    with pytest.raises(InvalidOptionError, match=r"learning_rate_control_error_measure.*other_score"):
        run_task(path, [], log=io.StringIO())
    assert not glob.glob(prefix + ".*")  # nothing written


def get_from(values):
    return values.get


@pytest.mark.parametrize("values, names", [
    ({"dev": {"class": "A"}}, ["dev"]),
    ({"dev": {"class": "A"}, "eval": {"class": "B"}}, ["dev", "eval"]),
    ({"dev": {"class": "A"}, "eval_datasets": {"x": {"class": "C"}, "y": {"class": "D"}}}, ["dev", "x", "y"]),
    ({"eval_datasets": {"x": {"class": "C"}}}, ["x"]),
    ({"dev": {"class": "A"}, "train": {"class": "T"}, "eval_datasets": ["train"]}, ["train"]),
    ({"dev": {"class": "A"}, "eval": {"class": "B"}, "eval_datasets": ("eval", "dev")}, ["eval", "dev"]),
])
def test_which_datasets_eval_scores(values, names):
    chosen = eval_dataset_options(values.get, "eval")
    assert list(chosen) == names
    assert all(chosen[n] == (values.get("eval_datasets") if isinstance(values.get("eval_datasets"), dict)
                             and n in values["eval_datasets"] else values)[n] for n in names)


def test_an_eval_datasets_entry_takes_the_place_of_dev():
    chosen = eval_dataset_options({"dev": {"class": "A"}, "eval_datasets": {"dev": {"class": "Z"}}}.get, "train")
    assert chosen == {"dev": {"class": "Z"}}


def test_training_without_any_eval_dataset_scores_none():
    assert eval_dataset_options({"train": {"class": "T"}}.get, "train") == {}


@pytest.mark.parametrize("values, task, error, match", [
    ({}, "eval", ConfigError, "nothing to evaluate"),
    ({"eval_datasets": "dev"}, "eval", InvalidOptionError, r"'eval_datasets'.*expected a dict"),
    ({"eval_datasets": {"x": "dev"}}, "eval", InvalidOptionError, r"'eval_datasets'.*entry 'x' must be dataset"),
    ({"eval_datasets": {"": {"class": "A"}}}, "eval", InvalidOptionError, r"'eval_datasets'.*non-empty strings"),
    ({"eval_datasets": {3: {"class": "A"}}}, "eval", InvalidOptionError, r"'eval_datasets'.*non-empty strings"),
    ({"eval_datasets": ["dve"]}, "eval", InvalidOptionError, r"'eval_datasets'.*names 'dve'.*no dataset"),
    ({"eval_datasets": [{"class": "A"}]}, "eval", InvalidOptionError, r"'eval_datasets'.*config keys"),
    ({"train": {"class": "T"}, "eval_datasets": ["train"]}, "train", InvalidOptionError, r"overwrite the training"),
    ({"eval_datasets": {"train": {"class": "T"}}}, "train", InvalidOptionError, r"devtrain"),
])
def test_wrong_forms_are_errors_naming_the_key(values, task, error, match):
    with pytest.raises(error, match=match):
        eval_dataset_options(values.get, task)


def test_max_seq_length_in_training_is_noticed_as_not_limiting_the_eval_datasets(tmp_path, capsys):
    """RETURNN drops long sequences from dev (TF engine) or every eval dataset (PyTorch engine); here every
    sequence is scored, and a notice says so."""
    path, _ = write_config(tmp_path, "max_seq_length = 1000\nnum_epochs = 1\n")
    run(path)
    err = capsys.readouterr().err
    assert "'max_seq_length'/'min_seq_length' limit the training batches only: dev are scored" in err
    (tmp_path / "plain").mkdir()
    path, _ = write_config(tmp_path / "plain", "num_epochs = 1\n")
    run(path)
    assert "limit the training batches only" not in capsys.readouterr().err
