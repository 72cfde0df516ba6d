"""Convolution, transposed convolution and pooling modules on TensorFlow and PyTorch, against NumPy references computed
per sequence on ragged batches (new spatial sizes included)."""

import numpy as np
import pytest

from frontend_harness import IN, LENGTHS, OUT, TIME, Input, ragged_batch, run_both
from netcompiler import frontend as rf
from netcompiler.backends import get_backend
from netcompiler.tensor import Dim, batch_dim

# NumPy references run on the garbage of padded frames too (only valid frames are compared)
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")


# --- convolution, transposed convolution, pooling -------------------------------------------------------------
def _np_conv1d(x, w, b, stride, padding, dilation=1):
    """One sequence x [T, in] with w [out, in, K] as TF computes it (SAME: the smaller half of the padding left)."""
    k = w.shape[2]
    span = (k - 1) * dilation + 1
    n = x.shape[0]
    if padding == "same":
        out = -(-n // stride)
        total = max((out - 1) * stride + span - n, 0)
        x = np.pad(x, [(total // 2, total - total // 2), (0, 0)])
    else:
        out = max(-(-(n - span + 1) // stride), 0)
    y = np.zeros((out, w.shape[0]))
    for o in range(out):
        for j in range(k):
            y[o] += x[o * stride + j * dilation] @ w[:, :, j].T
    return y + b


def _np_transposed_conv1d(x, w, b, stride, padding):
    """One sequence x [T, in] with w [in, out, K], cut as TF's conv_transpose."""
    n, k = x.shape[0], w.shape[2]
    full = np.zeros(((n - 1) * stride + k if n else 0, w.shape[1]))
    for i in range(n):
        for j in range(k):
            full[i * stride + j] += x[i] @ w[:, :, j]
    keep = n * stride + (max(k - stride, 0) if padding == "valid" else 0)
    left = max(k - stride, 0) // 2 if padding == "same" else 0
    full = np.pad(full, [(0, max(left + keep - full.shape[0], 0)), (0, 0)])
    return full[left:left + keep] + b


def _np_pool1d(x, mode, size, stride, padding):
    """One sequence x [T, C]; windows count only real frames (an empty one gives 0)."""
    n = x.shape[0]
    if padding == "same":
        out = -(-n // stride)
        left = max((out - 1) * stride + size - n, 0) // 2
    else:
        out, left = max(-(-(n - size + 1) // stride), 0), 0
    y = np.zeros((out, x.shape[1]))
    for o in range(out):
        frames = x[max(o * stride - left, 0):max(o * stride - left + size, 0)]
        if len(frames):
            y[o] = frames.max(0) if mode == "max" else frames.mean(0)
    return y


def _per_sequence(result, name, out_dim, want_fn, batch, in_key="x"):
    """Compares each sequence's valid output frames with `want_fn(its valid input frames)` and the output lengths."""
    got = result.value(name, [batch_dim, result.dims[name][1] if result.dims[name][0] == batch_dim else
                              result.dims[name][0], out_dim])
    mask = result.mask(name, [batch_dim, [d for d in result.dims[name] if d not in (batch_dim, out_dim)][0],
                              out_dim])[..., 0]
    x = batch.inputs[in_key].value
    for i, n in enumerate(LENGTHS[TIME]):
        want = want_fn(x[i, :n].astype(np.float64))
        assert mask[i].sum() == len(want), (i, mask[i].sum(), len(want))
        np.testing.assert_allclose(got[i, :len(want)], want, rtol=1e-5, atol=1e-5, err_msg=f"sequence {i}")


CONV_CASES = [("same", 1, 3), ("same", 1, 4), ("same", 2, 3), ("valid", 1, 2), ("valid", 2, 3), ("same", 3, 4)]


@pytest.mark.parametrize("padding,stride,window", CONV_CASES)
def test_conv1d_matches_numpy_per_sequence(padding, stride, window):
    batch = ragged_batch({"x": Input([batch_dim, TIME, IN])}, LENGTHS)
    out_dims = {}

    def call(model, x):
        y, out_dims["time"] = model(x, in_spatial_dim=TIME)
        return y

    result, _ = run_both(lambda: rf.Conv1d(IN, OUT, window, padding=padding, strides=stride), call, batch)
    w, b = result.params["filter"], result.params["bias"]
    assert w.shape == (3, 5, window) and list(result.params) == ["filter", "bias"]
    assert (out_dims["time"] is TIME) == (padding == "same" and stride == 1)
    _per_sequence(result, "output", OUT, lambda x: _np_conv1d(x, w, b, stride, padding), batch)


def test_conv1d_dilated_and_grouped():
    feat = Dim(4, name="feat")
    batch = ragged_batch({"x": Input([batch_dim, TIME, feat])}, LENGTHS)
    result, _ = run_both(lambda: rf.Conv1d(feat, Dim(6, name="out6"), 2, padding="valid", dilation_rate=2, groups=2),
                         lambda m, x: m(x, in_spatial_dim=TIME)[0], batch)
    w, b = result.params["filter"], result.params["bias"]  # [6, 2, 2]: each group of 3 outputs reads 2 inputs
    full = np.zeros((6, 4, 2))
    full[:3, :2], full[3:, 2:] = w[:3], w[3:]
    out6 = result.model.out_dim
    _per_sequence(result, "output", out6, lambda x: _np_conv1d(x, full, b, 1, "valid", dilation=2), batch)


@pytest.mark.parametrize("window", [2, 3])
def test_conv1d_same_dilated_over_time(window):
    # stride 1: the input zeroed after each sequence's end, then the backend's own "same" padding
    batch = ragged_batch({"x": Input([batch_dim, TIME, IN])}, LENGTHS)
    result, _ = run_both(lambda: rf.Conv1d(IN, OUT, window, padding="same", dilation_rate=2),
                         lambda m, x: m(x, in_spatial_dim=TIME)[0], batch)
    w, b = result.params["filter"], result.params["bias"]
    _per_sequence(result, "output", OUT, lambda x: _np_conv1d(x, w, b, 1, "same", dilation=2), batch)


def test_conv2d_over_time_and_a_static_dim():
    freq = Dim(6, name="freq")
    batch = ragged_batch({"x": Input([batch_dim, TIME, freq, IN])}, LENGTHS)
    holder = {}

    def call(model, x):
        y, holder["dims"] = model(x, in_spatial_dims=[TIME, freq])
        return y

    result, _ = run_both(lambda: rf.Conv2d(IN, OUT, [3, 2], padding="same", strides=[1, 2]), call, batch)
    w, b = result.params["filter"], result.params["bias"]  # [out, in, 3, 2]
    _, t_dim, f_dim, _ = result.dims["output"]  # (the dims of the last run, on torch, are others)
    assert t_dim is TIME and f_dim.size == 3 and holder["dims"][0] is TIME
    got = result.value("output", [batch_dim, TIME, f_dim, OUT])
    x = batch.inputs["x"].value.astype(np.float64)
    for i, n in enumerate(LENGTHS[TIME]):
        xp = np.pad(x[i, :n], [(1, 1), (0, 0), (0, 0)])  # time: window 3, "same": one frame each side
        want = np.zeros((n, 3, 3)) + b  # freq: 6 frames, stride 2, window 2: no padding
        for t in range(n):
            for f in range(3):
                want[t, f] += np.einsum("kjc,ockj->o", xp[t:t + 3, 2 * f:2 * f + 2], w)
        np.testing.assert_allclose(got[i, :n], want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("padding,stride,window", [("valid", 2, 3), ("valid", 3, 2), ("same", 2, 4), ("same", 2, 1),
                                                   ("valid", 1, 3)])
def test_transposed_conv1d_matches_numpy_per_sequence(padding, stride, window):
    batch = ragged_batch({"x": Input([batch_dim, TIME, IN])}, LENGTHS)
    result, _ = run_both(lambda: rf.TransposedConv1d(IN, OUT, window, padding=padding, strides=stride),
                         lambda m, x: m(x, in_spatial_dim=TIME)[0], batch)
    w, b = result.params["filter"], result.params["bias"]
    assert w.shape == (5, 3, window)
    _per_sequence(result, "output", OUT, lambda x: _np_transposed_conv1d(x, w, b, stride, padding), batch)


def test_transposed_conv_strides_default_to_the_window_and_refuse_output_padding():
    batch = ragged_batch({"x": Input([batch_dim, TIME, IN])}, LENGTHS)
    result, _ = run_both(lambda: rf.TransposedConv1d(IN, OUT, 2, padding="valid"),
                         lambda m, x: m(x, in_spatial_dim=TIME)[0], batch)
    w, b = result.params["filter"], result.params["bias"]
    _per_sequence(result, "output", OUT, lambda x: _np_transposed_conv1d(x, w, b, 2, "valid"), batch)
    rf.select_backend("tensorflow")
    module = rf.TransposedConv1d(IN, OUT, 2, padding="valid", output_padding=1)
    with rf.RunContext(get_backend("tensorflow")) as ctx:
        ctx.set_size(TIME, np.array([2, 1], "int32"))
        x = rf.convert_to_tensor(np.zeros((2, 2, 5), "float32"), dims=[batch_dim, TIME, IN])
        with pytest.raises(NotImplementedError, match="output_padding are not supported"):
            module(x, in_spatial_dim=TIME)


@pytest.mark.parametrize("mode", ["max", "avg"])
@pytest.mark.parametrize("padding,stride,size", [("valid", None, 2), ("same", 1, 3), ("same", 2, 3), ("valid", 1, 3)])
def test_pool1d_matches_numpy_per_sequence(mode, padding, stride, size):
    batch = ragged_batch({"x": Input([batch_dim, TIME, IN])}, LENGTHS)
    if mode == "max":
        call = lambda m, x: rf.max_pool1d(x, pool_size=size, padding=padding, strides=stride,  # noqa: E731
                                          in_spatial_dim=TIME)[0]
    else:
        call = lambda m, x: rf.pool1d(x, mode="avg", pool_size=size, padding=padding, strides=stride,  # noqa: E731
                                      in_spatial_dim=TIME)[0]
    result, _ = run_both(lambda: None, call, batch)
    _per_sequence(result, "output", IN, lambda x: _np_pool1d(x, mode, size, stride or size, padding), batch)
    assert np.all(result.outputs["output"][~result.valid["output"]] == 0)  # padded output frames are zero


def test_pool2d_over_time_and_a_static_dim():
    freq = Dim(4, name="freq")
    batch = ragged_batch({"x": Input([batch_dim, TIME, freq, IN])}, LENGTHS)
    holder = {}

    def call(model, x):
        y, holder["dims"] = rf.pool2d(x, mode="max", pool_size=(2, 2), padding="same", in_spatial_dims=[TIME, freq])
        return y

    result, _ = run_both(lambda: None, call, batch)
    _, t_dim, f_dim, _ = result.dims["output"]
    assert f_dim.size == 2 and len(holder["dims"]) == 2
    got = result.value("output", [batch_dim, t_dim, f_dim, IN])
    x = batch.inputs["x"].value
    for i, n in enumerate(LENGTHS[TIME]):
        want = np.stack([x[i, 2 * t:min(2 * t + 2, n)].reshape(-1, 2, 2, 5).max(axis=(0, 2))
                         for t in range(-(-n // 2))]) if n else np.zeros((0, 2, 5))
        np.testing.assert_allclose(got[i, :len(want)], want, rtol=1e-6)


def test_transposed_conv2d_over_time_and_a_static_dim():
    freq = Dim(3, name="freq")
    batch = ragged_batch({"x": Input([batch_dim, TIME, freq, IN])}, LENGTHS)

    def call(model, x):
        return model(x, in_spatial_dims=[TIME, freq])[0]

    result, _ = run_both(lambda: rf.TransposedConv2d(IN, OUT, [2, 3], padding="valid", strides=[2, 1]), call, batch)
    w, b = result.params["filter"], result.params["bias"]  # [in, out, 2, 3]
    _, t_dim, f_dim, _ = result.dims["output"]
    assert t_dim.size is None and t_dim.description == "time*2"
    assert f_dim.size == 5  # 3 frames, stride 1, window 3: 3 + 2
    got = result.value("output", [batch_dim, t_dim, f_dim, OUT])
    x = batch.inputs["x"].value.astype(np.float64)
    for i, n in enumerate(LENGTHS[TIME]):
        want = np.zeros((2 * n, 5, 3))
        for t in range(n):
            for f in range(3):
                for kt in range(2):
                    for kf in range(3):
                        want[2 * t + kt, f + kf] += x[i, t, f] @ w[:, :, kt, kf]
        assert result.mask("output", [batch_dim, t_dim, f_dim, OUT])[i, :, 0, 0].sum() == 2 * n
        np.testing.assert_allclose(got[i, :2 * n], want + b, rtol=1e-5, atol=1e-5)


def test_conv3d_on_static_dims():
    a, b_, c = Dim(4, name="a"), Dim(3, name="b"), Dim(5, name="c")
    batch = ragged_batch({"x": Input([batch_dim, a, b_, c, IN])}, {TIME: [1, 1]})
    result, _ = run_both(lambda: rf.Conv3d(IN, OUT, 2, padding="valid"),
                         lambda m, x: m(x, in_spatial_dims=[a, b_, c])[0], batch)
    w, bias = result.params["filter"], result.params["bias"]
    assert w.shape == (3, 5, 2, 2, 2)
    x = batch.inputs["x"].value.astype(np.float64)
    got = result.outputs["output"]  # [B, 3, 2, 4, out]
    want = np.zeros((2, 3, 2, 4, 3)) + bias
    for i, j, k in np.ndindex(3, 2, 4):
        want[:, i, j, k] += np.einsum("nxyzc,ocxyz->no", x[:, i:i + 2, j:j + 2, k:k + 2], w)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_pooling_and_conv_name_a_missing_spatial_dim():
    rf.select_backend("tensorflow")
    conv = rf.Conv1d(IN, OUT, 3, padding="same")
    other_time = Dim(None, name="other-time")
    with rf.RunContext(get_backend("tensorflow")) as ctx:
        ctx.set_size(TIME, np.array([3, 2], "int32"))
        x = rf.convert_to_tensor(np.zeros((2, 3, 5), "float32"), dims=[batch_dim, TIME, IN])
        with pytest.raises(ValueError, match=r"<Conv1d.*expects an input with spatial dim .*'other-time'"):
            conv(x, in_spatial_dim=other_time)
        with pytest.raises(ValueError, match=r"pooling: the source .* has no spatial dim .*'other-time'"):
            rf.max_pool1d(x, pool_size=2, in_spatial_dim=other_time)


def test_transposed_conv_with_a_given_out_spatial_dim_records_its_sizes():
    batch = ragged_batch({"x": Input([batch_dim, TIME, IN])}, LENGTHS)
    upsampled = Dim(None, name="upsampled")

    def call(model, x):
        y, out = model(x, in_spatial_dim=TIME, out_spatial_dim=upsampled)
        assert out is upsampled
        return {"y": y, "sizes": rf.get_run_ctx().size(upsampled)}

    result, _ = run_both(lambda: rf.TransposedConv1d(IN, OUT, 3, padding="same", strides=3), call, batch)
    np.testing.assert_array_equal(result.outputs["sizes"], 3 * np.array(LENGTHS[TIME]))
    assert result.dims["y"] == (batch_dim, upsampled, OUT)
