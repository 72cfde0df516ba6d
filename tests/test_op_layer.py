"""The core under every layer: Tensor, the op layer (rf) on the TensorFlow backend (and the PyTorch one, where
installed), the run context's sizes and masks, derived batch dims (batch x beam)."""

import subprocess
import sys

import numpy as np
import pytest

from layer_harness import run_on_each_backend
from netcompiler import frontend as rf
from netcompiler.backends import get_backend
from netcompiler.errors import ConfigError
from netcompiler.tensor import BATCH, Data, Dim, FeatureDim, SpatialDim, Tensor, batch_dim, merge_dims

LENGTHS = np.array([4, 2, 1], dtype=np.int32)


run = run_on_each_backend(LENGTHS)
"""A run context with the batch of LENGTHS on each backend."""


def tensor(values, dims, **kwargs):
    return rf.convert_to_tensor(np.asarray(values), dims=dims, **kwargs)


def valid(values, lengths=LENGTHS):
    """NumPy: frames t >= length set to NaN ([B, T, ...] layout), to compare only valid frames."""
    out = np.array(values, dtype=np.float64)
    for b, n in enumerate(lengths):
        out[b, n:] = np.nan
    return out


def test_operators_broadcast_by_dim_not_by_position(run):
    feat = FeatureDim("f", 2)
    x = tensor(np.arange(24, dtype="float32").reshape(3, 4, 2), [batch_dim, run.time, feat])
    bias = tensor(np.array([10.0, 20.0], "float32"), [feat])
    per_time = tensor(np.arange(4, dtype="float32"), [run.time])
    y = x + bias - per_time * 2
    assert y.dims == (batch_dim, run.time, feat)
    expected = np.arange(24).reshape(3, 4, 2) + [10, 20] - 2 * np.arange(4)[None, :, None]
    np.testing.assert_allclose(y.raw.numpy(), expected)
    # a dims order other than the first operand's: the result follows the first operand
    z = per_time * x
    assert z.dims == (run.time, batch_dim, feat)
    np.testing.assert_allclose(rf.permute(z, x.dims).raw.numpy(), x.raw.numpy() * np.arange(4)[None, :, None])


def test_mismatched_dtypes_are_refused(run):
    x = tensor(np.zeros((3,), "float32"), [batch_dim])
    with pytest.raises(TypeError, match="dtypes differ"):
        _ = x * tensor(np.zeros((3,), "int32"), [batch_dim])


def test_reduce_masks_padding_of_the_reduced_dynamic_dim(run):
    feat = FeatureDim("f", 3)
    values = np.random.RandomState(0).randn(3, 4, 3).astype("float32")
    values[1, 2:] = 1e6  # padding
    values[2, 1:] = -1e6
    x = tensor(values, [batch_dim, run.time, feat])
    for mode, fn in (("sum", np.nansum), ("mean", np.nanmean), ("max", np.nanmax), ("min", np.nanmin)):
        got = rf.reduce(x, mode=mode, axis=run.time)
        assert got.dims == (batch_dim, feat)
        np.testing.assert_allclose(got.raw.numpy(), fn(valid(values), axis=1), rtol=1e-5, err_msg=mode)
    # reducing the batch mixes in every sequence's padding: masked too
    total = rf.reduce(x, mode="sum", axis=[batch_dim, run.time])
    np.testing.assert_allclose(total.raw.numpy(), np.nansum(valid(values), axis=(0, 1)), rtol=1e-5)
    argmax = rf.reduce(x, mode="argmax", axis=run.time)
    assert argmax.sparse_dim == run.time and argmax.dtype == "int32"
    np.testing.assert_array_equal(argmax.raw.numpy(), np.nanargmax(valid(values), axis=1))


def test_argmax_and_argmin_take_the_first_of_tied_extremes(run):
    feat = FeatureDim("f", 5)
    x = tensor(np.array([[1, 3, 3, 0, 3], [2, 0, 0, 2, 0], [4, 4, 4, 4, 4]], "float32"), [batch_dim, feat])
    np.testing.assert_array_equal(rf.reduce(x, mode="argmax", axis=feat).raw.numpy(), [1, 0, 0])
    np.testing.assert_array_equal(rf.reduce(x, mode="argmin", axis=feat).raw.numpy(), [3, 1, 0])


def test_matmul_with_shared_and_dynamic_reduced_dims(run):
    rng = np.random.RandomState(1)
    heads, feat = SpatialDim("heads", 2), FeatureDim("f", 3)
    a_values = rng.randn(3, 2, 4, 3).astype("float32")
    a_values[1, :, 2:] = 77.0  # padding along the reduced time dim
    b_values = rng.randn(3, 2, 4).astype("float32")
    a = tensor(a_values, [batch_dim, heads, run.time, feat])
    b = tensor(b_values, [batch_dim, heads, run.time])
    y = rf.matmul(a, b, reduce=run.time)
    assert y.dims == (batch_dim, heads, feat)
    masked = np.nan_to_num(valid(a_values.transpose(0, 2, 1, 3)).transpose(0, 2, 1, 3))
    np.testing.assert_allclose(y.raw.numpy(), np.einsum("bhtf,bht->bhf", masked, b_values), rtol=1e-5)
    # the plain projection [B, T, F] x [F, O]
    out = FeatureDim("o", 5)
    w = tensor(rng.randn(3, 5).astype("float32"), [feat, out])
    x = tensor(rng.randn(3, 4, 3).astype("float32"), [batch_dim, run.time, feat])
    np.testing.assert_allclose(rf.matmul(x, w, reduce=feat).raw.numpy(), x.raw.numpy() @ w.raw.numpy(), rtol=1e-5)


