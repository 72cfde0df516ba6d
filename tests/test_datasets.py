"""Datasets: construction from configs, option errors, orderings, generated data, the 12AX rule."""

import numpy as np
import pytest

from netcompiler.engine.datasets import (
    DummyDataset,
    RandomDataset,
    StaticDataset,
    Task12AXDataset,
    make_dataset,
)
from netcompiler.engine.datasets.ordering import SeqOrdering
from netcompiler.errors import (
    ConfigError,
    InvalidOptionError,
    MissingOptionError,
    UnknownOptionError,
)

SYMBOLS = "123ABCXYZ"


def static_dataset(lengths, **opts):
    """A StaticDataset whose sequence i has lengths[i] frames; frame values encode (i, t)."""
    data = [
        {
            "data": np.repeat((1000 * i + np.arange(n, dtype=np.float32))[:, None], 2, axis=1),
            "classes": (np.arange(n, dtype=np.int32) + i) % 3,
        }
        for i, n in enumerate(lengths)
    ]
    return StaticDataset(name="static", data=data, output_dim={"classes": 3}, **opts)


def epoch_order(dataset, epoch):
    dataset.init_epoch(epoch)
    return [dataset.corpus_index(i) for i in range(dataset.num_seqs())]


def all_seqs(dataset, epoch):
    dataset.init_epoch(epoch)
    return [(dataset.seq_tag(i), dataset.get_seq(i)) for i in range(dataset.num_seqs())]


def same_seqs(a, b):
    return len(a) == len(b) and all(
        ta == tb and sa.keys() == sb.keys() and all(np.array_equal(sa[k], sb[k]) for k in sa)
        for (ta, sa), (tb, sb) in zip(a, b))


# ---------------------------------------------------------------------------
# 12AX


def reference_12ax(text):
    """Independent statement of the rule: for each X/Y, look back for the last digit
    (1/2) and for the last A/B after the previous X/Y."""
    out = []
    for t, symbol in enumerate(text):
        if symbol not in "XY":
            out.append("L")
            continue
        before = text[:t]
        digits = [c for c in before if c in "12"]
        since_pair = before[max(before.rfind("X"), before.rfind("Y")) + 1:]
        letters = [c for c in since_pair if c in "AB"]
        triple = (digits[-1] if digits else None, letters[-1] if letters else None, symbol)
        out.append("R" if triple in {("1", "A", "X"), ("2", "B", "Y")} else "L")
    return "".join(out)


@pytest.mark.parametrize("text, expected", [
    ("1AX", "LLR"), ("2BY", "LLR"), ("1BY", "LLL"), ("2AX", "LLL"),
    ("1ACZX", "LLLLR"), ("1A3X", "LLLR"), ("1AX2AX", "LLRLLL"), ("A1X", "LLR"),
    ("1AYX", "LLLL"), ("1AXX", "LLRL"), ("1ABX", "LLLL"), ("1BAX", "LLLR"), ("2B1Y", "LLLL"),
])
def test_reference_12ax_on_hand_made_cases(text, expected):
    assert reference_12ax(text) == expected


def decode_12ax(seq):
    assert np.array_equal(seq["data"].sum(axis=1), np.ones(len(seq["data"])))  # one-hot
    text = "".join(SYMBOLS[i] for i in seq["data"].argmax(axis=1))
    return text, "".join("LR"[c] for c in seq["classes"])


def test_12ax_targets_follow_the_rule():
    seqs = all_seqs(Task12AXDataset(num_seqs=200), epoch=1)
    num_r = 0
    for _, seq in seqs:
        text, targets = decode_12ax(seq)
        assert targets == reference_12ax(text)
        num_r += targets.count("R")
    assert num_r > 50  # the generator makes "R" targets frequent enough to learn


def test_12ax_shapes_and_lengths():
    dataset = Task12AXDataset(num_seqs=300)
    spec = dataset.data_spec()
    assert (spec["data"].dim, spec["data"].sparse, spec["data"].shape) == (9, False, (None, 9))
    assert (spec["classes"].dim, spec["classes"].sparse, spec["classes"].shape) == (2, True, (None,))
    dataset.init_epoch(1)
    lengths = [dataset.seq_length(i)["data"] for i in range(dataset.num_seqs())]
    assert 10 <= min(lengths) and max(lengths) <= 99 and len(set(lengths)) > 30


def test_12ax_deterministic_and_seeded_by_epoch():
    first = all_seqs(Task12AXDataset(num_seqs=20), epoch=3)
    assert same_seqs(first, all_seqs(Task12AXDataset(num_seqs=20), epoch=3))
    assert not same_seqs(first, all_seqs(Task12AXDataset(num_seqs=20), epoch=4))
    # seed = epoch + random_seed_offset (RETURNN's rule)
    assert same_seqs(first, all_seqs(Task12AXDataset(num_seqs=20, random_seed_offset=1), epoch=2))


