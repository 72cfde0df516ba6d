"""The prefetching feed (feeding.tf_batches): the same batches as the NumPy stream, early exits that leave the
dataset usable, and errors raised as themselves after the batches before them."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from netcompiler.engine.batching import parse_batching  # noqa: E402
from netcompiler.engine.datasets import make_dataset  # noqa: E402
from netcompiler.engine.feeding import batch_stream, tf_batches  # noqa: E402

SIGNATURE = ({"data": tf.TensorSpec([None, None, 9], tf.float32), "classes": tf.TensorSpec([None, None], tf.int32)},
             {"data": tf.TensorSpec([None], tf.int32), "classes": tf.TensorSpec([None], tf.int32)})
SETTINGS = parse_batching(batch_size=500, max_seqs=4)


def _dataset():
    dataset = make_dataset({"class": "Task12AXDataset", "num_seqs": 60}, "train")
    dataset.init_epoch(1)
    return dataset


def _as_numpy(batches):
    return [({k: np.asarray(v) for k, v in inputs.items()}, {k: np.asarray(v) for k, v in lengths.items()})
            for inputs, lengths in batches]


def _assert_same(got, expected):
    assert len(got) == len(expected)
    for (inputs, lengths), (want_inputs, want_lengths) in zip(got, expected):
        for have, want in ((inputs, want_inputs), (lengths, want_lengths)):
            assert have.keys() == want.keys()
            for key in want:
                assert have[key].dtype == want[key].dtype and np.array_equal(have[key], want[key])


@pytest.fixture(params=[0.0, 60.0], ids=["a-group-per-batch", "one-group"])
def grouping(request, monkeypatch):
    """Batches handed over one by one, or all in one group (the producer's GROUP_SECONDS)."""
    from netcompiler.engine.feeding import _Feed

    monkeypatch.setattr(_Feed, "GROUP_SECONDS", request.param)


def test_feed_gives_the_numpy_streams_batches_and_survives_an_early_exit(grouping):
    dataset = _dataset()
    expected = _as_numpy(batch_stream(dataset, SIGNATURE[0], SETTINGS))
    feed = tf_batches(dataset, SIGNATURE, SETTINGS)
    for index, (inputs, _lengths) in enumerate(feed):
        assert isinstance(inputs["data"], tf.Tensor)
        if index == 1:
            break  # the producer must stop before the next pass reads the dataset
    _assert_same(_as_numpy(feed), expected)
    assert len(expected) > 5


def test_an_error_while_reading_comes_after_the_batches_before_it(grouping):
    dataset = _dataset()
    expected = _as_numpy(batch_stream(dataset, SIGNATURE[0], SETTINGS))
    original = dataset.get_seq

    def get_seq(index):
        if index == 20:
            raise KeyError("broken sequence 20")
        return original(index)

    dataset.get_seq = get_seq
    got = []
    with pytest.raises(KeyError, match="broken sequence 20"):
        for batch in tf_batches(dataset, SIGNATURE, SETTINGS):
            got.append(batch)
    _assert_same(_as_numpy(got), expected[:len(got)])
    assert 0 < len(got) < len(expected)