def test_softmax_over_a_dynamic_dim_gives_padding_zero(run):
    x = tensor(np.zeros((3, 4), "float32"), [batch_dim, run.time])
    probs = rf.softmax(x, axis=run.time).raw.numpy()
    for b, n in enumerate(LENGTHS):
        np.testing.assert_allclose(probs[b, :n], 1.0 / n)
        assert np.all(probs[b, n:] == 0)


def test_merge_split_concat_gather_round_trip(run):
    feat = FeatureDim("f", 6)
    values = np.arange(72, dtype="float32").reshape(3, 4, 6)
    x = tensor(values, [batch_dim, run.time, feat])
    parts = [FeatureDim("a", 2), FeatureDim("b", 3)]
    split = rf.split_dims(x, axis=feat, dims=parts)
    assert split.dims == (batch_dim, run.time, parts[0], parts[1])
    merged, merged_dim = rf.merge_dims(split, dims=parts)
    np.testing.assert_array_equal(merged.raw.numpy(), values)
    # the merged time x feature dim knows its per-sequence sizes from its derivation
    _, time_feat = rf.merge_dims(x, dims=[run.time, feat])
    np.testing.assert_array_equal(run.size(time_feat).raw.numpy(), LENGTHS * 6)
    left, right = rf.split(x, axis=feat, out_dims=[FeatureDim("l", 1), FeatureDim("r", 5)])
    joined = rf.concat((left, left.feature_dim), (right, right.feature_dim), out_dim=feat)
    np.testing.assert_array_equal(joined.raw.numpy(), values)
    picks = SpatialDim("picks", 2)
    indices = tensor(np.array([[3, 0], [1, 1], [0, 0]], "int32"), [batch_dim, picks])
    gathered = rf.gather(x, indices=indices, axis=run.time)
    assert gathered.dims == (batch_dim, picks, feat)
    np.testing.assert_array_equal(gathered.raw.numpy(), values[np.arange(3)[:, None], indices.raw.numpy()])


def test_where_broadcasts_condition_and_values(run):
    mask = run.mask(run.time)
    assert mask.dims == (batch_dim, run.time)
    x = tensor(np.ones((4, 3), "float32"), [run.time, batch_dim])
    y = rf.where(mask, x, 0.0)
    np.testing.assert_array_equal(rf.permute(y, [batch_dim, run.time]).raw.numpy(),
                                  np.arange(4)[None, :] < LENGTHS[:, None])


@pytest.mark.parametrize("backend", ["tensorflow", "torch"])
def test_a_mask_only_where_some_sequence_is_shorter(backend):
    """An eager torch run of sequences that all fill the padded length makes no mask (so no masking or packing
    ops); TensorFlow's steps are traced, where lengths are not known, so it always makes one."""
    if backend == "torch":
        pytest.importorskip("torch", reason="PyTorch is an optional extra")
    from layer_harness import run_context

    with run_context([4, 4, 4], backend=backend) as full:
        mask = full.mask(full.time)
        assert (mask is None) == (backend == "torch")
        if mask is not None:
            assert np.asarray(mask.raw).all()
    with run_context([4, 2, 4], backend=backend) as ragged:
        mask = ragged.mask(ragged.time)
        np.testing.assert_array_equal(np.asarray(rf.permute(mask, [batch_dim, ragged.time]).raw),
                                      np.arange(4)[None, :] < np.array([4, 2, 4])[:, None])


def test_a_kept_mask_of_full_sequences_is_no_mask_in_loop_steps():
    """`keep_mask` before a loop remembers that a full batch has no padding: the steps (also of a beam search,
    whose contexts repeat what they inherit per hypothesis) get None without checking the lengths again."""
    pytest.importorskip("torch", reason="PyTorch is an optional extra")
    from layer_harness import run_context

    with run_context([4, 4, 4], backend="torch") as full:
        full.keep_mask(full.time)
        full.keep_mask(batch_dim)  # the batch has no mask: nothing kept
        assert full.masks.get(batch_dim) is None
        step = full.child(beam=2)
        full.backend = None  # a step that made a mask (or checked lengths) would fail now
        step.backend = None
        assert step.mask(full.time) is None
        assert full.mask(full.time) is None


