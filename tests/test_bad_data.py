"""Bad data is named where it is read (issue 10, item 3): a class index outside [0, dim) and a NaN or inf in
features end in a DataContentError naming the file, the sequence (index in the file and tag), the data key and
what is wrong, with a suggestion -- not in a TensorFlow traceback or "the loss became nan".

The per-sequence check lives in the Dataset base class (`check_seq`, run once per sequence by `get_seq`);
the dim it checks against is the network's extern_data dim when the engine set it (`expect_dims`), else the
dataset's own. `compile-net` ends with exit status 2, one `error:` line, and the checkpoints of earlier
epochs untouched.
"""

import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from netcompiler.engine.batching import iterate_batches, parse_batching
from netcompiler.engine.datasets import HDFDataset, StaticDataset, make_dataset
from netcompiler.engine.datasets.hdf_writer import write_hdf
from netcompiler.errors import DataContentError, DataFileError, NetcompilerError

REPO = Path(__file__).resolve().parent.parent
DEMO = str(REPO / "configs" / "demo-12ax-lstm.py")
_SCRIPT = os.path.join(os.path.dirname(sys.executable), "compile-net")
COMPILE_NET = [_SCRIPT] if os.path.exists(_SCRIPT) else [
    sys.executable, "-c", "import sys; from netcompiler.cli import compile_net_main; sys.exit(compile_net_main())"]
TF_LOG_LINE = re.compile(r"^([IWEF]\d{4} [\d:.]+ +\d+ \S+:\d+\] |WARNING: All log messages before absl::"
                         r"|To enable the following instructions: |This TensorFlow binary is optimized)")
NUM_SEQS = 20


def demo_seqs(seed=0):
    """12AX-shaped data as the demo config reads it: 9 one-hot features, 2 classes."""
    rng = np.random.RandomState(seed)
    return [{"data": np.eye(9, dtype=np.float32)[rng.randint(9, size=n)],
             "classes": rng.randint(2, size=n).astype(np.int32)} for n in rng.randint(5, 12, size=NUM_SEQS)]


def write(path, seqs=None, prefix="utt", **kwargs):
    seqs = demo_seqs() if seqs is None else seqs
    write_hdf(str(path), seqs, tags=[f"{prefix}{i}" for i in range(len(seqs))], **kwargs)
    return str(path)


def poke(path, key, seq, frame, value, feature=None):
    """Overwrite one value of sequence `seq` in a written file (the writer refuses bad values itself)."""
    with h5py.File(path, "r+") as h5:
        name = "inputs" if key == "data" else f"targets/data/{key}"
        keys = (["data"] if "inputs" in h5 else []) + sorted(h5["targets/data"].keys())
        start = int(h5["seqLengths"][:seq, keys.index(key)].sum())
        if feature is None:
            h5[name][start + frame] = value
        else:
            row = h5[name][start + frame]
            row[feature] = value
            h5[name][start + frame] = row


def read_all(dataset, epoch=1):
    dataset.init_epoch(epoch)
    return [dataset.get_seq(i) for i in range(dataset.num_seqs())]


# ---------------------------------------------------------------------------
# The dataset reading path


def test_valid_file_passes(tmp_path):
    path = write(tmp_path / "good.hdf", dims={"classes": 2})
    dataset = HDFDataset(name="train", files=[path])
    dataset.expect_dims({"classes": 2})
    assert len(read_all(dataset)) == NUM_SEQS
    dataset.init_epoch(2)
    batches = list(iterate_batches(dataset, parse_batching(batch_size=40, max_seqs=4)))
    assert sum(b.num_seqs for b in batches) == NUM_SEQS


