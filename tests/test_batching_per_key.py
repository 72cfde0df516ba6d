"""batch_size / max_seq_length / chunking given per data key (and as ints), against the batches RETURNN makes.

The fixture `fixtures/returnn/batches.json` holds, per case, the batches RETURNN's `Dataset.generate_batches`
made of a small StaticDataset (sequence index and [start, end) frames per data key of every piece); it was
written by `tools/record_returnn_batches.py`. Here netcompiler's `iterate_batches` batches the same sequences
and the pieces are read back from the frame values (each frame holds its sequence and frame number)."""

import json
import os

import numpy as np
import pytest

from netcompiler.engine.batching import iterate_batches, parse_batching
from netcompiler.engine.datasets import StaticDataset
from netcompiler.errors import InvalidOptionError

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "returnn", "batches.json")
with open(FIXTURE) as _f:
    RECORD = json.load(_f)
CASES = {case["name"]: case for case in RECORD["cases"]}
CLASS_OFFSET = 100  # classes frame t of sequence i holds CLASS_OFFSET * i + t + 1 (a class index)


def make_dataset(data_lengths, class_lengths, extra=False):
    """Sequence i: "data" [n, 2] holding 1000 * i + t + 1, "classes" [m] holding CLASS_OFFSET * i + t + 1; with
    `extra`, a key "extra" [2n + 1, 1] that the network does not read (as in the fixture)."""
    seqs = [{"data": np.repeat((1000 * i + np.arange(n, dtype=np.float32) + 1)[:, None], 2, axis=1),
             "classes": (CLASS_OFFSET * i + np.arange(m) + 1).astype(np.int32)}
            for i, (n, m) in enumerate(zip(data_lengths, class_lengths))]
    for seq in seqs if extra else ():
        seq["extra"] = np.ones((2 * len(seq["data"]) + 1, 1), dtype=np.float32)
    dataset = StaticDataset(name="test", data=seqs, output_dim={"classes": CLASS_OFFSET * len(seqs) + 100})
    dataset.init_epoch(1)
    return dataset


def pieces(batch):
    """The batch's pieces as RETURNN's fixture has them: sequence index and [start, end) per data key."""
    result = []
    for row in range(batch.num_seqs):
        n, m = int(batch.lengths["data"][row]), int(batch.lengths["classes"][row])
        seq = int(batch.seq_tags[row].split("-")[-1])
        start = int(batch.data["data"][row, 0, 0]) - 1000 * seq - 1 if n else None
        class_start = int(batch.data["classes"][row, 0]) - CLASS_OFFSET * seq - 1 if m else None
        result.append({"seq": seq, "spans": {"data": [start, start + n], "classes": [class_start, class_start + m]}})
    return result


def settings_of(case):
    settings = {k: v for k, v in case["settings"].items() if k != "extra"}
    chunking = settings.get("chunking")
    if isinstance(chunking, list):  # JSON made the tuple a list
        settings["chunking"] = tuple(chunking)
    return parse_batching(batch_size=settings["batch_size"], max_seqs=settings.get("max_seqs", -1),
                          chunking=settings.get("chunking"), max_seq_length=settings.get("max_seq_length"),
                          min_seq_length=settings.get("min_seq_length"))


def batches_of(case):
    kind = case["lengths"]
    dataset = make_dataset(RECORD["data_lengths"][kind], RECORD["class_lengths"][kind],
                           extra=case["settings"].get("extra", False))
    assert dataset.seq_tag(3).endswith("-3")  # what `pieces` reads the sequence index from
    return [pieces(batch) for batch in iterate_batches(dataset, settings_of(case), keys={"data", "classes"})]


KNOWN_DIFFERENCES = {"label_per_sequence_chunking"}


@pytest.mark.parametrize("name", sorted(set(CASES) - KNOWN_DIFFERENCES))
def test_batches_match_returnn(name):
    assert batches_of(CASES[name]) == CASES[name]["batches"]


def test_a_key_of_one_frame_is_repeated_in_every_chunk_where_returnn_keeps_only_the_first_chunk():
    """RETURNN's iterate_seqs means to repeat a key of length <= 1 in every chunk (its comment says so), but its
    loop stops once any key has no frames left, which that key has after the first chunk: RETURNN trains on
    the first chunk of each sequence only. netcompiler keeps all chunks (a deliberate difference)."""
    case = CASES["label_per_sequence_chunking"]
    ours = [piece for batch in batches_of(case) for piece in batch]
    theirs = [piece for batch in case["batches"] for piece in batch]
    assert [p for p in ours if p["spans"]["data"][0] == 0] == theirs  # RETURNN's are exactly our first chunks
    assert all(p["spans"]["classes"] == [0, 1] for p in ours)
    size, step = case["settings"]["chunking"]
    want = [(seq, start) for seq, n in enumerate(RECORD["data_lengths"]["one"]) for start in range(0, n, step)]
    assert [(p["seq"], p["spans"]["data"][0]) for p in ours] == want
    assert all(p["spans"]["data"][1] == min(p["spans"]["data"][0] + size, RECORD["data_lengths"]["one"][p["seq"]])
               for p in ours)


