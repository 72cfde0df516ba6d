"""The generated tasks of RETURNN's loop demos: CopyTaskDataset and TaskNumberBaseConvertDataset.

Determinism given the seed, epoch-dependent content and lengths, data specs, value ranges, option errors,
and (slow) a tiny config per dataset that trains one epoch with compile-net.
"""

import numpy as np
import pytest

from netcompiler.engine.datasets import CopyTaskDataset, TaskNumberBaseConvertDataset, make_dataset
from netcompiler.engine.datasets.generating_tasks import digits_of, value_of
from netcompiler.errors import ConfigError, InvalidOptionError, MissingOptionError, UnknownOptionError
from test_datasets import all_seqs, same_seqs


def copy_task(**opts):
    return CopyTaskDataset(**dict(dict(nsymbols=10, num_seqs=50, minlen=2, maxlen=9), **opts))


def base_convert(**opts):
    return TaskNumberBaseConvertDataset(**dict(dict(num_seqs=100), **opts))


MAKERS = {
    "copy": copy_task,
    "copy_growing": lambda **o: copy_task(**dict(dict(minlen=1, maxlen=0, maxlen_epoch_factor=20), **o)),
    "base_convert": base_convert,
    "base_convert_hex_to_dec": lambda **o: base_convert(**dict(dict(input_base=16, output_base=10), **o)),
}


# ---------------------------------------------------------------------------
# Both datasets


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_deterministic_and_seeded_by_epoch(kind):
    make = MAKERS[kind]
    first = all_seqs(make(), 3)
    assert same_seqs(first, all_seqs(make(), 3))
    assert not same_seqs(first, all_seqs(make(), 2))
    assert [tag for tag, _ in first] == [f"seq-{i}" for i in range(len(first))]


@pytest.mark.parametrize("kind", ["copy", "base_convert"])
def test_fixed_random_seed_fixes_content(kind):
    make = MAKERS[kind]
    dataset = make(fixed_random_seed=42)
    assert same_seqs(all_seqs(dataset, 1), all_seqs(dataset, 7))
    assert same_seqs(all_seqs(dataset, 1), all_seqs(make(fixed_random_seed=42), 2))
    assert not same_seqs(all_seqs(dataset, 1), all_seqs(make(fixed_random_seed=43), 1))


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_data_spec_agrees_with_arrays(kind):
    dataset = MAKERS[kind](seq_ordering="sorted")
    dataset.init_epoch(2)
    spec = dataset.data_spec()
    assert list(spec) == ["data", "classes"]
    for i in range(dataset.num_seqs()):
        seq = dataset.get_seq(i)
        assert list(seq) == ["data", "classes"]
        for key, array in seq.items():
            assert spec[key].sparse and spec[key].shape == (None,)
            assert array.dtype.name == spec[key].dtype == "int32" and array.ndim == 1
            assert 0 <= array.min() and array.max() < spec[key].dim
        assert dataset.seq_length(i) == {"data": len(seq["data"]), "classes": len(seq["classes"])}


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_cheap_lengths_agree_with_generated_content(kind):
    """Sorting asks for lengths before any sequence is generated; they must be those of the arrays."""
    dataset = MAKERS[kind](seq_ordering="sorted_reverse")
    dataset.init_epoch(3)
    lengths = [dataset.seq_length(i)["data"] for i in range(dataset.num_seqs())]
    assert lengths == sorted(lengths, reverse=True)
    assert lengths == [len(dataset.get_seq(i)["data"]) for i in range(dataset.num_seqs())]


@pytest.mark.parametrize("config", [
    {"class": "CopyTaskDataset", "nsymbols": 10, "num_seqs": 5, "minlen": 1, "maxlen_epoch_factor": 20},
    {"class": "TaskNumberBaseConvertDataset", "num_seqs": 5},
])
def test_built_from_config_by_class_name(config):
    dataset = make_dataset(config, "train")
    dataset.init_epoch(1)
    assert dataset.num_seqs() == 5 and type(dataset).__name__ == config["class"]


# ---------------------------------------------------------------------------
# CopyTaskDataset


def test_copy_task_classes_equal_data():
    for _, seq in all_seqs(copy_task(nsymbols=3), 1):
        assert np.array_equal(seq["data"], seq["classes"])
    spec = copy_task(nsymbols=7).data_spec()
    assert spec["data"].dim == spec["classes"].dim == 7


def test_copy_task_lengths_cover_the_inclusive_range_and_all_symbols_occur():
    seqs = all_seqs(copy_task(num_seqs=300, minlen=3, maxlen=6, nsymbols=5), 1)
    assert {len(seq["data"]) for _, seq in seqs} == {3, 4, 5, 6}
    assert set(np.concatenate([seq["data"] for _, seq in seqs]).tolist()) == set(range(5))