def test_class_index_at_least_the_declared_dim(tmp_path):
    path = write(tmp_path / "labels.hdf", dims={"classes": 2})
    poke(path, "classes", seq=7, frame=3, value=5)
    dataset = HDFDataset(name="train", files=[path])
    with pytest.raises(DataContentError) as info:
        read_all(dataset)
    message = str(info.value)
    assert isinstance(info.value, DataFileError) and isinstance(info.value, NetcompilerError)
    assert f"data file '{path}'" in message
    assert "sequence 7 (tag 'utt7')" in message
    assert "class index 5 at frame 3 >= dim 2 of data key 'classes'" in message
    assert "--" in message and "extern_data" in message  # a suggestion


def test_negative_class_index(tmp_path):
    path = write(tmp_path / "labels.hdf", dims={"classes": 2})
    poke(path, "classes", seq=0, frame=1, value=-1)
    with pytest.raises(DataContentError, match=r"sequence 0 \(tag 'utt0'\): negative class index -1 at frame 1 "
                                               r"of data key 'classes'"):
        read_all(HDFDataset(files=[path]))


def test_network_dim_is_what_counts(tmp_path):
    """A file that declares 6 classes (or none: RETURNN's placeholder) read by a network with 2: checked
    against the network's 2; without the engine's dims the file's own dim applies."""
    seqs = demo_seqs()
    seqs[3]["classes"][2] = 5
    path = write(tmp_path / "six.hdf", seqs)  # dim = largest index + 1 = 6
    assert len(read_all(HDFDataset(files=[path]))) == NUM_SEQS
    dataset = HDFDataset(name="train", files=[path])
    dataset.expect_dims({"classes": 2, "data": None})
    with pytest.raises(DataContentError, match=r"sequence 3 \(tag 'utt3'\): class index 5 at frame 2 >= dim 2"):
        read_all(dataset)


@pytest.mark.parametrize("value, shown", [(np.nan, "NaN"), (np.inf, "inf"), (-np.inf, "-inf")])
def test_non_finite_features(tmp_path, value, shown):
    path = write(tmp_path / "feats.hdf", dims={"classes": 2})
    poke(path, "data", seq=12, frame=4, value=value, feature=2)
    with pytest.raises(DataContentError) as info:
        read_all(HDFDataset(name="train", files=[path]))
    message = str(info.value)
    assert f"data file '{path}': sequence 12 (tag 'utt12'): {shown} in features of data key 'data' at frame 4" \
        in message, message
    assert "learning_rate will not help" in message


def test_second_file_is_named_with_its_own_sequence_number(tmp_path):
    first = write(tmp_path / "a.hdf", dims={"classes": 2}, prefix="a")
    second = write(tmp_path / "b.hdf", demo_seqs(seed=1), dims={"classes": 2}, prefix="b")
    poke(second, "data", seq=2, frame=0, value=np.nan, feature=0)
    dataset = make_dataset({"class": "HDFDataset", "files": [first, second]}, "train")
    with pytest.raises(DataContentError) as info:
        read_all(dataset)
    assert f"data file '{second}': sequence 2 (tag 'b2'): NaN" in str(info.value)


def test_each_sequence_is_checked_once(tmp_path, monkeypatch):
    path = write(tmp_path / "good.hdf", dims={"classes": 2})
    dataset = HDFDataset(files=[path])
    checked = []
    original = HDFDataset.check_seq
    monkeypatch.setattr(HDFDataset, "check_seq", lambda self, i, arrays: (checked.append(i), original(self, i, arrays)))
    read_all(dataset, 1)
    read_all(dataset, 2)
    assert sorted(checked) == list(range(NUM_SEQS))


def test_every_dataset_is_checked(tmp_path):
    data = [{"data": np.zeros((3, 2), np.float32), "classes": np.array([0, 1, 2], np.int32)},
            {"data": np.zeros((2, 2), np.float32), "classes": np.array([0, 3], np.int32)}]
    dataset = StaticDataset(name="mine", data=data, output_dim={"classes": 4})  # checks its own dims itself
    dataset.expect_dims({"classes": 3})  # a network with 3 classes
    with pytest.raises(DataContentError, match=r"^dataset 'mine': sequence 1 \(tag '[^']*'\): class index 3 at "
                                               r"frame 1 >= dim 3 of data key 'classes'"):
        read_all(dataset)