def test_12ax_fixed_random_seed_fixes_content():
    dataset = Task12AXDataset(num_seqs=20, fixed_random_seed=7)
    assert same_seqs(all_seqs(dataset, 1), all_seqs(dataset, 5))
    assert not same_seqs(all_seqs(dataset, 1), all_seqs(Task12AXDataset(num_seqs=20, fixed_random_seed=8), 1))


def test_generated_lengths_agree_with_content():
    """The lengths read for sorting (RandomDataset's cheap shortcut, 12AX's blocks) are those the arrays have."""
    for dataset in (Task12AXDataset(num_seqs=30, seq_ordering="sorted"),
                    RandomDataset(num_seqs=30, input_dim=3, output_dim=4, seq_len_range=(1, 40),
                                  seq_ordering="sorted_reverse")):
        dataset.init_epoch(2)
        lengths = [dataset.seq_length(i) for i in range(dataset.num_seqs())]
        assert lengths == [{k: len(v) for k, v in dataset.get_seq(i).items()} for i in range(dataset.num_seqs())]


# ---------------------------------------------------------------------------
# Dummy and random data


def test_dummy_dataset_counts_as_documented():
    dataset = DummyDataset(input_dim=3, output_dim=4, num_seqs=5, seq_len=2)
    dataset.init_epoch(1)
    seq = dataset.get_seq(2)
    counter = 2  # sequence i starts counting at i
    expected = [((k % 10.0) - 5.0) / 10.0 for k in range(counter, counter + 6)]
    assert np.allclose(seq["data"].ravel(), expected) and seq["data"].shape == (2, 3)
    assert seq["classes"].tolist() == [(counter + 6) % 4, (counter + 7) % 4]
    assert same_seqs(all_seqs(dataset, 1), all_seqs(dataset, 2))


def test_dummy_dataset_seq_len_per_key():
    dataset = DummyDataset(input_dim=2, output_dim=3, num_seqs=2, seq_len={"data": 4, "classes": 7})
    dataset.init_epoch(1)
    assert dataset.seq_length(1) == {"data": 4, "classes": 7}


def test_random_dataset_deterministic_content_independent_of_epoch():
    opts = dict(num_seqs=200, input_dim=5, output_dim=7, seq_len_range=(3, 5), seed=1)
    a = all_seqs(RandomDataset(**opts), 1)
    assert same_seqs(a, all_seqs(RandomDataset(**opts), 4))
    assert not same_seqs(a, all_seqs(RandomDataset(**dict(opts, seed=2)), 1))
    lengths = {len(seq["data"]) for _, seq in a}
    assert lengths == {3, 4, 5}
    assert all(seq["classes"].max() < 7 and len(seq["classes"]) == len(seq["data"]) for _, seq in a)


@pytest.mark.parametrize("make", [
    lambda: Task12AXDataset(num_seqs=5),
    lambda: DummyDataset(input_dim=3, output_dim=4, num_seqs=5),
    lambda: RandomDataset(input_dim=3, output_dim=4, num_seqs=5),
    lambda: static_dataset([3, 1, 4]),
    lambda: StaticDataset(data=[{"data": np.zeros((2, 3)), "label": np.array(1), "feats": np.ones((2, 2, 4))}]),
])
def test_data_spec_agrees_with_arrays(make):
    dataset = make()
    dataset.init_epoch(1)
    spec = dataset.data_spec()
    assert dataset.data_keys() == list(spec)
    for i in range(dataset.num_seqs()):
        seq = dataset.get_seq(i)
        assert list(seq) == list(spec)
        for key, array in seq.items():
            s = spec[key]
            assert array.dtype.name == s.dtype
            assert array.ndim == len(s.shape)
            assert all(want is None or want == got for want, got in zip(s.shape, array.shape))
            if s.sparse and s.dim is not None:
                assert array.max(initial=0) < s.dim
            elif not s.sparse and array.ndim >= 2:
                assert s.dim == array.shape[-1]
        assert dataset.seq_length(i) == {k: len(seq[k]) for k in spec if spec[k].has_time_axis}


# ---------------------------------------------------------------------------
# StaticDataset


def test_static_dataset_spec():
    dataset = static_dataset([2, 3])
    spec = dataset.data_spec()
    assert list(spec) == ["data", "classes"]
    assert (spec["data"].dim, spec["data"].sparse) == (2, False)
    assert (spec["classes"].dim, spec["classes"].sparse, spec["classes"].dtype) == (3, True, "int32")
    dataset.init_epoch(1)
    assert dataset.seq_tag(1) == "seq-1" and dataset.seq_length(1) == {"data": 3, "classes": 3}


