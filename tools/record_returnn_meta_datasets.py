"""Records what RETURNN's MetaDataset and CombinedDataset yield: the fixture of `tests/test_meta_datasets_returnn.py`.

Two steps:

1. `python tools/record_returnn_meta_datasets.py --write-hdf` (the project's Python) writes two small HDF files
   with netcompiler's writer into `tests/fixtures/meta_datasets/`: `feat.hdf` ("data", tags utt-0..utt-7) and
   `align.hdf` (its own "data" and "classes", the same tags in another order), and `seq_list.txt`.
2. `/tmp/returnn_venv/bin/python tools/record_returnn_meta_datasets.py` (RETURNN in its scratch virtualenv, never a
   netcompiler dependency) builds each case of CASES with RETURNN and records, per epoch and sequence, the tag,
   the frames per data key and the sum of each key's values: `tests/fixtures/meta_datasets/returnn.json`.

`sampling_sizes` is not among the cases: RETURNN 1.20261022's CombinedDataset divides by zero when it is built
with it (its first, epoch-less init_seq_order); netcompiler's tests check it against its rule instead.

The test builds the same cases with netcompiler's classes on the same files and compares.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "meta_datasets")
NUM_SEQS = 8
FEAT_DIM = 3
NUM_CLASSES = 5
ALIGN_ORDER = [5, 2, 7, 0, 3, 6, 1, 4]  # align.hdf stores the sequences in this order
SEQ_LIST = ["utt-6", "utt-1", "utt-3", "utt-0", "utt-5"]  # seq_list.txt: a subset, in this order


def _hdf(name):
    return {"class": "HDFDataset", "files": [os.path.join(HERE, name)]}


def _meta(**opts):
    return dict({"class": "MetaDataset", "datasets": {"feat": _hdf("feat.hdf"), "align": _hdf("align.hdf")},
                 "data_map": {"data": ("feat", "data"), "classes": ("align", "classes")}}, **opts)


def _combined(**opts):
    return dict({"class": "CombinedDataset", "datasets": {"feat": _hdf("feat.hdf"), "align": _hdf("align.hdf")},
                 "data_map": {("feat", "data"): "data", ("align", "data"): "data", ("align", "classes"): "classes"}},
                **opts)


def _generated(**opts):
    return dict({"class": "CombinedDataset",
                 "datasets": {"t": {"class": "Task12AXDataset", "num_seqs": 5},
                              "d": {"class": "DummyDataset", "num_seqs": 3, "input_dim": 9, "output_dim": 2,
                                    "seq_len": 4}},
                 "data_map": {("t", "data"): "data", ("t", "classes"): "classes", ("d", "data"): "data",
                              ("d", "classes"): "dummy_classes"}}, **opts)


# name -> (dataset options, file names are relative to HERE; epochs)
CASES = {
    "meta_default": (_meta(), [1]),
    "meta_random_partition": (_meta(seq_ordering="random", partition_epoch=3), [1, 2, 3, 4]),
    "meta_sorted": (_meta(seq_ordering="sorted"), [1]),
    "meta_control": (dict(_meta(seq_order_control_dataset="align"),
                          datasets={"feat": _hdf("feat.hdf"),
                                    "align": dict(_hdf("align.hdf"), seq_ordering="random", partition_epoch=2)}),
                     [1, 2, 3]),
    "meta_seq_list": (_meta(seq_list_file=os.path.join(HERE, "seq_list.txt")), [1]),
    "combined_default": (_combined(), [1]),
    "combined_random_partition": (_combined(seq_ordering="random", partition_epoch=2), [1, 2, 3]),
    "combined_sorted": (_combined(seq_ordering="sorted"), [1]),
    "combined_random_dataset": (_combined(seq_ordering="random_dataset"), [1, 2]),
    "combined_interleave": (dict(_combined(seq_ordering="interleave"),
                                 datasets={"feat": dict(_hdf("feat.hdf"), partition_epoch=2),
                                           "align": _hdf("align.hdf")}), [1, 2]),
    "combined_interleave_gumbel": (_combined(seq_ordering="interleave", interleave_gumbel_scale=1.0), [1]),
    "generated_default": (_generated(), [1]),
    "generated_random_dataset": (_generated(seq_ordering="random_dataset"), [1, 2]),
    "generated_interleave": (_generated(seq_ordering="interleave"), [1]),
}


def make_sequences():
    """The sequences of feat.hdf and align.hdf (by tag index), deterministic."""
    rng = np.random.RandomState(42)
    lengths = rng.randint(2, 9, size=NUM_SEQS)
    feats = [rng.standard_normal((n, FEAT_DIM)).astype(np.float32) for n in lengths]
    align_data = [rng.standard_normal((n, FEAT_DIM)).astype(np.float32) for n in lengths]
    classes = [rng.randint(0, NUM_CLASSES, size=n).astype(np.int32) for n in lengths]
    return feats, align_data, classes


def write_hdf_files():
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    from netcompiler.engine.datasets.hdf_writer import write_hdf

    os.makedirs(HERE, exist_ok=True)
    feats, align_data, classes = make_sequences()
    tags = [f"utt-{i}" for i in range(NUM_SEQS)]
    write_hdf(os.path.join(HERE, "feat.hdf"), [{"data": f} for f in feats], tags=tags, overwrite=True)
    write_hdf(os.path.join(HERE, "align.hdf"),
              [{"data": align_data[i], "classes": classes[i]} for i in ALIGN_ORDER],
              tags=[tags[i] for i in ALIGN_ORDER], dims={"classes": NUM_CLASSES}, overwrite=True)
    with open(os.path.join(HERE, "seq_list.txt"), "w") as handle:
        handle.write("\n".join(SEQ_LIST) + "\n")


def record_with_returnn():
    from returnn.datasets.basic import init_dataset
    from returnn.log import log

    log.initialize(verbosity=[0])
    result = {}
    for name, (opts, epochs) in CASES.items():
        dataset = init_dataset(dict(opts))
        keys = dataset.get_data_keys()
        result[name] = {}
        for epoch in epochs:
            dataset.init_seq_order(epoch=epoch)
            seqs = []
            index = 0
            while dataset.is_less_than_num_seqs(index):
                dataset.load_seqs(index, index + 1)
                arrays = {key: dataset.get_data(index, key) for key in keys}
                seqs.append({"tag": dataset.get_tag(index),
                             "lengths": {key: int(a.shape[0]) for key, a in arrays.items()},
                             "sums": {key: float(np.asarray(a, dtype=np.float64).sum()) for key, a in arrays.items()}})
                index += 1
            result[name][str(epoch)] = seqs
    with open(os.path.join(HERE, "returnn.json"), "w") as handle:
        json.dump({"returnn_version": __import__("returnn").__version__, "cases": result}, handle, indent=1)


if __name__ == "__main__":
    if "--write-hdf" in sys.argv[1:]:
        write_hdf_files()
    else:
        record_with_returnn()
