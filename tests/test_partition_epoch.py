"""partition_epoch on every dataset class (MetaDataset and CombinedDataset included): the sub-epochs of one full
epoch are consecutive parts of that full epoch's order, so every sequence comes exactly once per full cycle, with the
same data as without partitioning."""

import numpy as np
import pytest

from netcompiler.engine.datasets import DATASET_CLASSES, make_dataset
from netcompiler.engine.datasets.hdf_writer import write_hdf

PARTS = 3
NUM = 10


@pytest.fixture(scope="module")
def hdf_file(tmp_path_factory):
    rng = np.random.RandomState(5)
    seqs = [{"data": rng.standard_normal((n, 2)).astype(np.float32), "classes": rng.randint(0, 3, size=n)
             .astype(np.int32)} for n in rng.randint(1, 12, size=NUM)]
    path = str(tmp_path_factory.mktemp("partition") / "corpus.hdf")
    write_hdf(path, seqs, dims={"classes": 3})
    return path


def static_opts():
    rng = np.random.RandomState(6)
    return {"class": "StaticDataset", "data": [{"data": rng.standard_normal((n, 2)).astype(np.float32)}
                                               for n in rng.randint(1, 9, size=NUM)]}


def generated(name):
    return {
        "DummyDataset": {"class": "DummyDataset", "num_seqs": NUM, "input_dim": 2, "output_dim": 3,
                         "seq_len": 3},
        "RandomDataset": {"class": "RandomDataset", "num_seqs": NUM, "input_dim": 2, "output_dim": 3},
        "Task12AXDataset": {"class": "Task12AXDataset", "num_seqs": NUM},
        "CopyTaskDataset": {"class": "CopyTaskDataset", "num_seqs": NUM, "nsymbols": 4, "minlen": 1, "maxlen": 9},
        "TaskNumberBaseConvertDataset": {"class": "TaskNumberBaseConvertDataset", "num_seqs": NUM},
    }[name]


def all_opts(hdf_file):
    """One configuration of every registered dataset class."""
    hdf = {"class": "HDFDataset", "files": [hdf_file]}
    opts = {name: generated(name) for name in ("DummyDataset", "RandomDataset", "Task12AXDataset",
                                               "CopyTaskDataset", "TaskNumberBaseConvertDataset")}
    opts["HDFDataset"] = hdf
    opts["StaticDataset"] = static_opts()
    opts["MetaDataset"] = {"class": "MetaDataset", "datasets": {"f": hdf, "t": generated("Task12AXDataset")},
                           "data_map": {"data": ("f", "data"), "classes": ("t", "classes")}}
    opts["CombinedDataset"] = {"class": "CombinedDataset", "datasets": {"f": hdf, "t": generated("Task12AXDataset")},
                               "data_map": {("f", "data"): "data", ("t", "classes"): "classes"}}
    return opts


def test_every_registered_class_is_covered(hdf_file):
    assert set(all_opts(hdf_file)) == set(DATASET_CLASSES)


def _epoch(dataset, epoch):
    dataset.init_epoch(epoch)
    return [(dataset.corpus_index(i), dataset.seq_tag(i), dataset.seq_length(i)) for i in range(dataset.num_seqs())]


@pytest.mark.parametrize("ordering", ["default", "random", "sorted", "laplace:2", "sort_bin_shuffle:2"])
@pytest.mark.parametrize("class_name", sorted(DATASET_CLASSES))
def test_sub_epochs_cover_each_sequence_once_per_full_epoch(hdf_file, class_name, ordering, capsys):
    opts = all_opts(hdf_file)[class_name]
    parted = make_dataset(dict(opts, seq_ordering=ordering, partition_epoch=PARTS), "train")
    whole = make_dataset(dict(opts, seq_ordering=ordering), "whole")
    total = whole.total_num_seqs()
    for full_epoch in (1, 2):
        seqs = []
        for part in range(PARTS):
            sub_epoch = (full_epoch - 1) * PARTS + part + 1
            got = _epoch(parted, sub_epoch)
            assert abs(len(got) - total / PARTS) < 1, (sub_epoch, len(got))
            seqs += got
        assert sorted(index for index, _, _ in seqs) == list(range(total))
        # the parts, one after the other, are the full epoch's order, with its data (seeds of the full epoch)
        assert seqs == _epoch(whole, full_epoch)


def test_combined_random_dataset_partitions_the_joint_order(hdf_file):
    opts = dict(all_opts(hdf_file)["CombinedDataset"], seq_ordering="random_dataset")
    parted = make_dataset(dict(opts, partition_epoch=PARTS), "train")
    whole = make_dataset(opts, "whole")
    for full_epoch in (1, 2):
        seqs = [s for part in range(PARTS) for s in _epoch(parted, (full_epoch - 1) * PARTS + part + 1)]
        assert seqs == _epoch(whole, full_epoch)


def test_meta_partition_through_its_control_dataset(hdf_file):
    hdf = {"class": "HDFDataset", "files": [hdf_file]}
    opts = {"class": "MetaDataset", "seq_order_control_dataset": "f",
            "datasets": {"f": dict(hdf, seq_ordering="random", partition_epoch=PARTS), "g": hdf},
            "data_map": {"data": ("g", "data"), "classes": ("f", "classes")}}
    dataset = make_dataset(opts, "train")
    seqs = [s for epoch in range(1, PARTS + 1) for s in _epoch(dataset, epoch)]
    assert sorted(index for index, _, _ in seqs) == list(range(NUM))


@pytest.mark.parametrize("class_name, ordering", [("MetaDataset", "default"), ("MetaDataset", "random"),
                                                   ("CombinedDataset", "default"), ("CombinedDataset", "random"),
                                                   ("CombinedDataset", "random_dataset")])
def test_repeat_epoch_reads_every_sequence_that_often(hdf_file, class_name, ordering):
    opts = all_opts(hdf_file)[class_name]
    once = _epoch(make_dataset(dict(opts, seq_ordering=ordering), "once"), 1)
    twice = _epoch(make_dataset(dict(opts, seq_ordering=ordering, repeat_epoch=2), "twice"), 1)
    assert twice == once + once
