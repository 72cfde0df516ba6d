"""The op layer's packing of valid frames: `rf.pack_padded` and its inverse `rf.unpack_padded`, in both orders,
with an empty sequence among others, on each backend."""

import numpy as np
import pytest

from layer_harness import run_on_each_backend
from netcompiler import frontend as rf
from netcompiler.frontend.packing import packed_positions
from netcompiler.tensor import FeatureDim, batch_dim, packed_dim

LENGTHS = [3, 0, 4, 1]


run = run_on_each_backend(LENGTHS)
"""A run context with the batch of LENGTHS on each backend."""


def _numpy(t):
    raw = t.raw
    return raw.detach().numpy() if hasattr(raw, "detach") else raw.numpy()


def _frames(batch_major):
    """(b, t) of every valid frame, in packing order."""
    if batch_major:
        return [(b, t) for b, n in enumerate(LENGTHS) for t in range(n)]
    return [(b, t) for t in range(max(LENGTHS)) for b, n in enumerate(LENGTHS) if t < n]


@pytest.mark.parametrize("batch_major", [True, False])
def test_unpack_puts_packed_frames_back_and_zeros_the_padding(run, batch_major):
    feat = FeatureDim("f", 2)
    values = np.random.RandomState(0).randn(len(LENGTHS), max(LENGTHS), 2).astype("float32")
    values[np.arange(max(LENGTHS))[None, :] >= np.asarray(LENGTHS)[:, None]] = 50.0  # padding: garbage
    x = rf.convert_to_tensor(values, dims=[batch_dim, run.time, feat])
    order = [batch_dim, run.time] if batch_major else [run.time, batch_dim]
    packed, dim = rf.pack_padded(x, dims=order, out_dim=packed_dim(order))
    np.testing.assert_array_equal(_numpy(packed), [values[b, t] for b, t in _frames(batch_major)])
    assert int(np.asarray(_numpy(run.size(dim)))) == sum(LENGTHS)

    y = rf.unpack_padded(packed, in_dim=dim, dims=order)
    assert y.dims == tuple(order) + (feat,)
    want = np.where(values == 50.0, 0.0, values)
    np.testing.assert_array_equal(_numpy(rf.permute(y, [batch_dim, run.time, feat])), want)


def test_packed_positions_count_each_frame_in_packing_order(run):
    positions = _numpy(rf.permute(packed_positions([run.time, batch_dim]), [batch_dim, run.time]))
    for k, (b, t) in enumerate(_frames(batch_major=False)):
        assert positions[b, t] == k


def test_unpack_needs_the_two_packed_dims(run):
    x = rf.convert_to_tensor(np.zeros([3], "float32"), dims=[packed_dim([batch_dim, run.time])])
    with pytest.raises(ValueError, match="two dims"):
        rf.unpack_padded(x, in_dim=x.dims[0], dims=[batch_dim])


full_run = run_on_each_backend([3, 3])
"""Two sequences of 3 frames each: no padding."""


@pytest.mark.parametrize("batch_major", [True, False])
def test_pack_and_unpack_without_padding_are_reshapes(full_run, batch_major):
    """Where no frame is padding (an eager run makes no mask then), packing keeps every frame in packing order,
    and unpacking restores the padded layout."""
    feat = FeatureDim("f", 2)
    values = np.arange(12, dtype="float32").reshape(2, 3, 2)
    x = rf.convert_to_tensor(values, dims=[batch_dim, full_run.time, feat])
    order = [batch_dim, full_run.time] if batch_major else [full_run.time, batch_dim]
    packed, dim = rf.pack_padded(x, dims=order, out_dim=packed_dim(order))
    want = values.reshape(6, 2) if batch_major else values.transpose(1, 0, 2).reshape(6, 2)
    np.testing.assert_array_equal(_numpy(packed), want)
    y = rf.unpack_padded(packed, in_dim=dim, dims=order)
    assert y.dims == tuple(order) + (feat,)
    np.testing.assert_array_equal(_numpy(rf.permute(y, [batch_dim, full_run.time, feat])), values)
