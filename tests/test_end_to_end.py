"""End-to-end: `compile-net` in a subprocess on the example configs, shortened with `++` overrides.

Every test is marked slow (`pytest -m "not slow"` skips them; `pytest -m slow tests/test_end_to_end.py`
runs them, about 2-3 minutes on 2 cores). What they check, from the user's side:

* the README demo and the RETURNN-style demo train: one `epoch N ...` line per epoch, the dev frame error
  rate falls well below the majority-class rate, checkpoints and TensorBoard events are written;
* a run killed (SIGKILL) in the middle of an epoch resumes after its last checkpoint with the same
  learning-rate schedule, never touches the older checkpoints, and ends where an uninterrupted run ends;
* damaged checkpoints and data files, a non-finite loss and config mistakes end with exit status 2 and one
  `error:` line that names the file (or step), without a traceback;
* `--task eval` prints the dev scores of the newest checkpoint, `--task forward` writes one HDF sequence per
  dev sequence.

Thresholds were measured (train 1000 seqs, 3 epochs, see the tests); the majority class of 12AX ("L")
gives a frame error rate of about 0.14.
"""

import glob
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent
DEMO = str(REPO / "configs" / "demo-12ax-lstm.py")
RETURNN_DEMO = str(REPO / "configs" / "returnn-12ax-native-lstm.py")

_SCRIPT = os.path.join(os.path.dirname(sys.executable), "compile-net")
COMPILE_NET = [_SCRIPT] if os.path.exists(_SCRIPT) else [
    sys.executable, "-c", "import sys; from netcompiler.cli import compile_net_main; sys.exit(compile_net_main())"]
TIMEOUT = 300  # seconds per compile-net run; a run of these tests takes 5-25 s

# `epoch 3  train ce 0.118 fer 0.050  dev ce 0.053 fer 0.012  lr 0.01  0:00:04` (README / trainer format)
EPOCH_LINE = re.compile(r"^epoch (?P<epoch>\d+)  train ce (?P<train_ce>\d+\.\d{3}) fer (?P<train_fer>\d+\.\d{3})"
                        r"  dev ce (?P<dev_ce>\d+\.\d{3}) fer (?P<dev_fer>\d+\.\d{3})"
                        r"  lr (?P<lr>\S+)  (?P<time>\d+:\d{2}:\d{2})$")
# TensorFlow's own C++ log lines (written before netcompiler can configure anything); everything else on
# stderr is netcompiler's to answer for.
TF_LOG_LINE = re.compile(r"^([IWEF]\d{4} [\d:.]+ +\d+ \S+:\d+\] |WARNING: All log messages before absl::"
                         r"|To enable the following instructions: |This TensorFlow binary is optimized)")

# Shortened settings: the README demo's own 1000 training sequences, 3 epochs instead of 5.
SHORT = ("++num_epochs", "3")
# Measured dev FER after 3 epochs: README demo <= 0.006 (random_seed 42, 1..5), RETURNN-style demo <= 0.011
# (random_seed 42, 1..3); the majority class alone gives ~0.14.
DEV_FER_AFTER_3_EPOCHS = 0.05


def train_opts(num_seqs):
    return ("++train", repr({"class": "Task12AXDataset", "num_seqs": num_seqs}))


class Run:
    """A finished compile-net run."""

    def __init__(self, args, returncode, stdout, stderr, seconds):
        self.args, self.returncode, self.stdout, self.stderr, self.seconds = args, returncode, stdout, stderr, seconds

    @property
    def epoch_lines(self):
        return [EPOCH_LINE.match(line) for line in self.stdout.splitlines() if line.startswith("epoch ")]

    @property
    def user_stderr(self):
        """stderr without TensorFlow's C++ log lines."""
        return [line for line in self.stderr.splitlines() if line.strip() and not TF_LOG_LINE.match(line)]

    def __repr__(self):
        return (f"compile-net {' '.join(map(str, self.args))}\n-> exit {self.returncode} after {self.seconds:.1f}s\n"
                f"--- stdout:\n{self.stdout[-3000:]}\n--- stderr:\n{self.stderr[-3000:]}")


def compile_net(*args, cwd):
    started = time.monotonic()
    proc = subprocess.run(COMPILE_NET + [str(a) for a in args], cwd=str(cwd), capture_output=True, text=True,
                          timeout=TIMEOUT)
    return Run(args, proc.returncode, proc.stdout, proc.stderr, time.monotonic() - started)