def test_the_fixture_covers_every_per_key_form():
    forms = {(option, type(value).__name__) for case in RECORD["cases"] for option, value in case["settings"].items()}
    assert {("batch_size", "dict"), ("batch_size", "int"), ("max_seq_length", "dict"), ("max_seq_length", "int"),
            ("chunking", "list"), ("chunking", "str"), ("max_seqs", "int"), ("min_seq_length", "int"),
            ("min_seq_length", "dict")} <= forms
    dict_chunking = [c for c in RECORD["cases"] if isinstance(c["settings"].get("chunking"), list)
                     and isinstance(c["settings"]["chunking"][0], dict)]
    assert dict_chunking


def reference_batches(data_lengths, class_lengths, limits, max_seqs):
    """RETURNN's rule, written out: a sequence closes the batch when (longest of a key) * (sequences) would
    exceed that key's limit (keys without a limit never do), or when the batch has max_seqs sequences."""
    batches, current = [], []
    for seq, lengths in enumerate(zip(data_lengths, class_lengths)):
        if current:
            num = len(current) + 1
            padded = [max([lengths[k]] + [data_lengths[s] if k == 0 else class_lengths[s] for s in current]) * num
                      for k in (0, 1)]
            if any(p > limits[k] for p, k in zip(padded, (0, 1))) or num > max_seqs:
                batches.append(current)
                current = []
        current.append(seq)
    return batches + ([current] if current else [])


@pytest.mark.parametrize("batch_size", [{"data": 45, "classes": 9}, {"classes": 7}, {"data": 23}, 30])
@pytest.mark.parametrize("max_seqs", [2, -1])
def test_per_key_batch_size_against_a_reference(batch_size, max_seqs):
    rng = np.random.default_rng(len(str(batch_size)) + max_seqs)
    class_lengths = rng.integers(1, 9, size=30).tolist()
    data_lengths = [3 * m + int(rng.integers(0, 3)) for m in class_lengths]
    dataset = make_dataset(data_lengths, class_lengths)
    table = batch_size if isinstance(batch_size, dict) else {"data": batch_size, "classes": batch_size}
    limits = [table.get("data", np.inf), table.get("classes", np.inf)]
    want = reference_batches(data_lengths, class_lengths, limits, np.inf if max_seqs == -1 else max_seqs)
    got = [[pieces(b)[r]["seq"] for r in range(b.num_seqs)]
           for b in iterate_batches(dataset, parse_batching(batch_size=batch_size, max_seqs=max_seqs))]
    assert got == want and len(got) > 2


@pytest.mark.parametrize("kw, match", [
    (dict(batch_size={"data": 0}), r"'batch_size'.*positive ints"),
    (dict(batch_size={}), r"'batch_size'.*positive ints"),
    (dict(batch_size={"data": "10"}), r"'batch_size'.*positive ints"),
    (dict(batch_size=100, max_seqs={"data": 3}), r"'max_seqs'.*one number for all data keys"),
    (dict(batch_size=100, min_seq_length=-3), r"'min_seq_length'.*positive int"),
    (dict(batch_size=100, min_seq_length={"data": 0}), r"'min_seq_length'.*positive int"),
])
def test_bad_per_key_values_name_the_key(kw, match):
    with pytest.raises(InvalidOptionError, match=match):
        parse_batching(**dict(dict(max_seqs=-1), **kw))


@pytest.mark.parametrize("kw, option", [
    (dict(batch_size={"data": 100, "clases": 20}), "batch_size"),
    (dict(batch_size=100, max_seq_length={"target": 5}), "max_seq_length"),
    (dict(batch_size=100, min_seq_length={"target": 5}), "min_seq_length"),
    (dict(batch_size=100, chunking=({"data": 10, "label": 2}, {"data": 5, "label": 1})), "chunking"),
])
def test_a_key_not_in_extern_data_is_an_error(kw, option):
    settings = parse_batching(max_seqs=-1, **kw)
    with pytest.raises(InvalidOptionError, match=rf"config key '{option}'.*extern_data does not have"):
        settings.check_data_keys({"data": None, "classes": None})
    parse_batching(max_seqs=-1, batch_size=100).check_data_keys({"data": None})  # ints name no key


def test_session_checks_the_keys_against_extern_data(tmp_path):
    from netcompiler.config import load_config
    from netcompiler.engine.session import Session
    from netcompiler.network import build_network

    path = tmp_path / "c.py"
    path.write_text('extern_data = {"data": {"dim": 3}, "classes": {"dim": 4, "sparse": True}}\n'
                    'network = {"output": {"class": "softmax", "from": "data", "loss": "ce"}}\n'
                    'batch_size = {"data": 100, "clases": 20}\n')
    config = load_config(str(path))
    session = Session(config, build_network(config), log=None)
    with pytest.raises(InvalidOptionError, match=r"'batch_size'.*'clases'.*extern_data does not have"):
        session.batching()
    config.values.update(batch_size={"data": 100}, min_seq_length={"classes": 3}, max_seq_length=9)
    settings = session.batching()
    assert (settings.batch_size, settings.min_seq_length, settings.max_seq_length) == (
        {"data": 100}, {"classes": 3}, {"*": 9})


def test_the_feeding_chunks_only_the_keys_the_network_reads():
    from netcompiler.engine.feeding import numpy_batches

    case = CASES["unused_key_ignored_when_chunking"]
    dataset = make_dataset(RECORD["data_lengths"]["x4"], RECORD["class_lengths"]["x4"], extra=True)
    fed = list(numpy_batches(dataset, ["data", "classes"], settings_of(case)))
    assert [len(lengths["data"]) for _, lengths in fed] == [len(batch) for batch in case["batches"]]
    assert all(set(inputs) == {"data", "classes"} for inputs, _ in fed)
