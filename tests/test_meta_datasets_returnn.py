"""MetaDataset and CombinedDataset against RETURNN: the same cases on the same HDF files (and generated datasets)
give the same sequences in the same order, epoch by epoch.

The record (`tests/fixtures/meta_datasets/returnn.json`: per sequence its tag, frames and sum per data key) and
the HDF files are made by `tools/record_returnn_meta_datasets.py`, whose CASES this test builds with netcompiler.
"""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from netcompiler.engine.datasets import make_dataset

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "meta_datasets" / "returnn.json"


def _tool():
    spec = importlib.util.spec_from_file_location("record_returnn_meta_datasets",
                                                  ROOT / "tools" / "record_returnn_meta_datasets.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TOOL = _tool()
RECORD = json.loads(FIXTURE.read_text())["cases"]


def _our_epoch(dataset, epoch):
    dataset.init_epoch(epoch)
    seqs = []
    for index in range(dataset.num_seqs()):
        arrays = dataset.get_seq(index)
        seqs.append({"tag": dataset.seq_tag(index),
                     "lengths": {key: int(a.shape[0]) for key, a in arrays.items()},
                     "sums": {key: float(np.asarray(a, dtype=np.float64).sum()) for key, a in arrays.items()}})
    return seqs


def test_the_record_covers_every_case():
    assert set(RECORD) == set(TOOL.CASES)


@pytest.mark.parametrize("case", sorted(TOOL.CASES))
def test_same_sequences_as_returnn(case, capsys):
    opts, epochs = TOOL.CASES[case]
    dataset = make_dataset(opts, "train")
    for epoch in epochs:
        ours = _our_epoch(dataset, epoch)
        theirs = RECORD[case][str(epoch)]
        assert [s["tag"] for s in ours] == [s["tag"] for s in theirs], f"epoch {epoch}"
        for mine, ref in zip(ours, theirs):
            assert mine["lengths"] == ref["lengths"], (epoch, mine["tag"])
            assert set(mine["sums"]) == set(ref["sums"])
            for key in ref["sums"]:
                assert mine["sums"][key] == pytest.approx(ref["sums"][key], rel=1e-5, abs=1e-5), (epoch, key)


def test_fixture_files_match_the_tool():
    """The HDF files hold what the tool's make_sequences gives (so the record describes these files)."""
    feats, align_data, classes = TOOL.make_sequences()
    with make_dataset(TOOL._hdf("align.hdf"), "align") as align:
        align.init_epoch(1)
        for index, tag_index in enumerate(TOOL.ALIGN_ORDER):
            assert align.seq_tag(index) == f"utt-{tag_index}"
            np.testing.assert_array_equal(align.get_seq(index)["classes"], classes[tag_index])
            np.testing.assert_array_equal(align.get_seq(index)["data"], align_data[tag_index])