def assert_trained(run, num_epochs, first_epoch=1):
    """Exit 0 and one well-formed `epoch N` line per epoch, in order; returns the matches."""
    assert run.returncode == 0, run
    lines = run.epoch_lines
    assert all(lines), f"an `epoch` line is not in the documented format:\n{run}"
    assert [int(m["epoch"]) for m in lines] == list(range(first_epoch, num_epochs + 1)), run
    return lines


def the_error_line(run):
    """Exit 2, no traceback, and exactly one line of netcompiler's on stderr, an `error:` line."""
    assert run.returncode == 2, run
    assert "Traceback" not in run.stderr, run
    lines = run.user_stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), run
    return lines[0]


def model_files(prefix, epoch):
    return sorted(glob.glob(f"{glob.escape(prefix)}.{epoch:03d}.*"))


def fingerprint(paths):
    """Content hash, inode and mtime of each file: equal fingerprints mean the file was not rewritten."""
    result = {}
    for path in paths:
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        stat = os.stat(path)
        result[path] = (digest, stat.st_ino, stat.st_mtime_ns)
    return result


def history(prefix):
    """The learning-rate history next to the model: {epoch: {"learning_rate": .., "scores": {..}}}."""
    with open(f"{prefix}.learning_rates.json", encoding="utf-8") as f:
        return {int(epoch): entry for epoch, entry in json.load(f)["epochs"].items()}


# --------------------------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """The README demo, 3 epochs, trained once for several tests (which copy it before changing anything)."""
    workdir = tmp_path_factory.mktemp("demo")
    prefix = str(workdir / "out" / "12ax" / "model")
    run = compile_net(DEMO, *SHORT, "++model", prefix, cwd=workdir)
    return {"run": run, "prefix": prefix, "dir": workdir / "out" / "12ax"}


def copy_model(trained, tmp_path):
    target = tmp_path / "out" / "12ax"
    shutil.copytree(trained["dir"], target)
    return str(target / "model")


# --------------------------------------------------------------------------------------------- 1, 2: training

def test_readme_demo_trains(trained):
    run, prefix = trained["run"], trained["prefix"]
    lines = assert_trained(run, 3)
    assert run.user_stderr == [], run
    dev_fer = [float(m["dev_fer"]) for m in lines]
    assert dev_fer[-1] < dev_fer[0], run
    assert dev_fer[-1] < DEV_FER_AFTER_3_EPOCHS, run
    assert all(float(m["lr"]) == 0.01 for m in lines), run
    for epoch in (1, 2, 3):
        names = [os.path.basename(p) for p in model_files(prefix, epoch)]
        assert f"model.{epoch:03d}.index" in names, names
        assert any(n.startswith(f"model.{epoch:03d}.data-") for n in names), names
    assert not model_files(prefix, 4)
    events = glob.glob(os.path.join(os.path.dirname(prefix), "**", "events.out.tfevents.*"), recursive=True)
    assert events, os.listdir(os.path.dirname(prefix))
    content = b"".join(Path(p).read_bytes() for p in events)
    for tag in (b"dev_error_output", b"train_score_output", b"learning_rate"):
        assert tag in content, f"no TensorBoard scalar {tag!r} in {events}"


def test_returnn_style_demo_trains_unchanged(tmp_path):
    prefix = str(tmp_path / "out" / "model")
    run = compile_net(RETURNN_DEMO, *SHORT, "++model", prefix, cwd=tmp_path)
    lines = assert_trained(run, 3)
    # RETURNN-only settings (use_tensorflow, device, log_verbosity) are accepted with a notice, nothing else
    assert run.user_stderr and all(line.startswith("notice: ") for line in run.user_stderr), run
    assert any("'device'" in line for line in run.user_stderr), run
    dev_fer = [float(m["dev_fer"]) for m in lines]
    assert dev_fer[-1] < dev_fer[0], run
    assert dev_fer[-1] < DEV_FER_AFTER_3_EPOCHS, run
    assert os.path.exists(f"{prefix}.003.index")


# --------------------------------------------------------------------------------------------- 3: resume

# 3000 sequences make an epoch last ~2-3 s, long enough to kill the run in the middle of one. newbob with a
# threshold no change can stay below halves the rate after every epoch from the third on (0.01, 0.01,
# 0.005, 0.0025), so a resumed run can only get its rates right from the history file.
RESUME = ("++num_epochs", "4", *train_opts(3000), "++learning_rate_control", "newbob",
          "++newbob_relative_error_threshold", "-1e9")