def test_copy_task_length_range_grows_with_the_epoch():
    """As in att-copy: minlen 1, maxlen_epoch_factor 20 -> lengths in [1, 20 * epoch]."""
    dataset = copy_task(num_seqs=400, minlen=1, maxlen=0, maxlen_epoch_factor=20)
    for epoch in (1, 2, 5):
        lengths = [len(seq["data"]) for _, seq in all_seqs(dataset, epoch)]
        assert min(lengths) >= 1 and max(lengths) <= 20 * epoch
        assert max(lengths) > 15 * epoch  # the range is really used
    assert dataset.length_range(3) == (1, 60)
    fractional = copy_task(minlen=1, maxlen=2, minlen_epoch_factor=0.5, maxlen_epoch_factor=1.5)
    assert fractional.length_range(3) == (2, 6)  # int(1 + 1.5), int(2 + 4.5)


def test_copy_task_growing_lengths_change_content_even_with_a_fixed_seed():
    dataset = copy_task(minlen=1, maxlen=0, maxlen_epoch_factor=20, fixed_random_seed=5)
    one, two = all_seqs(dataset, 1), all_seqs(dataset, 2)
    assert not same_seqs(one, two)
    assert same_seqs(one, all_seqs(dataset, 1))  # back to epoch 1: the same data again
    assert max(len(seq["data"]) for _, seq in all_seqs(dataset, 2)) > 20


def test_copy_task_matches_a_plain_restatement_of_the_draws():
    """Length first (uniform, inclusive range), then one symbol per frame, from RandomState([seed, index])."""
    dataset = copy_task(nsymbols=6, minlen=2, maxlen=8, num_seqs=10)
    for index, (_, seq) in enumerate(all_seqs(dataset, 4)):
        rng = np.random.RandomState([4, index])
        length = rng.randint(2, 9)
        expected = [rng.randint(0, 6) for _ in range(length)]
        assert seq["data"].tolist() == expected


# ---------------------------------------------------------------------------
# TaskNumberBaseConvertDataset


@pytest.mark.parametrize("number, base, digits", [(0, 2, [0]), (5, 2, [1, 0, 1]), (255, 16, [15, 15]),
                                                  (8, 8, [1, 0]), (35, 36, [35]), (36, 36, [1, 0])])
def test_digit_helpers(number, base, digits):
    assert digits_of(number, base) == digits
    assert value_of(digits, base) == number


@pytest.mark.parametrize("input_base, output_base", [(8, 2), (16, 10), (2, 36), (10, 10)])
def test_base_convert_classes_are_the_same_number(input_base, output_base):
    dataset = base_convert(input_base=input_base, output_base=output_base, num_seqs=200)
    chars = "0123456789abcdefghijklmnopqrstuvwxyz"
    assert dataset.labels == {"data": list(chars[:input_base]), "classes": list(chars[:output_base])}
    for _, seq in all_seqs(dataset, 1):
        text_in = "".join(chars[d] for d in seq["data"])
        text_out = "".join(chars[d] for d in seq["classes"])
        assert int(text_in, input_base) == int(text_out, output_base)
        assert text_out == "0" or not text_out.startswith("0")  # no leading zeros in the output


def test_base_convert_defaults_are_octal_to_binary_with_1_to_8_digits():
    dataset = base_convert(num_seqs=500)
    spec = dataset.data_spec()
    assert (spec["data"].dim, spec["classes"].dim) == (8, 2)
    seqs = all_seqs(dataset, 1)
    assert {len(seq["data"]) for _, seq in seqs} == set(range(1, 9))
    assert max(len(seq["classes"]) for _, seq in seqs) <= 24
    assert any(len(seq["classes"]) != len(seq["data"]) for _, seq in seqs)


def test_base_convert_length_options():
    seqs = all_seqs(base_convert(min_input_seq_len=3, max_input_seq_len=4, num_seqs=100), 1)
    assert {len(seq["data"]) for _, seq in seqs} == {3, 4}
    seqs = all_seqs(base_convert(min_input_seq_len=5, max_input_seq_len=5, num_seqs=10), 1)
    assert {len(seq["data"]) for _, seq in seqs} == {5}


# ---------------------------------------------------------------------------
# Option errors


