"""The TF feed converts equal length arrays of a batch once (issue 12 goal 6) and keeps different ones apart."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from netcompiler.engine.feeding import _length_tensors  # noqa: E402


def test_equal_lengths_share_a_tensor_and_different_ones_do_not():
    spec = {key: tf.TensorSpec([None], dtype) for key, dtype in
            (("data", tf.int32), ("classes", tf.int32), ("other", tf.int32), ("wide", tf.int64))}
    lengths = {"data": np.array([3, 2], np.int32), "classes": np.array([3, 2], np.int32),
               "other": np.array([3, 1], np.int32), "wide": np.array([3, 2], np.int32)}
    tensors = _length_tensors(lengths, spec)
    assert tensors["data"] is tensors["classes"]
    assert tensors["other"] is not tensors["data"] and tensors["wide"] is not tensors["data"]
    for key, value in lengths.items():
        assert tensors[key].dtype == spec[key].dtype
        np.testing.assert_array_equal(tensors[key].numpy(), value)
