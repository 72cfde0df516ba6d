"""Records the batches RETURNN makes of a small dataset: the fixture of `tests/test_batching_per_key.py`.

For each case (batch_size, max_seqs, max_seq_length, min_seq_length, chunking -- each in its int and per-data-key forms) this
builds RETURNN's `StaticDataset` from the sequence lengths below, lets `Dataset.generate_batches` (recurrent
net, the case's settings) make the batches of epoch 1 and records, per batch, its pieces: sequence index and
the [start, end) frames per data key. The test makes the same dataset with netcompiler's StaticDataset and
compares `iterate_batches` with these boundaries, so that it needs nothing from RETURNN.

RETURNN is never a dependency of netcompiler; run this in the scratch virtualenv (see
`tools/record_returnn_templates.py` for how it is made):

    /tmp/returnn_venv/bin/python tools/record_returnn_batches.py

Output: `tests/fixtures/returnn/batches.json`.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "returnn", "batches.json")

# sequence i: "data" of DATA_LENGTHS[i] frames, "classes" of CLASS_LENGTHS[i] labels (data = 4 * classes, so
# that per-key chunk steps 8 / 2 cut both into as many chunks)
CLASS_LENGTHS = [3, 7, 1, 12, 5, 9, 2, 6, 11, 4, 8, 10]
DATA_LENGTHS = [4 * n for n in CLASS_LENGTHS]
SAME_LENGTHS = [5, 9, 2, 14, 7, 3, 11, 6, 1, 8, 13, 4]  # "data" and "classes" equally long
# kinds of lengths: name -> (data lengths, classes lengths); "one": a label per sequence (classes of length 1)
KINDS = {"same": (SAME_LENGTHS, SAME_LENGTHS), "x4": (DATA_LENGTHS, CLASS_LENGTHS),
         "one": (SAME_LENGTHS, [1] * len(SAME_LENGTHS))}
# with "extra" in a case's settings, the sequences also have a key "extra" of 2 * data + 1 frames that the
# network does not read (not among RETURNN's used_data_keys)

CASES = [
    # name, lengths ("same" or "x4"), settings
    ("int_batch_size", "same", dict(batch_size=20)),
    ("int_batch_size_max_seqs", "same", dict(batch_size=40, max_seqs=3)),
    ("dict_batch_size_both_keys", "x4", dict(batch_size={"data": 60, "classes": 20})),
    ("dict_batch_size_classes_only", "x4", dict(batch_size={"classes": 16})),
    ("dict_batch_size_data_only", "x4", dict(batch_size={"data": 50}, max_seqs=4)),
    ("int_batch_size_x4", "x4", dict(batch_size=40)),
    ("int_max_seq_length", "same", dict(batch_size=20, max_seq_length=8)),
    ("negative_max_seq_length", "x4", dict(batch_size=100, max_seq_length=-6)),
    ("dict_max_seq_length", "x4", dict(batch_size=100, max_seq_length={"data": 30})),
    ("dict_max_seq_length_both", "x4", dict(batch_size=100, max_seq_length={"data": 40, "classes": 8})),
    ("int_chunking", "same", dict(batch_size=20, chunking=(5, 3))),
    ("string_chunking", "same", dict(batch_size=12, chunking="4:4")),
    ("dict_chunking", "x4", dict(batch_size={"data": 40, "classes": 10}, chunking=({"data": 16, "classes": 4},
                                                                                   {"data": 8, "classes": 2}))),
    ("dict_chunking_int_batch", "x4", dict(batch_size=32, chunking=({"data": 12, "classes": 3},
                                                                     {"data": 8, "classes": 2}))),
    ("dict_chunking_max_seq_length", "x4", dict(batch_size=50, max_seq_length={"classes": 3},
                                                chunking=({"data": 16, "classes": 4}, {"data": 16, "classes": 4}))),
    ("unused_key_counts_without_chunking", "same", dict(batch_size=30, extra=True)),
    ("unused_key_ignored_when_chunking", "x4", dict(batch_size={"data": 40, "classes": 10}, extra=True,
                                                    chunking=({"data": 16, "classes": 4}, {"data": 8, "classes": 2}))),
    ("label_per_sequence_chunking", "one", dict(batch_size=20, chunking=(5, 3))),
    ("int_min_seq_length", "same", dict(batch_size=20, min_seq_length=5)),
    ("dict_min_max_seq_length", "x4", dict(batch_size=60, min_seq_length={"classes": 3}, max_seq_length={"data": 40})),
    ("min_seq_length_of_chunks", "x4", dict(batch_size=50, min_seq_length={"classes": 2},
                                            chunking=({"data": 12, "classes": 3}, {"data": 8, "classes": 2}))),
]


def returnn_batches(kind: str, settings: dict):
    from returnn.datasets.generating import StaticDataset

    data_lengths, class_lengths = KINDS[kind]
    seqs = [{"data": np.zeros((n, 2), dtype="float32"), "classes": np.zeros((m,), dtype="int32")}
            for n, m in zip(data_lengths, class_lengths)]
    dims = {"data": (2, 2), "classes": (5, 1)}
    if settings.get("extra"):
        for seq in seqs:
            seq["extra"] = np.zeros((2 * len(seq["data"]) + 1, 1), dtype="float32")
        dims["extra"] = (1, 2)
    kwargs = {"chunking": settings["chunking"]} if "chunking" in settings else {}
    dataset = StaticDataset(data=seqs, output_dim=dims, **kwargs)
    dataset.initialize()
    dataset.init_seq_order(epoch=1)
    generator = dataset.generate_batches(
        recurrent_net=True, batch_size=settings["batch_size"], max_seqs=settings.get("max_seqs", -1),
        max_seq_length=settings.get("max_seq_length", None), min_seq_length=settings.get("min_seq_length", 0),
        used_data_keys={"data", "classes"})
    batches = []
    while generator.has_more():
        batch, = generator.peek_next_n(1)
        generator.advance(1)
        batches.append([{"seq": part.seq_idx,
                         "spans": {key: [int(part.seq_start_frame[key]), int(part.seq_end_frame[key])]
                                   for key in ("data", "classes")}} for part in batch.seqs])
    return batches


def main() -> None:
    import returnn

    cases = []
    for name, kind, settings in CASES:
        cases.append({"name": name, "lengths": kind, "settings": settings, "batches": returnn_batches(kind, settings)})
        print(name, len(cases[-1]["batches"]), "batches", file=sys.stderr)
    record = {"recorded_with": {"returnn": returnn.__version__},
              "data_lengths": {k: v[0] for k, v in KINDS.items()},
              "class_lengths": {k: v[1] for k, v in KINDS.items()}, "cases": cases}
    with open(OUT, "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
