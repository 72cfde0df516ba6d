"""Block generation of generated datasets (issue 12 goal 6): MT19937 across many seeds against NumPy's RandomState,
and the 12AX block path against the one-sequence-at-a-time generator (same sequences, same order)."""

import numpy as np
import pytest

from netcompiler.engine.datasets import task12ax
from netcompiler.engine.datasets.mt19937 import first_words
from netcompiler.engine.datasets.raw_draws import RawDraws
from netcompiler.engine.datasets.task12ax import Task12AXDataset, draw_12ax_symbols, targets_12ax, targets_of_rows
from netcompiler.errors import DataContentError


@pytest.mark.parametrize("seed", [0, 1, 7, 2 ** 32 - 1])
def test_first_words_equal_randomstate_raw_words(seed):
    indices = np.array([0, 1, 2, 3, 99, 1000, 65535, 2 ** 31, 2 ** 32 - 1])
    words = first_words(seed, indices)
    assert words.shape == (len(indices), 624)
    for row, index in enumerate(indices):
        expected = np.random.RandomState([seed, int(index)]).randint(0, 2 ** 32, size=624, dtype=np.uint64)
        np.testing.assert_array_equal(words[row], expected)
    for count in (10, 300, 500):  # the state update stops after `count` words, in each of its slices
        np.testing.assert_array_equal(first_words(seed, indices, count), words[:, :count])


def test_first_words_rejects_more_than_one_state():
    with pytest.raises(ValueError, match="count"):
        first_words(1, np.arange(3), 625)


def _scalar_sequence(seed, index):
    draws = RawDraws(np.random.RandomState([seed, index]))
    symbols = draw_12ax_symbols(draws, draws.randint(10, 100))
    return symbols, targets_12ax(symbols)


# 120 words: most sequences run past them and are drawn the scalar way; 1100 sequences: a block of 1024, then 76
# (fewer than BLOCK_MIN) one by one
@pytest.mark.parametrize("block_words, num_seqs", [(400, 700), (120, 700), (400, 1100)])
def test_12ax_block_equals_sequence_by_sequence(monkeypatch, block_words, num_seqs):
    monkeypatch.setattr(task12ax, "BLOCK_WORDS", block_words)
    dataset = Task12AXDataset(num_seqs=num_seqs)
    dataset.init_epoch(3)
    for index in range(dataset.num_seqs()):
        symbols, targets = _scalar_sequence(3, index)
        seq = dataset.get_seq(index)
        assert dataset.seq_length(index) == {"data": len(symbols), "classes": len(symbols)}
        np.testing.assert_array_equal(seq["data"], task12ax._ONE_HOT[symbols])
        assert seq["data"].dtype == np.float32 and seq["classes"].dtype == np.int32
        np.testing.assert_array_equal(seq["classes"], targets)


def test_12ax_block_follows_a_random_order_and_sorting():
    for ordering in ("random", "sorted", "laplace:10"):
        dataset, reference = (Task12AXDataset(num_seqs=300, seq_ordering=ordering, random_seed_offset=4)
                              for _ in range(2))
        reference.BLOCK = 0  # the one-by-one path
        for epoch in (1, 2):
            dataset.init_epoch(epoch)
            reference.init_epoch(epoch)
            np.testing.assert_array_equal(dataset._order, reference._order)
            for index in range(dataset.num_seqs()):
                for key, array in reference.get_seq(index).items():
                    np.testing.assert_array_equal(dataset.get_seq(index)[key], array)


def _count_generated(dataset):
    """Wraps the dataset's generators; the returned list collects the number of sequences of each call."""
    calls = []
    one, block = dataset._generate, dataset._generate_block
    dataset._generate = lambda index, rng: calls.append(1) or one(index, rng)
    dataset._generate_block = lambda indices: calls.append(len(indices)) or block(indices)
    return calls


def test_12ax_read_out_of_its_order_generates_what_it_reads():
    """A combined or meta dataset reads its sub-datasets in its own order: a random one must not cost a block of
    1024 sequences per read, and reading on in corpus order still goes by blocks."""
    dataset = Task12AXDataset(num_seqs=5000)
    dataset.init_epoch(2)
    calls = _count_generated(dataset)
    reads = np.random.RandomState(0).choice(5000, size=60, replace=False)
    for index in reads.tolist():
        symbols, targets = _scalar_sequence(2, index)
        np.testing.assert_array_equal(dataset._corpus_seq(index)["classes"], targets)
    assert sum(calls) <= 2 * len(reads)
    calls.clear()
    for index in range(3000, 4200):  # in corpus order, from a random place: one sequence, then blocks
        dataset._corpus_seq(index)
    assert sum(calls) <= 1200 + 1024 and max(calls) > 900  # a block (less what the reads above cached)
    np.testing.assert_array_equal(dataset._corpus_seq(4100)["classes"], _scalar_sequence(2, 4100)[1])


def test_targets_of_rows_equal_targets_12ax():
    rng = np.random.RandomState(5)
    symbols = rng.randint(0, 9, size=(200, 60))
    targets = targets_of_rows(symbols)
    for row in range(len(symbols)):
        np.testing.assert_array_equal(targets[row], targets_12ax(symbols[row].tolist()))
    assert targets.sum() > 0


def test_block_check_names_the_bad_sequence():
    dataset = Task12AXDataset(num_seqs=200)
    dataset.expect_dims({"classes": 1})  # every "R" target is then out of range
    dataset.init_epoch(1)
    first_bad = next(i for i in range(200) if _scalar_sequence(1, i)[1].max() == 1)
    for index in range(first_bad):
        dataset.get_seq(index)
    with pytest.raises(DataContentError, match=f"sequence {first_bad}"):
        dataset.get_seq(first_bad)
