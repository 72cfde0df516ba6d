"""A PyTorch run (train, resume, eval) never loads TensorFlow (~500 MB, seconds of start-up); its TensorBoard
scalars are the same records the TensorFlow backend writes; a TensorFlow run still works as before."""

import glob
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from netcompiler.engine.summaries import EventFileScalarWriter, TFScalarWriter

CONFIG = """
task = "train"
train = {"class": "Task12AXDataset", "num_seqs": 20}
dev = {"class": "Task12AXDataset", "num_seqs": 10, "fixed_random_seed": 1}
extern_data = {"data": {"dim": 9}, "classes": {"dim": 2, "sparse": True}}
network = {
    "lstm": {"class": "rec", "unit": "lstm", "n_out": 8, "from": "data"},
    "ff": {"class": "linear", "activation": "tanh", "n_out": 8, "from": "lstm", "dropout": 0.1,
           "forward_weights_init": "glorot_normal"},
    "output": {"class": "softmax", "loss": "ce", "from": "ff", "target": "classes"},
}
batch_size = 500
max_seqs = 5
num_epochs = 2
learning_rate = 0.01
optimizer = {"class": "adam"}
"""

# runs compile-net's tasks in one process, then says which frameworks it loaded
SCRIPT = """
import io, json, sys
from netcompiler.engine.main import run_task
config, prefix = sys.argv[1], sys.argv[2]
logs = []
for task, overrides in (("train", []), ("train", ["++num_epochs", "3"]), ("eval", [])):
    log = io.StringIO()
    assert run_task(config, ["++model", prefix] + overrides, task=task, log=log) == 0
    logs.append(log.getvalue())
print(json.dumps({"tensorflow": "tensorflow" in sys.modules, "torch": "torch" in sys.modules, "logs": logs}))
"""


def run_tasks(tmp_path, backend):
    config = tmp_path / "config.py"
    config.write_text(CONFIG + f"backend = {backend!r}\n")
    prefix = str(tmp_path / "out" / "model")
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(config), prefix], capture_output=True, text=True,
                          timeout=600, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), prefix


def scalars(prefix):
    """{tag: {step: value}} of the TensorBoard event files beside the model, read with TensorFlow's reader."""
    import tensorflow as tf

    found = {}
    for path in glob.glob(os.path.join(os.path.dirname(prefix), "**", "events.out.tfevents.*"), recursive=True):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                found.setdefault(value.tag, {})[event.step] = float(tf.make_ndarray(value.tensor))
    return found


def epoch_lines(log):
    return [line.rsplit("  ", 1)[0] for line in log.splitlines() if line.startswith("epoch ")]


def learning_rate_file(prefix):
    with open(prefix + ".learning_rates.json") as f:
        data = json.load(f)
    return {int(e): r for e, r in (data["epochs"] if "epochs" in data else data).items()}


def check_run(result, prefix):
    train, resumed, evaluated = result["logs"]
    assert len(epoch_lines(train)) == 2 and len(epoch_lines(resumed)) == 1, result["logs"]
    assert "model.003" in evaluated, evaluated
    found = scalars(prefix)
    history = learning_rate_file(prefix)
    assert found["learning_rate"] == {1: pytest.approx(0.01), 2: pytest.approx(0.01), 3: pytest.approx(0.01)}
    for epoch, record in history.items():
        for name, value in record["scores"].items():
            assert found[name][epoch] == pytest.approx(value, rel=1e-6), (name, epoch)
    return found


@pytest.mark.slow
def test_torch_train_resume_eval_load_no_tensorflow(tmp_path):
    result, prefix = run_tasks(tmp_path, "torch")
    assert result["torch"] and not result["tensorflow"], "a PyTorch run imported TensorFlow"
    assert sorted(os.path.basename(p) for p in glob.glob(prefix + ".*.pt")) == [
        "model.001.pt", "model.002.pt", "model.003.pt"]
    check_run(result, prefix)


@pytest.mark.slow
def test_tensorflow_runs_are_unchanged(tmp_path):
    result, prefix = run_tasks(tmp_path, "tensorflow")
    assert result["tensorflow"]
    assert os.path.exists(prefix + ".003.index")
    tf_tags = set(check_run(result, prefix))
    assert {"learning_rate", "train_score_output", "dev_score_output", "dev_error_output"} <= tf_tags


# runs compile-net in one process that is expected to fail, then says what it printed and which frameworks it loaded
FAILING_SCRIPT = """
import contextlib, io, json, sys
from netcompiler.cli import compile_net_main
err = io.StringIO()
with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
    status = compile_net_main(sys.argv[1:])
print(json.dumps({"status": status, "stderr": err.getvalue(), "tensorflow": "tensorflow" in sys.modules,
                  "torch": "torch" in sys.modules}))
"""


