"""`rf.merge_dims_packed`: each sequence's valid frames first on the merged axis, in the order flattening the
sequence alone gives, also for a dynamic dim inside another one, two dynamic dims and an empty sequence."""

import numpy as np
import pytest

from netcompiler import frontend as rf
from netcompiler.backends import get_backend
from netcompiler.tensor import FeatureDim, SpatialDim, batch_dim

TF = get_backend("tensorflow")


def _check(run, values, dims, parts, sizes):
    """Merges `parts` of `values` (laid out as `dims`, batch first) and compares each sequence's valid frames
    with NumPy (the sequence cut to `sizes[dim][b]` on each dynamic part, then flattened)."""
    x = rf.convert_to_tensor(values, dims=dims)
    y, merged = rf.merge_dims_packed(x, dims=parts)
    assert y.dims == (batch_dim, merged)
    got = y.raw.numpy()
    order = [dims.index(d) - 1 for d in parts]
    for b in range(values.shape[0]):
        seq = values[b][tuple(slice(0, sizes[d][b]) if d in sizes else slice(None) for d in dims[1:])]
        want = seq.transpose(order).reshape(-1)
        assert run.size(merged).raw.numpy()[b] == want.size
        np.testing.assert_array_equal(got[b, :want.size], want)


@pytest.mark.parametrize("lengths", [[4, 2, 1], [3, 0, 2]])
def test_dynamic_dim_inside_a_static_one(lengths):
    time, feat = SpatialDim("time"), FeatureDim("f", 3)
    lengths = np.array(lengths, np.int32)
    with rf.RunContext(TF) as run:
        run.set_size(batch_dim, 3, size_dims=())
        run.set_size(time, lengths)
        values = np.arange(3 * 4 * 3, dtype="float32").reshape(3, 4, 3)
        _check(run, values, (batch_dim, time, feat), [feat, time], {time: lengths})


def test_two_dynamic_dims():
    rows, cols = SpatialDim("rows"), SpatialDim("cols")
    sizes = {rows: np.array([2, 3, 1], np.int32), cols: np.array([4, 1, 2], np.int32)}
    with rf.RunContext(TF) as run:
        run.set_size(batch_dim, 3, size_dims=())
        for dim, n in sizes.items():
            run.set_size(dim, n)
        values = np.arange(3 * 3 * 4, dtype="int32").reshape(3, 3, 4)
        _check(run, values, (batch_dim, rows, cols), [rows, cols], sizes)
        _check(run, values, (batch_dim, rows, cols), [cols, rows], sizes)


def test_static_inner_dims_are_a_plain_reshape():
    time, feat = SpatialDim("time"), FeatureDim("f", 2)
    with rf.RunContext(TF) as run:
        run.set_size(batch_dim, 2, size_dims=())
        run.set_size(time, np.array([3, 1], np.int32))
        values = np.arange(12, dtype="float32").reshape(2, 3, 2)
        y, _ = rf.merge_dims_packed(rf.convert_to_tensor(values, dims=(batch_dim, time, feat)), dims=[time, feat])
        np.testing.assert_array_equal(y.raw.numpy(), values.reshape(2, 6))