def test_size_table_survives_declare_same_as_after_use():
    """A Dim used as a size-table key and declared the same as another afterwards is still found, by
    either Dim."""
    table = rf.SizeTable()
    a, b = SpatialDim("a"), SpatialDim("b")
    table.set(a, "sizes of a")
    a.declare_same_as(b)  # a's hash now follows b
    assert table.get(a) == "sizes of a"
    assert table.get(b) == "sizes of a"
    assert table.get(SpatialDim("c")) is None


def test_nested_run_context_sees_the_sizes_around_it(run):
    inner_dim = SpatialDim("inner")
    step = run.child()
    with step:
        step.set_size(inner_dim, np.array([1, 1, 1], "int32"))
        assert step.size(run.time) is run.size(run.time)
        assert rf.get_run_ctx() is step
    assert rf.get_run_ctx() is run
    assert inner_dim not in run.sizes


def test_batch_times_beam_is_a_derived_batch_dim(run):
    beam = Dim(4, BATCH, "beam")
    feat = FeatureDim("f", 2)
    template = Data("hyps", [batch_dim, beam, run.time, feat])  # a second batch dim is fine
    assert template.batch_dim_axis == 0 and template.time_dim == run.time and template.feature_dim == feat
    assert template.describe() == "[B, B|'beam'(4), T|'time', F|'f'(2)]"
    batch_beam = merge_dims([batch_dim, beam])
    assert batch_beam.is_batch and batch_beam is merge_dims([batch_dim, beam])  # cached: the same Dim
    assert int(run.size(batch_beam).raw.numpy()) == 12
    # sequence lengths per hypothesis: [B, beam]
    hyp_time = SpatialDim("hyp-time")
    lengths = np.array([[4, 3, 2, 1], [2, 2, 1, 1], [1, 1, 1, 1]], "int32")
    run.set_size(hyp_time, lengths, size_dims=(batch_dim, beam))
    values = np.random.RandomState(2).randn(3, 4, 4, 2).astype("float32")
    x = tensor(values, [batch_dim, beam, hyp_time, feat])
    mask = run.mask(hyp_time)
    assert mask.dims == (batch_dim, beam, hyp_time)
    summed = rf.reduce(x, mode="sum", axis=hyp_time).raw.numpy()
    expected = np.where((np.arange(4)[None, None, :] < lengths[:, :, None])[..., None], values, 0).sum(axis=2)
    np.testing.assert_allclose(summed, expected, rtol=1e-5)
    flat, flat_dim = rf.merge_dims(x, dims=[batch_dim, beam])
    assert flat_dim is batch_beam and flat.dims == (batch_beam, hyp_time, feat)
    assert Data("flat", flat.dims).batch_dim_axis == 0


def test_cond_and_while_loop_keep_templates(run):
    counter = tensor(np.int32(0), [])
    total = tensor(np.zeros((3,), "float32"), [batch_dim])
    final_counter, final_total = rf.while_loop(lambda s: s[0] < 5, lambda s: (s[0] + 1, s[1] + 1.0),
                                               (counter, total))
    assert int(final_counter.raw.numpy()) == 5 and final_total.dims == (batch_dim,)
    np.testing.assert_array_equal(final_total.raw.numpy(), [5.0, 5.0, 5.0])
    picked = rf.cond(final_counter > 3, lambda: total + 1.0, lambda: total - 1.0)
    np.testing.assert_array_equal(picked.raw.numpy(), [1.0, 1.0, 1.0])


def test_tensor_operators_need_the_op_layer_but_templates_do_not():
    template = Tensor(Data("x", [batch_dim, FeatureDim("f", 2)]))
    assert template.raw is None and template.feature_dim.size == 2
    with pytest.raises(TypeError, match="ambiguous"):
        bool(template)


def test_unknown_backend_is_a_config_error():
    with pytest.raises(ConfigError, match="did you mean 'tensorflow'"):
        get_backend("tensorflw")


def test_op_layer_and_templates_import_no_framework():
    code = ("import sys, netcompiler, netcompiler.frontend, netcompiler.tensor, netcompiler.network;"
            "print([m for m in ('tensorflow', 'torch') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_scan_runs_one_loop_and_freezes_each_sequence_after_its_end(run):
    feat = FeatureDim("f", 2)
    values = np.random.RandomState(3).randn(3, 4, 2).astype("float32")
    x = tensor(values, [batch_dim, run.time, feat])
    start = rf.zeros([batch_dim, feat])
    final, states = rf.scan(lambda total, frame: total * 0.5 + frame, xs=x, spatial_dim=run.time, initial=start)
    assert states.dims == (run.time, batch_dim, feat) and final.dims == (batch_dim, feat)
    want = np.zeros((3, 2), "float32")
    for b, n in enumerate(LENGTHS):
        total = np.zeros(2, "float32")
        for t in range(n):
            total = total * 0.5 + values[b, t]
            np.testing.assert_allclose(states.raw.numpy()[t, b], total, rtol=1e-5)
        want[b] = total
    np.testing.assert_allclose(final.raw.numpy(), want, rtol=1e-5)
