"""Batching: RETURNN's batch_size / max_seqs / max_seq_length / chunking rules and padding."""

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netcompiler.engine.batching import Batch, Chunking, chunk_spans, iterate_batches, parse_batching, parse_chunking
from netcompiler.engine.datasets import StaticDataset, Task12AXDataset
from netcompiler.errors import InvalidOptionError


def make_dataset(lengths, class_lengths=None, **opts):
    """Sequence i: "data" [n, 2] with value 1000*i + t + 1 (never 0, so padding is visible),
    "classes" [m] with values (t + i) % 5."""
    class_lengths = lengths if class_lengths is None else class_lengths
    data = [
        {
            "data": np.repeat((1000 * i + np.arange(n, dtype=np.float32) + 1)[:, None], 2, axis=1),
            "classes": ((np.arange(m) + i) % 5).astype(np.int32),
        }
        for i, (n, m) in enumerate(zip(lengths, class_lengths))
    ]
    dataset = StaticDataset(name="test", data=data, output_dim={"classes": 5}, **opts)
    dataset.init_epoch(1)
    return dataset


def batches(dataset, **kw):
    return list(iterate_batches(dataset, parse_batching(**kw)))


def unpadded(batch, key, row):
    return batch.data[key][row, :batch.lengths[key][row]]


def check_padding_is_zero(batch):
    for key, lengths in batch.lengths.items():
        for row, length in enumerate(lengths):
            assert not batch.data[key][row, length:].any()


lengths_strategy = st.lists(st.integers(min_value=0, max_value=40), min_size=1, max_size=25)


@settings(max_examples=60, deadline=None)
@given(lengths=lengths_strategy, batch_size=st.integers(1, 200), max_seqs=st.sampled_from([1, 2, 3, 7, -1]))
def test_batches_hold_every_sequence_once_within_limits(lengths, batch_size, max_seqs):
    dataset = make_dataset(lengths)
    result = batches(dataset, batch_size=batch_size, max_seqs=max_seqs)
    tags = [tag for batch in result for tag in batch.seq_tags]
    assert tags == [dataset.seq_tag(i) for i in range(dataset.num_seqs())]  # all, once, in epoch order
    originals = {dataset.seq_tag(i): dataset.get_seq(i) for i in range(dataset.num_seqs())}
    for batch in result:
        padded = batch.data["data"].shape[0] * batch.data["data"].shape[1]
        assert batch.num_seqs == 1 or padded <= batch_size
        assert max_seqs == -1 or batch.num_seqs <= max_seqs
        assert batch.data["data"].shape[1] == max(batch.lengths["data"])
        check_padding_is_zero(batch)
        for row, tag in enumerate(batch.seq_tags):
            for key in ("data", "classes"):
                assert np.array_equal(unpadded(batch, key, row), originals[tag][key])


@settings(max_examples=40, deadline=None)
@given(lengths=lengths_strategy, batch_size=st.integers(1, 200))
def test_batches_are_greedy(lengths, batch_size):
    """A batch is only closed when the next sequence would not fit."""
    result = batches(make_dataset(lengths), batch_size=batch_size, max_seqs=-1)
    for batch, following in zip(result, result[1:]):
        longest = max(batch.data["data"].shape[1], following.lengths["data"][0])
        assert longest * (batch.num_seqs + 1) > batch_size


def test_sequence_longer_than_batch_size_is_its_own_batch():
    result = batches(make_dataset([3, 50, 4]), batch_size=10, max_seqs=10)
    assert [b.num_seqs for b in result] == [1, 1, 1] and result[1].data["data"].shape == (1, 50, 2)


def test_batch_size_counts_every_key():
    # "classes" is 4x as long as "data": it decides the batch size
    result = batches(make_dataset([2] * 6, class_lengths=[8] * 6), batch_size=16, max_seqs=10)
    assert [b.num_seqs for b in result] == [2, 2, 2]


def test_batch_num_frames():
    batch = Batch(data={}, lengths={"data": np.array([3, 4], np.int32)}, seq_tags=["a", "b"])
    assert batch.num_frames() == 7 and batch.num_seqs == 2


@pytest.mark.parametrize("limit, kept", [
    (10, [0, 2]), ({"data": 10}, [0, 2, 3]), ({"classes": 5}, [0, 1]), (-5, [0, 1]), (None, [0, 1, 2, 3]),
])
def test_max_seq_length_drops_longer_sequences(limit, kept):
    dataset = make_dataset([4, 11, 10, 1], class_lengths=[4, 3, 10, 12])
    result = batches(dataset, batch_size=1000, max_seqs=100, max_seq_length=limit)
    assert [t for b in result for t in b.seq_tags] == [dataset.seq_tag(i) for i in kept]