@pytest.mark.parametrize("data, opts, option", [
    ([], {}, "data"),
    ([{"data": [1, 2]}], {}, "data"),
    ([{"data": np.zeros((2, 3))}, {"data": np.zeros((2, 4))}], {}, "data"),
    ([{"data": np.zeros((2, 3))}, {"data": np.zeros((2, 3), dtype=np.float32)}], {}, "data"),
    ([{"data": np.zeros((2, 3))}, {"x": np.zeros((2, 3))}], {}, "data"),
    ([{"data": np.zeros((2, 3))}], {"input_dim": 4}, "output_dim"),
    ([{"classes": np.array([0, 5])}], {"output_dim": 3}, "data"),
    ([{"data": np.zeros((2, 3))}], {"output_dim": {"other": 2}}, "output_dim"),
    ([{"data": np.zeros((2, 3))}], {"target_list": ["nope"]}, "target_list"),
])
def test_static_dataset_rejects_bad_data(data, opts, option):
    with pytest.raises(InvalidOptionError) as info:
        StaticDataset(name="mine", data=data, **opts)
    assert info.value.option == option and "dataset 'mine'" in str(info.value)


# ---------------------------------------------------------------------------
# make_dataset and option errors


def test_make_dataset_builds_the_named_class():
    dataset = make_dataset({"class": "Task12AXDataset", "num_seqs": 3, "name": "ignored"}, "dev")
    assert isinstance(dataset, Task12AXDataset) and dataset.name == "dev"
    assert isinstance(make_dataset({"class": DummyDataset, "input_dim": 1, "output_dim": 2, "num_seqs": 1}, "x"),
                      DummyDataset)


def test_make_dataset_unknown_class_suggests():
    with pytest.raises(ConfigError) as info:
        make_dataset({"class": "Task12AXDatset", "num_seqs": 3}, "train")
    err = info.value
    assert err.option == "class" and err.subject == "dataset 'train'"
    assert "Task12AXDataset" in err.suggestion and "did you mean" in str(err)


def test_make_dataset_unknown_option_suggests():
    with pytest.raises(UnknownOptionError) as info:
        make_dataset({"class": "Task12AXDataset", "num_seq": 3}, "train")
    assert info.value.option == "num_seq" and "'num_seqs'" in info.value.suggestion
    assert str(info.value).startswith("dataset 'train': ")


@pytest.mark.parametrize("opts, error, option", [
    ({"class": "Task12AXDataset"}, MissingOptionError, "num_seqs"),
    ({"class": "Task12AXDataset", "num_seqs": "10"}, InvalidOptionError, "num_seqs"),
    ({"class": "Task12AXDataset", "num_seqs": True}, InvalidOptionError, "num_seqs"),
    ({"class": "Task12AXDataset", "num_seqs": 0}, InvalidOptionError, "num_seqs"),
    ({"class": "Task12AXDataset", "num_seqs": 3, "seq_ordering": "randm"}, InvalidOptionError, "seq_ordering"),
    ({"class": "Task12AXDataset", "num_seqs": 3, "seq_ordering": "laplace:x"}, InvalidOptionError, "seq_ordering"),
    ({"class": "Task12AXDataset", "num_seqs": 3, "fixed_random_seed": -1}, InvalidOptionError, "fixed_random_seed"),
    ({"class": "Task12AXDataset", "num_seqs": 3, "window": 3}, InvalidOptionError, "window"),
    ({"class": "Task12AXDataset", "num_seqs": 3, "partition_epoch": 2, "repeat_epoch": 2},
     InvalidOptionError, "repeat_epoch"),
    ({"class": "HDFDataset", "files": "a.hdf"}, InvalidOptionError, "files"),
    ({"class": "DummyDataset", "input_dim": 2, "output_dim": {"x": 3}, "num_seqs": 2},
     InvalidOptionError, "output_dim"),
    ({"class": "RandomDataset", "input_dim": 2, "output_dim": 3, "num_seqs": 2, "seq_len_range": (5, 2)},
     InvalidOptionError, "seq_len_range"),
    ({"num_seqs": 3}, MissingOptionError, "class"),
])
def test_option_errors(opts, error, option):
    with pytest.raises(error) as info:
        make_dataset(opts, "train")
    assert info.value.option == option and "dataset 'train'" in str(info.value)