def start_and_kill_in_epoch_3(prefix, cwd):
    """Starts training, SIGKILLs it a quarter epoch after checkpoint 2 (epoch 3 under way); returns stdout."""
    stderr_path = os.path.join(str(cwd), "killed.stderr")
    with open(stderr_path, "w") as stderr:
        proc = subprocess.Popen(COMPILE_NET + [DEMO, *RESUME, "++model", prefix], cwd=str(cwd),
                                stdout=subprocess.PIPE, stderr=stderr, text=True)
        seen = []
        watchdog = threading.Timer(TIMEOUT, proc.kill)  # a hanging run must not hang the tests
        watchdog.start()
        try:
            for line in proc.stdout:  # the epoch line is printed (flushed) after its checkpoint is complete
                seen.append(line)
                if line.startswith("epoch 1 "):
                    epoch_1_ended = time.monotonic()
                if line.startswith("epoch 2 "):
                    # a quarter of epoch 2's length into epoch 3: well inside it however fast this machine is
                    time.sleep((time.monotonic() - epoch_1_ended) / 4)
                    break
            else:
                raise AssertionError("the run ended before epoch 2:\n" + "".join(seen) + open(stderr_path).read())
            proc.send_signal(signal.SIGKILL)
            rest, _ = proc.communicate(timeout=60)
            seen.append(rest)
        finally:
            watchdog.cancel()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == -signal.SIGKILL, "".join(seen)
    return "".join(seen)


def test_killed_run_resumes_after_last_checkpoint(tmp_path):
    prefix = str(tmp_path / "out" / "model")
    killed_stdout = start_and_kill_in_epoch_3(prefix, tmp_path)
    assert "epoch 3 " not in killed_stdout
    assert os.path.exists(f"{prefix}.002.index")
    assert not os.path.exists(f"{prefix}.003.index"), "the kill came after epoch 3 ended; make epochs longer"
    old_files = model_files(prefix, 1) + model_files(prefix, 2)
    before = fingerprint(old_files)
    history_before = history(prefix)
    assert [history_before[e]["learning_rate"] for e in (1, 2)] == [0.01, 0.01]
    assert all(history_before[e]["scores"] for e in (1, 2))
    assert set(history_before) <= {1, 2, 3}
    if 3 in history_before:  # epoch 3's rate, if already recorded when it started, is the decayed one
        assert history_before[3]["learning_rate"] == 0.005

    run = compile_net(DEMO, *RESUME, "++model", prefix, cwd=tmp_path)
    lines = assert_trained(run, 4, first_epoch=3)
    assert f"resuming after epoch 2 from {prefix}.002" in run.stdout, run
    assert [float(m["lr"]) for m in lines] == [0.005, 0.0025], run
    assert run.user_stderr == [], run

    assert fingerprint(old_files) == before, "checkpoints 1 and 2 were rewritten"
    assert model_files(prefix, 1) + model_files(prefix, 2) == old_files
    assert os.path.exists(f"{prefix}.004.index")
    assert not [n for n in os.listdir(os.path.dirname(prefix)) if ".tmp-" in n]
    history_after = history(prefix)
    assert sorted(history_after) == [1, 2, 3, 4]
    for epoch in (1, 2):
        assert history_after[epoch] == history_before[epoch], epoch

    # ... and it ends where an uninterrupted run of the same command ends (training is deterministic:
    # random_seed, no dropout, dataset order seeded by epoch).
    reference_prefix = str(tmp_path / "reference" / "model")
    reference = compile_net(DEMO, *RESUME, "++model", reference_prefix, cwd=tmp_path)
    assert_trained(reference, 4)
    expected = history(reference_prefix)
    for epoch in (1, 2, 3, 4):
        assert history_after[epoch]["learning_rate"] == expected[epoch]["learning_rate"], epoch
        for name, value in expected[epoch]["scores"].items():
            assert history_after[epoch]["scores"][name] == pytest.approx(value, rel=1e-3, abs=1e-5), (epoch, name)


# --------------------------------------------------------------------------------------------- 4: damaged files

@pytest.mark.parametrize("damaged", ["index", "data"])
def test_damaged_checkpoint_is_reported_by_name(trained, tmp_path, damaged):
    assert trained["run"].returncode == 0, trained["run"]
    prefix = copy_model(trained, tmp_path)
    path = f"{prefix}.003.index" if damaged == "index" else glob.glob(f"{glob.escape(prefix)}.003.data-*")[0]
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) // 2)
    untouched = fingerprint(model_files(prefix, 1) + model_files(prefix, 2) + model_files(prefix, 3))

    run = compile_net(DEMO, "++num_epochs", "4", "++model", prefix, cwd=tmp_path)
    line = the_error_line(run)
    assert path in line, line
    assert "damaged" in line or "truncated" in line, line
    assert run.epoch_lines == [], run
    assert fingerprint(list(untouched)) == untouched, "the failed run changed checkpoint files"
    assert not model_files(prefix, 4)


