"""The op layer's frame ops (`rf.take_frames`, `rf.window`) and `rf.gather`'s clipping of int indices."""

import numpy as np
import pytest

from layer_harness import run_context
from netcompiler import frontend as rf
from netcompiler.backends import get_backend
from netcompiler.tensor import FeatureDim, SpatialDim, batch_dim

TF = get_backend("tensorflow")


@pytest.fixture(params=["tensorflow", "torch"])
def run(request):
    """A run context with batch 2 and a time dim of lengths 3, 1 (padded to 3), on each backend (torch: if
    installed)."""
    if request.param == "torch":
        pytest.importorskip("torch", reason="PyTorch is an optional extra (pip install -e '.[torch]')")
    with run_context([3, 1], backend=request.param) as ctx:
        yield ctx


def tensor(values, dims):
    return rf.convert_to_tensor(np.asarray(values), dims=dims)


def test_take_frames_keeps_the_layout_for_frames_shared_by_all_sequences(run):
    feat, picks = FeatureDim("f", 2), SpatialDim("picks", 4)
    values = np.arange(12, dtype="float32").reshape(2, 3, 2)
    x = tensor(values, [batch_dim, run.time, feat])
    y = rf.take_frames(x, indices=tensor(np.array([-1, 0, 2, 7], "int32"), [picks]), axis=run.time,
                       clip_to_valid=True)
    assert y.dims == (batch_dim, picks, feat)
    np.testing.assert_array_equal(y.raw.numpy(), values[:, [0, 0, 2, 2]])


def test_take_frames_per_sequence_is_a_batched_gather(run):
    picks = SpatialDim("picks", 2)
    values = np.arange(6, dtype="float32").reshape(2, 3)
    x = tensor(values, [batch_dim, run.time])
    y = rf.take_frames(x, indices=tensor(np.array([[2, 0], [1, 5]], "int32"), [batch_dim, picks]), axis=run.time,
                       clip_to_valid=True)
    assert y.dims == (batch_dim, picks)
    np.testing.assert_array_equal(y.raw.numpy(), [[2, 0], [4, 5]])


def test_window_puts_the_window_axis_after_the_framed_one():
    with rf.RunContext(TF):
        time, feat = SpatialDim("t", 5), FeatureDim("f", 2)
        out, window = SpatialDim("out", 2), SpatialDim("window", 3)
        values = np.arange(10, dtype="float32").reshape(5, 2)
        y = rf.window(tensor(values, [time, feat]), axis=time, window_dim=window, out_dim=out, stride=2)
        assert y.dims == (out, window, feat)
        np.testing.assert_array_equal(y.raw.numpy(), np.stack([values[0:3], values[2:5]]))


def test_gather_clips_an_int_index_into_a_dynamic_axis(run):
    values = np.arange(6, dtype="float32").reshape(2, 3)
    x = tensor(values, [batch_dim, run.time])
    np.testing.assert_array_equal(rf.gather(x, indices=5, axis=run.time, clip_to_valid=True).raw.numpy(), [2, 5])
    np.testing.assert_array_equal(rf.gather(x, indices=1, axis=run.time).raw.numpy(), [1, 4])