def test_seq_ordering_suggestion():
    with pytest.raises(InvalidOptionError) as info:
        Task12AXDataset(num_seqs=3, seq_ordering="sorted_revers")
    assert "'sorted_reverse'" in info.value.suggestion


def test_reading_before_init_epoch_is_an_error():
    with pytest.raises(RuntimeError):
        Task12AXDataset(num_seqs=3).num_seqs()


# ---------------------------------------------------------------------------
# Orderings

LENGTHS = [5, 17, 3, 3, 40, 12, 8, 1, 29, 22, 6, 14, 9, 31, 2, 19, 11, 25, 4, 7, 16, 10, 13]


def test_default_and_reverse_orders():
    assert epoch_order(static_dataset(LENGTHS), 1) == list(range(len(LENGTHS)))
    assert epoch_order(static_dataset(LENGTHS, seq_ordering="reverse"), 1) == list(range(len(LENGTHS)))[::-1]


@pytest.mark.parametrize("ordering", ["default", "reverse", "sorted", "sorted_reverse", "random", "random:2",
                                      "laplace", "laplace:3", "laplace:.5:2", "sort_bin_shuffle:4",
                                      "sort_bin_shuffle_x2:.6"])
def test_every_ordering_is_a_deterministic_permutation(ordering):
    dataset = static_dataset(LENGTHS, seq_ordering=ordering)
    for epoch in (1, 2, 7):
        order = epoch_order(dataset, epoch)
        assert sorted(order) == list(range(len(LENGTHS)))
        assert order == epoch_order(static_dataset(LENGTHS, seq_ordering=ordering), epoch)


def test_sorted_orders():
    sorted_lengths = [LENGTHS[i] for i in epoch_order(static_dataset(LENGTHS, seq_ordering="sorted"), 1)]
    assert sorted_lengths == sorted(LENGTHS)
    reverse_lengths = [LENGTHS[i] for i in epoch_order(static_dataset(LENGTHS, seq_ordering="sorted_reverse"), 1)]
    assert reverse_lengths == sorted(LENGTHS, reverse=True)


@pytest.mark.parametrize("bins", [2, 3, 5])
def test_laplace_bins_alternate_up_and_down(bins):
    n = len(LENGTHS)
    order = epoch_order(static_dataset(LENGTHS, seq_ordering=f"laplace:{bins}"), 4)
    for b in range(bins):
        part = [LENGTHS[i] for i in order[b * n // bins:(b + 1) * n // bins]]
        assert part == sorted(part, reverse=b % 2 == 1)


def test_sort_bin_shuffle_bins_are_sorted_runs():
    order = epoch_order(static_dataset(LENGTHS, seq_ordering="sort_bin_shuffle:3"), 2)
    lengths = [LENGTHS[i] for i in order]
    descents = sum(1 for a, b in zip(lengths, lengths[1:]) if b < a)
    assert descents <= 2  # three ascending runs at most


def test_random_order_seeding():
    def order(epoch, **opts):
        return epoch_order(static_dataset(LENGTHS, seq_ordering=opts.pop("ordering", "random"), **opts), epoch)

    assert order(1) != order(2)
    assert order(1, fixed_random_seed=3) == order(2, fixed_random_seed=3)
    assert order(1, random_seed_offset=1) == order(2)
    assert order(1, ordering="random:3") == order(3, ordering="random:3") != order(4, ordering="random:3")


def test_random_sample_draws_with_replacement():
    order = epoch_order(static_dataset(LENGTHS, seq_ordering="random_sample"), 1)
    assert len(order) == len(LENGTHS) and set(order) <= set(range(len(LENGTHS)))
    assert len(set(order)) < len(LENGTHS)  # 23 draws from 23 without a repeat is ~1e-9 likely


@pytest.mark.parametrize("parts", [2, 3, 4])
def test_partition_epoch_covers_the_corpus_once_per_full_epoch(parts):
    dataset = static_dataset(LENGTHS, seq_ordering="random", partition_epoch=parts)
    for full_epoch in range(2):
        orders = [epoch_order(dataset, full_epoch * parts + p + 1) for p in range(parts)]
        assert sorted(sum(orders, [])) == list(range(len(LENGTHS)))
        assert max(map(len, orders)) - min(map(len, orders)) <= 1


def test_repeat_epoch():
    order = epoch_order(static_dataset(LENGTHS, seq_ordering="random", repeat_epoch=3), 1)
    assert sorted(order) == sorted(list(range(len(LENGTHS))) * 3)


@pytest.mark.parametrize("text", ["rand", "random:0", "random:1:2", "laplace:a", "sorted:3", ""])
def test_seq_ordering_parse_errors(text):
    with pytest.raises(ValueError):
        SeqOrdering.parse(text)