def test_torch_run_that_fails_reports_without_loading_tensorflow(tmp_path):
    """A PyTorch run that stops with a user's error (here: the loss becomes infinite at a rate of 1e38) gives
    its message, and classifying the error on the way (is it a full disk?) loads no TensorFlow either."""
    config = tmp_path / "config.py"
    config.write_text(CONFIG + "backend = 'torch'\n")
    prefix = str(tmp_path / "out" / "model")
    overrides = ["++model", prefix, "++num_epochs", "1", "++learning_rate", "1e38", "++optimizer", '{"class": "sgd"}']
    proc = subprocess.run([sys.executable, "-c", FAILING_SCRIPT, str(config), *overrides], capture_output=True,
                          text=True, timeout=600, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    lines = [line for line in result["stderr"].splitlines() if line.startswith("error: ")]
    assert result["status"] == 2 and len(lines) == 1, result["stderr"]
    assert "loss became" in lines[0] and "Traceback" not in result["stderr"], result["stderr"]
    assert result["torch"] and not result["tensorflow"], "a failing PyTorch run imported TensorFlow"


def test_event_file_scalars_read_back_with_tensorflow(tmp_path):
    writer = EventFileScalarWriter(str(tmp_path / "tb"))
    values = {1: {"dev_score": 0.25, "learning_rate": 1e-3}, 2: {"dev_score": np.float64(0.125),
                                                                "learning_rate": 5e-4}}
    for step, record in values.items():
        writer.write(step, record)
    writer.close()
    found = scalars(str(tmp_path / "tb" / "model"))
    assert found == {"dev_score": {1: 0.25, 2: 0.125}, "learning_rate": {1: pytest.approx(1e-3), 2: pytest.approx(5e-4)}}


def test_a_second_writer_in_the_same_process_and_second_keeps_the_first_ones_scalars(tmp_path, monkeypatch):
    import netcompiler.engine.summaries as summaries

    monkeypatch.setattr(summaries.time, "time", lambda: 1795885854.5)  # a resumed run within the same second
    for step in (1, 2):
        writer = EventFileScalarWriter(str(tmp_path / "tb"))
        writer.write(step, {"learning_rate": 0.01 * step})
        writer.close()
    assert len(glob.glob(str(tmp_path / "tb" / "events.out.tfevents.*"))) == 2
    assert scalars(str(tmp_path / "tb" / "model")) == {"learning_rate": {1: pytest.approx(0.01), 2: pytest.approx(0.02)}}


def test_event_file_records_are_those_of_tf_summary(tmp_path):
    import tensorflow as tf

    record = {"dev_score_output": 0.3, "learning_rate": 0.01}
    for name, writer_class in (("tf", TFScalarWriter), ("file", EventFileScalarWriter)):
        writer = writer_class(str(tmp_path / name))
        writer.write(4, record)
        writer = getattr(writer, "writer", writer)
        writer.close()
    values = {}
    for name in ("tf", "file"):
        (path,) = glob.glob(str(tmp_path / name / "events.out.tfevents.*"))
        events = list(tf.compat.v1.train.summary_iterator(path))
        assert events[0].file_version == "brain.Event:2"
        values[name] = [(e.step, v) for e in events for v in e.summary.value]
    assert len(values["tf"]) == 2 and values["tf"] == values["file"]


@pytest.mark.parametrize("failing", [False, True], ids=["done", "stopped-by-an-error"])
def test_training_closes_its_event_file(tmp_path, monkeypatch, failing):
    import io

    from netcompiler.engine import epochs
    from netcompiler.engine.main import run_task

    closed = []
    real_close = EventFileScalarWriter.close
    monkeypatch.setattr(EventFileScalarWriter, "close", lambda self: [closed.append(self.path), real_close(self)])
    if failing:  # the second epoch's evaluation fails
        real_format = epochs.format_scores
        calls = []

        def format_scores(*args):
            calls.append(1)
            if len(calls) > 2:
                raise RuntimeError("stop")
            return real_format(*args)
        monkeypatch.setattr(epochs, "format_scores", format_scores)
    config = tmp_path / "config.py"
    config.write_text(CONFIG + "backend = 'torch'\n")
    prefix = str(tmp_path / "out" / "model")
    if failing:
        with pytest.raises(RuntimeError, match="stop"):
            run_task(str(config), ["++model", prefix], task="train", log=io.StringIO())
    else:
        assert run_task(str(config), ["++model", prefix], task="train", log=io.StringIO()) == 0
    assert len(closed) == 1 and os.path.exists(closed[0])