@pytest.mark.parametrize("make, error, option, words", [
    (lambda: CopyTaskDataset(num_seqs=5, minlen=1, maxlen=3), MissingOptionError, "nsymbols", "required"),
    (lambda: CopyTaskDataset(nsymbols=300, num_seqs=5, minlen=1, maxlen=3), InvalidOptionError, "nsymbols",
     "at most 256"),
    (lambda: CopyTaskDataset(nsymbols=0, num_seqs=5, minlen=1, maxlen=3), InvalidOptionError, "nsymbols",
     "positive"),
    (lambda: CopyTaskDataset(nsymbols="10", num_seqs=5, minlen=1, maxlen=3), InvalidOptionError, "nsymbols",
     "must be int"),
    (lambda: CopyTaskDataset(nsymbols=10, num_seqs=5), InvalidOptionError, "minlen", "0 < minlen <= maxlen"),
    (lambda: CopyTaskDataset(nsymbols=10, num_seqs=5, minlen=4, maxlen=3), InvalidOptionError, "maxlen",
     "[4, 3]"),
    (lambda: CopyTaskDataset(nsymbols=10, num_seqs=5, minlen=1, maxlen=3, maxlen_epoch_factor="2"),
     InvalidOptionError, "maxlen_epoch_factor", "must be float"),
    (lambda: CopyTaskDataset(nsymbols=10, minlen=1, maxlen=3), MissingOptionError, "num_seqs", "required"),
    (lambda: CopyTaskDataset(nsymbols=10, num_seqs=5, minlen=1, max_len=3), UnknownOptionError, "max_len",
     "'maxlen'"),
    (lambda: TaskNumberBaseConvertDataset(num_seqs=5, input_base=1), InvalidOptionError, "input_base",
     "[2, 36]"),
    (lambda: TaskNumberBaseConvertDataset(num_seqs=5, output_base=37), InvalidOptionError, "output_base",
     "[2, 36]"),
    (lambda: TaskNumberBaseConvertDataset(num_seqs=5, min_input_seq_len=0), InvalidOptionError,
     "min_input_seq_len", "positive"),
    (lambda: TaskNumberBaseConvertDataset(num_seqs=5, min_input_seq_len=4, max_input_seq_len=3),
     InvalidOptionError, "max_input_seq_len", ">= min_input_seq_len"),
    (lambda: TaskNumberBaseConvertDataset(num_seqs=5, nsymbols=3), UnknownOptionError, "nsymbols",
     "unknown for class 'TaskNumberBaseConvertDataset'"),
    (lambda: TaskNumberBaseConvertDataset(num_seqs=5, input_bse=3), UnknownOptionError, "input_bse",
     "'input_base'"),
])
def test_option_errors(make, error, option, words):
    with pytest.raises(error) as info:
        make()
    assert isinstance(info.value, ConfigError)
    assert info.value.option == option
    assert "dataset 'dataset'" in str(info.value)
    assert words in str(info.value)


def test_copy_task_epoch_dependent_range_is_checked_per_epoch():
    """minlen 0 + 0.5 per epoch: no valid length in epoch 1, fine from epoch 2 on."""
    dataset = CopyTaskDataset(nsymbols=4, num_seqs=5, minlen_epoch_factor=0.5, maxlen=5)
    with pytest.raises(InvalidOptionError, match=r"in epoch 1; need 0 < minlen <= maxlen") as info:
        dataset.init_epoch(1)
    assert info.value.option == "minlen"
    dataset.init_epoch(2)
    assert dataset.num_seqs() == 5


# ---------------------------------------------------------------------------
# End to end (slow): each dataset feeds a tiny network through compile-net for one epoch


COPY_CONFIG = """
train = {"class": "CopyTaskDataset", "nsymbols": 5, "num_seqs": 40, "minlen": 1, "maxlen_epoch_factor": 8}
dev = {"class": "CopyTaskDataset", "nsymbols": 5, "num_seqs": 10, "minlen": 1, "maxlen_epoch_factor": 8,
       "fixed_random_seed": 42}
extern_data = {"data": {"sparse": True, "dim": 5}, "classes": {"sparse": True, "dim": 5}}
network = {
    "embed": {"class": "linear", "activation": "tanh", "from": "data", "n_out": 8},
    "output": {"class": "softmax", "loss": "ce", "from": "embed"},
}
batch_size = 200
max_seqs = 10
adam = True
learning_rate = 0.01
num_epochs = 1
"""

# The lengths of "data" and "classes" differ: the input is summed over time, and the output is a loop over
# the target's frames that sees that summary and its own previous output; the softmax reads that loop.
BASE_CONVERT_CONFIG = """
train = {"class": "TaskNumberBaseConvertDataset", "num_seqs": 40}
dev = {"class": "TaskNumberBaseConvertDataset", "num_seqs": 10, "fixed_random_seed": 42}
extern_data = {"data": {"sparse": True, "dim": 8}, "classes": {"sparse": True, "dim": 2}}
network = {
    "embed": {"class": "linear", "activation": "tanh", "from": "data", "n_out": 8},
    "summary": {"class": "reduce", "mode": "sum", "axes": "T", "from": "embed"},
    "decoder": {"class": "rec", "from": [], "target": "classes", "unit": {
        "output": {"class": "linear", "activation": "tanh", "from": ["prev:output", "base:summary"], "n_out": 8},
    }},
    "output": {"class": "softmax", "from": "decoder", "target": "classes", "loss": "ce"},
}
batch_size = 200
max_seqs = 10
adam = True
learning_rate = 0.01
num_epochs = 1
"""


@pytest.mark.slow
@pytest.mark.parametrize("name, text", [("copy", COPY_CONFIG), ("base_convert", BASE_CONVERT_CONFIG)],
                         ids=["copy", "base_convert"])
def test_tiny_config_trains_one_epoch(name, text, tmp_path):
    from test_end_to_end import assert_trained, compile_net

    config = tmp_path / f"{name}.py"
    config.write_text(text + f"model = {str(tmp_path / 'out' / 'model')!r}\n")
    run = compile_net(config, cwd=tmp_path)
    assert_trained(run, 1)