@settings(max_examples=50, deadline=None)
@given(lengths=lengths_strategy, size=st.integers(1, 12), overlap=st.integers(0, 11), batch_size=st.integers(1, 100))
def test_chunking_covers_all_frames(lengths, size, overlap, batch_size):
    step = max(1, size - overlap)  # step <= size: chunks overlap or touch
    dataset = make_dataset(lengths)
    result = batches(dataset, batch_size=batch_size, max_seqs=5, chunking=f"{size}:{step}")
    covered = {dataset.seq_tag(i): Counter() for i in range(dataset.num_seqs())}
    for batch in result:
        assert batch.num_seqs <= 5
        assert batch.num_seqs == 1 or batch.data["data"].shape[0] * batch.data["data"].shape[1] <= batch_size
        check_padding_is_zero(batch)
        for row, tag in enumerate(batch.seq_tags):
            frames = unpadded(batch, "data", row)[:, 0]
            assert 1 <= len(frames) <= size
            index = int(frames[0] // 1000)
            start = int(frames[0] % 1000) - 1
            assert start % step == 0 and dataset.seq_tag(index) == tag
            assert np.array_equal(frames, 1000 * index + np.arange(start, start + len(frames)) + 1)
            assert np.array_equal(unpadded(batch, "classes", row),
                                  dataset.get_seq(index)["classes"][start:start + len(frames)])
            covered[tag].update(range(start, start + len(frames)))
    for i in range(dataset.num_seqs()):
        assert set(covered[dataset.seq_tag(i)]) == set(range(lengths[i]))


def test_chunk_spans_with_overlap():
    spans = chunk_spans({"data": 10, "classes": 10}, parse_chunking("4:3"))
    assert [s["data"] for s in spans] == [(0, 4), (3, 7), (6, 10), (9, 10)]
    assert [s["classes"] for s in spans] == [(0, 4), (3, 7), (6, 10), (9, 10)]


def test_chunking_per_key_sizes():
    dataset = make_dataset([20, 9], class_lengths=[10, 5])
    chunking = ({"data": 6, "classes": 3}, {"data": 4, "classes": 2})
    result = batches(dataset, batch_size=1000, max_seqs=100, chunking=chunking)
    (batch,) = result
    assert batch.lengths["data"].tolist() == [6, 6, 6, 6, 4, 6, 5, 1]
    assert batch.lengths["classes"].tolist() == [3, 3, 3, 3, 2, 3, 3, 1]


def test_chunking_keeps_length_one_keys_whole():
    spans = chunk_spans({"data": 9, "label": 1}, parse_chunking(4))
    assert [s["label"] for s in spans] == [(0, 1)] * 3


def test_chunking_mismatched_lengths_is_an_error():
    dataset = make_dataset([10], class_lengths=[5])
    with pytest.raises(InvalidOptionError) as info:
        batches(dataset, batch_size=100, max_seqs=10, chunking="4:4")
    assert "seq-0" in str(info.value) and info.value.subject == "config key 'chunking'"


def test_chunking_dict_must_name_every_key():
    with pytest.raises(InvalidOptionError, match="no chunk size for data key 'classes'"):
        batches(make_dataset([10]), batch_size=100, max_seqs=10, chunking=({"data": 4}, {"data": 2}))


@pytest.mark.parametrize("value, size, step", [
    ("50:25", 50, 25), ("50", 50, 50), (50, 50, 50), ((50, 10), 50, 10), ((50, None), 50, 50), ((50, 0), 50, 50),
    (({"data": 6, "classes": 3}, None), {"data": 6, "classes": 3}, {"data": 6, "classes": 3}),
    ({"data": 6}, {"data": 6}, {"data": 6}),
])
def test_parse_chunking_forms(value, size, step):
    assert parse_chunking(value) == Chunking(size, step)


@pytest.mark.parametrize("value", [None, 0, "0", ""])
def test_parse_chunking_off(value):
    assert parse_chunking(value) is None


@pytest.mark.parametrize("value", ["a:b", "1:2:3", "-5", -5, 2.5, True, (5, "x"), (1, 2, 3),
                                   ({"data": 3}, {"classes": 3}), ({"data": 0}, None), lambda: None])
def test_parse_chunking_errors(value):
    with pytest.raises(InvalidOptionError) as info:
        parse_chunking(value)
    assert info.value.subject == "config key 'chunking'"


@pytest.mark.parametrize("kw, key", [
    (dict(batch_size=0, max_seqs=1), "batch_size"), (dict(batch_size="10", max_seqs=1), "batch_size"),
    (dict(batch_size=10, max_seqs=0), "max_seqs"), (dict(batch_size=10, max_seqs=1, max_seq_length="x"),
                                                   "max_seq_length"),
])
def test_invalid_batching_options(kw, key):
    with pytest.raises(InvalidOptionError) as info:
        batches(make_dataset([3]), **kw)
    assert info.value.subject == f"config key '{key}'"


def test_keys_without_time_axis_are_stacked():
    data = [{"data": np.ones((n, 3), np.float32), "label": np.array(n, np.int32)} for n in (2, 5, 3)]
    dataset = StaticDataset(data=data)
    dataset.init_epoch(1)
    (batch,) = batches(dataset, batch_size=100, max_seqs=10)
    assert batch.data["label"].tolist() == [2, 5, 3] and "label" not in batch.lengths
    assert batch.lengths["data"].tolist() == [2, 5, 3]


def test_random_order_batches_depend_on_epoch_only():
    def tags(epoch, dataset=None):
        dataset = dataset or Task12AXDataset(num_seqs=40, seq_ordering="random", fixed_random_seed=None)
        dataset.init_epoch(epoch)
        return [t for b in iterate_batches(dataset, parse_batching(batch_size=400, max_seqs=8)) for t in b.seq_tags]

    assert tags(1) == tags(1) and tags(1) != tags(2)
    assert sorted(tags(1)) == sorted(tags(2)) == sorted(f"seq-{i}" for i in range(40))