# ---------------------------------------------------------------------------
# compile-net: exit 2, one error line, earlier checkpoints untouched


def compile_net(*args, cwd):
    proc = subprocess.run(COMPILE_NET + [str(a) for a in args], cwd=str(cwd), capture_output=True, text=True,
                          timeout=300)
    return proc


def the_error_line(proc):
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip() and not TF_LOG_LINE.match(line)]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]


def fingerprint(paths):
    result = {}
    for path in paths:
        with open(path, "rb") as f:
            result[path] = (hashlib.sha256(f.read()).hexdigest(), os.stat(path).st_mtime_ns)
    return result


@pytest.fixture(scope="module")
def one_epoch(tmp_path_factory):
    """The demo config trained one epoch on a small valid HDF file."""
    folder = tmp_path_factory.mktemp("trained")
    good = write(folder / "good.hdf", dims={"classes": 2})
    proc = compile_net(DEMO, "++train", repr({"class": "HDFDataset", "files": [good]}), "++num_epochs", "1",
                       "++model", str(folder / "out" / "model"), cwd=folder)
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert glob.glob(str(folder / "out" / "model.001.*"))
    return folder


@pytest.mark.parametrize("kind", ["label", "nan"])
def test_compile_net_names_the_bad_sequence_and_keeps_the_checkpoint(one_epoch, tmp_path, kind):
    shutil.copytree(one_epoch / "out", tmp_path / "out")
    prefix = str(tmp_path / "out" / "model")
    path = write(tmp_path / f"{kind}.hdf", dims={"classes": 2})
    if kind == "label":
        poke(path, "classes", seq=9, frame=2, value=7)
        expected = "sequence 9 (tag 'utt9'): class index 7 at frame 2 >= dim 2 of data key 'classes'"
    else:
        poke(path, "data", seq=9, frame=2, value=np.nan, feature=5)
        expected = "sequence 9 (tag 'utt9'): NaN in features of data key 'data' at frame 2"
    saved = sorted(glob.glob(f"{prefix}.001.*"))
    before = fingerprint(saved)
    proc = compile_net(DEMO, "++train", repr({"class": "HDFDataset", "files": [path]}), "++num_epochs", "2",
                       "++model", prefix, cwd=tmp_path)
    line = the_error_line(proc)
    assert f"data file '{path}': {expected}" in line, line
    assert "loss became" not in line
    assert fingerprint(saved) == before
    assert not glob.glob(f"{prefix}.002.*")


def test_truncated_file_is_named_and_a_rerun_with_good_data_resumes(one_epoch, tmp_path):
    """A damaged data file (cut in half, as by a full disk during a copy) stops the run before it trains, naming
    the file; the checkpoint is untouched, and the same command on a good file resumes after it."""
    shutil.copytree(one_epoch / "out", tmp_path / "out")
    prefix = str(tmp_path / "out" / "model")
    path = Path(write(tmp_path / "cut.hdf", dims={"classes": 2}))
    content = path.read_bytes()
    path.write_bytes(content[:len(content) // 2])
    saved = sorted(glob.glob(f"{prefix}.001.*"))
    before = fingerprint(saved)
    proc = compile_net(DEMO, "++train", repr({"class": "HDFDataset", "files": [str(path)]}), "++num_epochs", "2",
                       "++model", prefix, cwd=tmp_path)
    line = the_error_line(proc)
    assert str(path) in line, line
    assert fingerprint(saved) == before
    good = write(tmp_path / "good.hdf", dims={"classes": 2})
    proc = compile_net(DEMO, "++train", repr({"class": "HDFDataset", "files": [good]}), "++num_epochs", "2",
                       "++model", prefix, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "resuming after epoch 1" in proc.stdout
    assert fingerprint(saved) == before and glob.glob(f"{prefix}.002.*")