@pytest.mark.parametrize("kind", ["garbage", "truncated"])
def test_broken_hdf_training_data_is_reported_by_name(tmp_path, kind):
    from netcompiler.engine.datasets.hdf_writer import write_hdf

    path = tmp_path / f"{kind}.hdf"
    if kind == "garbage":
        path.write_bytes(np.random.RandomState(0).bytes(4096))
    else:
        rng = np.random.RandomState(0)
        seqs = [{"data": np.eye(9, dtype=np.float32)[rng.randint(9, size=n)],
                 "classes": rng.randint(2, size=n).astype(np.int32)} for n in rng.randint(10, 50, size=100)]
        write_hdf(str(path), seqs, dims={"classes": 2})
        content = path.read_bytes()
        path.write_bytes(content[:len(content) // 2])
    run = compile_net(DEMO, "++train", repr({"class": "HDFDataset", "files": [str(path)]}),
                      "++model", str(tmp_path / "out" / "model"), cwd=tmp_path)
    line = the_error_line(run)
    assert str(path) in line, line
    assert run.epoch_lines == [], run


# --------------------------------------------------------------------------------------------- 5: eval, forward

EVAL_LINE = re.compile(r"^(?P<path>\S+)  dev ce (?P<dev_ce>\d+\.\d{3}) fer (?P<dev_fer>\d+\.\d{3})$")


def dev_dataset():
    from netcompiler.config import load_config
    from netcompiler.engine.datasets import make_dataset

    dataset = make_dataset(load_config(DEMO).get("dev"), "dev")
    dataset.init_epoch(1)
    return dataset


# `chunking` (as RETURNN configs set it for training) must not cut dev sequences: RETURNN evaluates and
# forwards whole sequences (dev/eval get chunking "0" unless `chunk_eval`).
WITH_CHUNKING = ("++chunking", '"10:10"')


@pytest.mark.parametrize("extra", [(), WITH_CHUNKING], ids=["plain", "chunking"])
def test_eval_prints_dev_scores_of_newest_checkpoint(trained, tmp_path, extra):
    assert trained["run"].returncode == 0, trained["run"]
    prefix = copy_model(trained, tmp_path)
    run = compile_net(DEMO, "--task", "eval", *extra, "++model", prefix, cwd=tmp_path)
    assert run.returncode == 0, run
    assert run.epoch_lines == [], run
    scores = [m for m in map(EVAL_LINE.match, run.stdout.splitlines()) if m]
    assert len(scores) == 1, run
    assert scores[0]["path"] == f"{prefix}.003"
    last = trained["run"].epoch_lines[-1]
    assert (scores[0]["dev_ce"], scores[0]["dev_fer"]) == (last["dev_ce"], last["dev_fer"]), run
    assert not model_files(prefix, 4)


@pytest.mark.parametrize("extra", [(), WITH_CHUNKING], ids=["plain", "chunking"])
def test_forward_writes_one_hdf_sequence_per_dev_sequence(trained, tmp_path, extra):
    from netcompiler.engine.datasets import HDFDataset

    assert trained["run"].returncode == 0, trained["run"]
    prefix = copy_model(trained, tmp_path)
    output = tmp_path / "forward.hdf"
    run = compile_net(DEMO, "--task", "forward", *extra, "++model", prefix, "++output_file", str(output),
                      cwd=tmp_path)
    assert run.returncode == 0, run
    assert "Traceback" not in run.stderr, run
    assert str(output) in run.stdout, run

    dev = dev_dataset()
    with HDFDataset("forwarded", files=[str(output)]) as forwarded:
        forwarded.init_epoch(1)
        assert forwarded.num_seqs() == dev.num_seqs() == 100
        spec = forwarded.data_spec()["data"]
        assert (spec.dim, spec.sparse) == (2, False)
        errors = frames = 0
        for i in range(dev.num_seqs()):
            assert forwarded.seq_tag(i) == dev.seq_tag(i)
            probs, reference = forwarded.get_seq(i)["data"], dev.get_seq(i)
            assert probs.shape == (reference["data"].shape[0], 2), i
            np.testing.assert_allclose(probs.sum(axis=-1), 1.0, rtol=1e-5)
            errors += int((probs.argmax(axis=-1) != reference["classes"]).sum())
            frames += len(probs)
    # the outputs are the trained model's: their frame error rate is the dev FER of the last epoch
    assert errors / frames == pytest.approx(float(trained["run"].epoch_lines[-1]["dev_fer"]), abs=6e-4)

    if not extra:  # the same command again replaces the output file (as RETURNN's forward does)
        written = output.stat().st_mtime_ns
        again = compile_net(DEMO, "--task", "forward", "++model", prefix, "++output_file", str(output),
                            cwd=tmp_path)
        assert again.returncode == 0, again
        assert output.stat().st_mtime_ns != written


# --------------------------------------------------------------------------------------------- 6: non-finite loss

# epoch 1 trains normally; epoch 2's rate (1e38, plain SGD) makes the parameters infinite after one step
NONFINITE = (*train_opts(200), "++num_epochs", "3", "++optimizer", '"sgd"')


@pytest.fixture(scope="module")
def nonfinite(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("nonfinite")
    prefix = str(workdir / "out" / "model")
    run = compile_net(DEMO, *NONFINITE, "++learning_rates", "[0.01, 1e38]", "++model", prefix, cwd=workdir)
    return {"run": run, "prefix": prefix, "dir": workdir / "out"}


def test_nonfinite_loss_stops_with_last_good_checkpoint(nonfinite):
    run, prefix = nonfinite["run"], nonfinite["prefix"]
    line = the_error_line(run)
    assert re.search(r"loss became -?(nan|inf)\b", line), line
    assert re.search(r"\bepoch 2, step \d+\b", line), line
    assert "'output'" in line, line  # which loss
    assert f"last good checkpoint is {prefix}.001" in line, line
    assert [int(m["epoch"]) for m in run.epoch_lines] == [1], run
    assert os.path.exists(f"{prefix}.001.index")
    assert not model_files(prefix, 2), "a checkpoint (or part of one) was written for the failing epoch"
    assert not [n for n in os.listdir(os.path.dirname(prefix)) if ".tmp-" in n]


def test_rerun_with_lower_rate_after_nonfinite_loss_resumes(nonfinite, tmp_path):
    """The message says "Try a lower learning_rate": doing so continues from the last good checkpoint with it
    (the rate recorded for the failed epoch, which never reached a checkpoint, must not stick)."""
    assert nonfinite["run"].returncode == 2, nonfinite["run"]
    shutil.copytree(nonfinite["dir"], tmp_path / "out")
    prefix = str(tmp_path / "out" / "model")
    run = compile_net(DEMO, *NONFINITE, "++learning_rates", "[0.01, 0.001]", "++model", prefix, cwd=tmp_path)
    lines = assert_trained(run, 3, first_epoch=2)
    assert f"resuming after epoch 1 from {prefix}.001" in run.stdout, run
    assert [float(m["lr"]) for m in lines] == [0.001, 0.001], run
    assert [history(prefix)[e]["learning_rate"] for e in (1, 2, 3)] == [0.01, 0.001, 0.001]


# --------------------------------------------------------------------------------------------- 7: config mistakes

def line_of(path, needle):
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} not in {path}")


@pytest.mark.parametrize("old, new, located_at, expected", [
    ('"n_out": 10', '"n_ot": 10', '"n_ot"',
     "layer 'lstm': option 'n_ot' unknown for class 'rec' -- did you mean 'n_out'?"),
    ('"num_seqs": 1000', '"num_seq": 1000', '"num_seq"', "option 'num_seq' unknown"),
    ('{"class": "adam"}', '{"class": "adam", "epsilom": 1e-8}', '"epsilom"', "option 'epsilom' unknown"),
    ("batch_size = 5000", 'batch_size = "5000"', "batch_size = ",
     "config key 'batch_size': must be a positive int"),
    ("num_epochs = 5", "num_epochs = 0", "num_epochs = ", "config key 'num_epochs': must be a positive int"),
    # found while the network is built, which knows only the file: the key's line is filled in
    ('extern_data = {"data": {"dim": 9}, "classes": {"dim": 2, "sparse": True}}',
     'num_inputs = 9\nnum_outputs = {"classes": "x"}', "num_outputs = ",
     "config key 'num_outputs': num_outputs['classes'] must be dim, [dim, ndim] or a dict of data options"),
], ids=["layer-option", "dataset-option", "optimizer-option", "batch-size", "num-epochs", "num-outputs"])
def test_config_mistake_is_one_line_with_file_and_line(tmp_path, old, new, located_at, expected):
    source = Path(DEMO).read_text(encoding="utf-8")
    assert old in source
    config = tmp_path / "typo.py"
    config.write_text(source.replace(old, new, 1), encoding="utf-8")
    run = compile_net(config, "++model", str(tmp_path / "out" / "model"), cwd=tmp_path)
    line = the_error_line(run)
    assert line.startswith(f"error: {config}:{line_of(config, located_at)}: "), line
    assert expected in line, line
    assert run.epoch_lines == [], run
    assert not os.path.exists(tmp_path / "out")
