"""The learning-curve PNG that training draws after each epoch (engine/learning_curve.py): written beside the
model on both backends, redrawn every epoch from the learning-rate history, skipped with one notice when
matplotlib is missing, switched off by `learning_curve_file = None`."""

import io
import struct
import sys

import pytest

from netcompiler.engine.learning_curve import LearningCurve, learning_curve_path, score_series, wide_range
from netcompiler.engine.main import run_task
from netcompiler.errors import ConfigError
from tests.run_helpers import task_12ax_config

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
CONFIG = """
task = "train"
""" + task_12ax_config(20, 6, batch_size=2000) + """
network = {"hidden": {"class": "linear", "activation": "tanh", "n_out": 8, "from": "data"},
           "output": {"class": "softmax", "loss": "ce", "from": "hidden", "target": "classes"}}
optimizer = {"class": "adam"}
learning_rates = [0.01, 0.001]
num_epochs = 2
torch_num_threads = 1
model = %r
"""


def write_config(tmp_path, extra=""):
    prefix = str(tmp_path / "out" / "model")
    path = tmp_path / "config.py"
    path.write_text(CONFIG % prefix + extra)
    return str(path), prefix


def train(path, *overrides):
    log = io.StringIO()
    assert run_task(path, list(overrides), log=log) == 0
    return log.getvalue()


def png_size(data: bytes):
    """(width, height) from a PNG's IHDR chunk."""
    assert data[:8] == PNG_MAGIC and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


@pytest.fixture
def drawn(monkeypatch):
    """Each update's history (its epochs) and the file's bytes right after it."""
    pytest.importorskip("matplotlib")
    calls = []
    original = LearningCurve.update

    def spy(self, history, last_epoch):
        original(self, history, last_epoch)
        with open(self.path, "rb") as f:
            calls.append((sorted(e for e in history if e <= last_epoch), f.read()))

    monkeypatch.setattr(LearningCurve, "update", spy)
    return calls


@pytest.mark.parametrize("backend", ["tensorflow", "torch"])
def test_curve_png_is_redrawn_after_each_epoch(tmp_path, drawn, backend):
    if backend == "torch":
        pytest.importorskip("torch")
    path, prefix = write_config(tmp_path)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "model.curve.png.tmp-k3_9xq2a").write_bytes(b"half a picture")  # an interrupted write
    out = train(path, "++backend", backend)
    assert "learning curve" not in out
    assert [epochs for epochs, _ in drawn] == [[1], [1, 2]]
    first, second = drawn[0][1], drawn[1][1]
    assert first != second  # redrawn with epoch 2 (another point, another learning rate)
    for data in (first, second):
        width, height = png_size(data)
        assert width > 100 and height > 100
    with open(prefix + ".curve.png", "rb") as f:
        assert f.read() == second
    assert [p.name for p in (tmp_path / "out").iterdir() if ".tmp-" in p.name] == []  # no temp left


def test_named_file_and_switched_off(tmp_path, drawn):
    path, prefix = write_config(tmp_path, "learning_curve_file = %r\n" % str(tmp_path / "pics" / "lc.png"))
    train(path, "++num_epochs", "1")
    assert (tmp_path / "pics" / "lc.png").read_bytes()[:8] == PNG_MAGIC
    assert not (tmp_path / "out" / "model.curve.png").exists()

    path, prefix = write_config(tmp_path / "pics", "learning_curve_file = None\n")
    train(path, "++num_epochs", "1")
    assert drawn and len(drawn) == 1  # only the first run drew
    assert not (tmp_path / "pics" / "out" / "model.curve.png").exists()
    assert list((tmp_path / "pics" / "out").glob("*.png")) == []


def test_without_matplotlib_training_goes_on_with_one_notice(tmp_path, monkeypatch):
    for name in ("matplotlib", "matplotlib.figure", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, name, None)  # `import` of it raises ImportError
    path, prefix = write_config(tmp_path)
    out = train(path)
    assert out.count("notice: the learning curve is not drawn") == 1
    assert "matplotlib" in out and "netcompiler[plot]" in out
    assert [line.split()[1] for line in out.splitlines() if line.startswith("epoch ")] == ["1", "2"]
    assert not (tmp_path / "out" / "model.curve.png").exists()


def test_path_setting():
    assert learning_curve_path({}, "out/model", True) == "out/model.curve.png"
    assert learning_curve_path({}, "out/model", False) is None  # model = None: nothing beside a model
    assert learning_curve_path({"learning_curve_file": "a.png"}, "out/model", False) == "a.png"
    assert learning_curve_path({"learning_curve_file": None}, "out/model", True) is None
    with pytest.raises(ConfigError, match="learning_curve_file.*file name or None"):
        learning_curve_path({"learning_curve_file": 3}, "out/model", True)


def test_series_and_scales():
    history = {2: (0.001, {"dev_score_output": 0.5, "train_score_output": float("nan")}),
               1: (0.01, {"train_score_output": 2.0, "dev_score_output": 1.0})}
    assert score_series(history) == {"train_score_output": ([1], [2.0]),
                                     "dev_score_output": ([1, 2], [1.0, 0.5])}
    assert wide_range([0.01, 0.001, 0.0001])
    assert not wide_range([0.01, 0.002])
    assert not wide_range([-1.0, 20.0])  # no log scale for values <= 0
    assert not wide_range([])


def test_unwritable_path_is_one_notice(tmp_path):
    pytest.importorskip("matplotlib")
    blocker = tmp_path / "file"
    blocker.write_text("")
    log = io.StringIO()
    curve = LearningCurve(str(blocker / "curve.png"), log)  # a folder that is a file
    curve.update({1: (0.1, {"train_score_output": 1.0})}, 1)
    curve.update({1: (0.1, {"train_score_output": 1.0}), 2: (0.1, {"train_score_output": 0.5})}, 2)
    assert log.getvalue().count("notice: the learning curve is not drawn") == 1
    assert "cannot be written" in log.getvalue() and blocker.read_text() == ""  # what is in the way is untouched


def test_epochs_after_the_current_one_are_not_drawn(tmp_path):
    """The history already holds the rates of a `learning_rates` list for later epochs: not yet points."""
    pytest.importorskip("matplotlib")
    done = {1: (0.01, {"train_score_output": 1.0, "dev_score_output": 1.2})}
    pictures = []
    for name, history in (("a.png", done), ("b.png", {**done, 2: (0.001, {})}), ("c.png", {**done, 2: (0.5, {})})):
        LearningCurve(str(tmp_path / name), io.StringIO()).update(history, 1)
        pictures.append((tmp_path / name).read_bytes())
    assert pictures[0] == pictures[1] == pictures[2]
    LearningCurve(str(tmp_path / "d.png"), io.StringIO()).update({**done, 2: (0.5, {})}, 2)
    assert (tmp_path / "d.png").read_bytes() != pictures[0]
