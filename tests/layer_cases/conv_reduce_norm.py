"""Template cases for conv, pool, reduce, reduce_out, math_norm, layer_norm, norm and batch_norm."""

import itertools

import numpy as np

from layer_harness import ErrorCase, LayerCase
from netcompiler.errors import AxisError, DimMismatchError, InvalidOptionError, MissingOptionError

# [B, T, 20 (static spatial), F=4]
IMAGE_EXTERN = {"data": {"shape": (None, 20, 4)}, "classes": {"dim": 4, "sparse": True}}
DENSE = "[B, T|'time:data', F|'data:feature'(6)] float32"


def _conv(**opts):
    return {"output": dict({"class": "conv", "from": "data"}, **opts)}


def _one(cls, **opts):
    return {"output": dict({"class": cls, "from": "data"}, **opts)}


# --- NumPy references: every sequence computed alone (cut to its length), results padded with zeros ---------
def _per_sequence(x, lengths, fn):
    """fn(x[b, :length]) for each sequence b, stacked and zero-padded along the first (time) axis."""
    outs = [np.asarray(fn(x[b, :n])) for b, n in enumerate(lengths)]
    longest = max(o.shape[0] for o in outs)
    return np.stack([np.pad(o, [(0, longest - o.shape[0])] + [(0, 0)] * (o.ndim - 1)) for o in outs])


def _window_starts(size, window, stride, dilation, padding):
    """Output positions on one axis as (first input frame, may be negative) per TF's SAME/VALID rule."""
    span = (window - 1) * dilation + 1
    if padding == "same":
        out = -(-size // stride)
        left = max((out - 1) * stride + span - size, 0) // 2
    else:
        out, left = max(-(-(size - span + 1) // stride), 0), 0
    return [i * stride - left for i in range(out)]


def _windows(a, window, strides, dilation, padding):
    """For `a` [spatial..., C]: the output shape [spatial...] and a list of (output index, patch [*window, C]
    with NaN outside `a`)."""
    spatial = a.shape[:-1]
    starts = [_window_starts(n, w, s, d, padding) for n, w, s, d in zip(spatial, window, strides, dilation)]
    margin = max(window) * max(dilation)
    padded = np.pad(a.astype(np.float64), [(margin, margin)] * len(spatial) + [(0, 0)], constant_values=np.nan)
    patches = []
    for index in itertools.product(*[range(len(s)) for s in starts]):
        idx = [margin + starts[ax][i] + np.arange(window[ax]) * dilation[ax] for ax, i in enumerate(index)]
        patches.append((index, padded[np.ix_(*idx)]))
    return [len(s) for s in starts], patches


def _conv_np(a, w, b, strides, dilation, padding, groups=1):
    """Cross-correlation of `a` [spatial..., C] with w [*window, C // groups, n_out] (+ b), zeros outside."""
    window, per_group_in, n_out = w.shape[:-2], w.shape[-2], w.shape[-1]
    per_group_out = n_out // groups
    out_shape, patches = _windows(a, window, strides, dilation, padding)
    out = np.zeros(out_shape + [n_out])
    for index, patch in patches:
        patch = np.nan_to_num(patch, nan=0.0)
        for g in range(groups):
            piece = patch[..., g * per_group_in:(g + 1) * per_group_in]
            out[index][g * per_group_out:(g + 1) * per_group_out] = np.tensordot(
                piece, w[..., g * per_group_out:(g + 1) * per_group_out], axes=len(window) + 1)
    return out + (b if b is not None else 0)


def _pool_np(a, mode, window, strides, dilation, padding):
    """Max/avg over the real frames of each window (0 if there is none)."""
    out_shape, patches = _windows(a, window, strides, dilation, padding)
    out = np.zeros(out_shape + [a.shape[-1]])
    for index, patch in patches:
        flat = patch.reshape(-1, a.shape[-1])
        if not np.isnan(flat).all():
            out[index] = np.nanmax(flat, axis=0) if mode == "max" else np.nanmean(flat, axis=0)
    return out


def _conv_ref(arrange=lambda s: s, strides=None, dilation=None, padding="same", groups=1, activation=None,
              summed_features=False):
    """Reference of the layer "output": `arrange` turns one sequence into [spatial..., C]; with
    `summed_features` the conv's input is the data summed over its features."""
    def reference(inputs, lengths, p):
        w = p["output/W"]
        n = w.ndim - 2
        fn = lambda s: _conv_np(arrange(s), w, p.get("output/bias"), strides or (1,) * n, dilation or (1,) * n,
                                padding, groups)
        x = inputs["data"].sum(-1) if summed_features else inputs["data"]
        y = _per_sequence(x, lengths["data"], fn)
        return {"output": activation(y) if activation else y}
    return reference


def _pool_ref(mode, window, strides, padding, dilation=None):
    return lambda inputs, lengths, p: {"output": _per_sequence(
        inputs["data"], lengths["data"],
        lambda s: _pool_np(s, mode, window, strides, dilation or (1,) * len(window), padding))}


CONV_CASES = [
    LayerCase("conv-1d-same-with-bias", _conv(n_out=5, filter_size=(3,), padding="same", with_bias=True),
              {"output": "[B, T|'time:data', F|'output:feature'(5)] float32"},
              params={"output": {"W": (3, 6, 5), "bias": (5,)}}, reference=_conv_ref()),
    LayerCase("conv-1d-strided-valid-derived-time",
              # tanh, not relu: the finite-difference gradient check must not straddle a kink
              _conv(n_out=4, filter_size=[3], padding="VALID", strides=2, activation="tanh", with_bias=False),
              {"output": "[B, T|'time:data:conv3s2v', F|'output:feature'(4)] float32"},
              params={"output": {"W": (3, 6, 4)}},
              reference=_conv_ref(strides=(2,), padding="valid", activation=np.tanh)),
    LayerCase("conv-2d-input-add-feature-dim",
              _conv(n_out=8, filter_size=(3, 3), padding="valid", strides=(1, 2), input_add_feature_dim=True),
              {"output": "[B, T|'time:data:conv3s1v', 'data:feature:conv3s2v'(2), F|'output:feature'(8)] float32"},
              params={"output": {"W": (3, 3, 1, 8)}},
              reference=_conv_ref(lambda s: s[..., None], strides=(1, 2), padding="valid")),
    LayerCase("conv-2d-static-axis-groups",
              _conv(n_out=6, filter_size=(3, 5), padding="Same", strides=(1, 2), groups=2),
              {"output": "[B, T|'time:data', 'data:static1:conv5s2s'(10), F|'output:feature'(6)] float32"},
              extern_data=IMAGE_EXTERN, params={"output": {"W": (3, 5, 2, 6)}},
              reference=_conv_ref(strides=(1, 2), groups=2), rtol=1e-4, atol=1e-4),
    LayerCase("conv-input-split-feature-dim",
              _conv(n_out=3, filter_size=(1, 3), padding="valid", input_split_feature_dim=2),
              {"output": "[B, T|'time:data', 'data:feature//2:conv3s1v'(1), F|'output:feature'(3)] float32"},
              params={"output": {"W": (1, 3, 2, 3)}},
              reference=_conv_ref(lambda s: s.reshape(s.shape[0], 3, 2), padding="valid")),
    LayerCase("conv-input-expand-dims-dilated",
              _conv(n_out=2, filter_size=(3, 1), padding="valid", dilation_rate=(2, 1), input_expand_dims=1),
              {"output": "[B, T|'time:data:conv3s1d2v', 'output:expand0'(1), F|'output:feature'(2)] float32"},
              params={"output": {"W": (3, 1, 6, 2)}},
              reference=_conv_ref(lambda s: s[:, None, :], dilation=(2, 1), padding="valid")),
    LayerCase("conv-no-feature-input-add-feature-dim",
              {"frames": {"class": "reduce", "mode": "sum", "axes": "F", "from": "data"},
               "output": {"class": "conv", "n_out": 3, "filter_size": (5,), "padding": "same",
                          "input_add_feature_dim": True, "from": "frames"}},
              {"frames": "[B, T|'time:data'] float32",
               "output": "[B, T|'time:data', F|'output:feature'(3)] float32"},
              params={"output": {"W": (5, 1, 3)}},
              reference=_conv_ref(lambda s: s[:, None], summed_features=True)),
    LayerCase("conv-1d-same-stride3-per-sequence-padding",
              # lengths 5, 3, 1: "same" pads the 1-frame sequence by 1 on the left, the 5-frame one by 0
              _conv(n_out=2, filter_size=(3,), padding="same", strides=3),
              {"output": "[B, T|'time:data:conv3s3s', F|'output:feature'(2)] float32"},
              params={"output": {"W": (3, 6, 2)}}, reference=_conv_ref(strides=(3,))),
]

POOL_CASES = [
    LayerCase("pool-max-default-strides-valid", _one("pool", mode="max", pool_size=(2,)),
              {"output": "[B, T|'time:data:conv2s2v', F|'data:feature'(6)] float32"}, params={"output": {}},
              reference=_pool_ref("max", (2,), (2,), "valid")),
    LayerCase("pool-avg-2d-same", _one("pool", mode="avg", pool_size=(1, 3), strides=(1, 3), padding="same"),
              {"output": "[B, T|'time:data', 'data:static1:conv3s3s'(7), F|'data:feature'(4)] float32"},
              extern_data=IMAGE_EXTERN, reference=_pool_ref("avg", (1, 3), (1, 3), "same")),
    LayerCase("pool-max-same-dynamic-time", _one("pool", mode="max", pool_size=(3,), strides=1, padding="same"),
              {"output": DENSE}, reference=_pool_ref("max", (3,), (1,), "same")),
    LayerCase("pool-avg-same-strided-dynamic-time", _one("pool", mode="avg", pool_size=(3,), padding="same"),
              {"output": "[B, T|'time:data:conv3s3s', F|'data:feature'(6)] float32"},
              reference=_pool_ref("avg", (3,), (3,), "same")),
    LayerCase("pool-max-same-without-mask-reads-beyond-the-ends",  # RETURNN's TF layer: the batch pooled whole
              _one("pool", mode="max", pool_size=(3,), strides=1, padding="same", use_mask=False), {"output": DENSE},
              reference=lambda inputs, lengths, p: {"output": np.stack(
                  [_pool_np(seq, "max", (3,), (1,), (1,), "same") for seq in inputs["data"]])}),
    LayerCase("pool-avg-dilated-same", _one("pool", mode="avg", pool_size=(2,), strides=1, dilation_rate=2,
                                            padding="same"),
              {"output": DENSE}, reference=_pool_ref("avg", (2,), (1,), "same", dilation=(2,))),
    LayerCase("conv-and-pool-derive-the-same-time-dim",
              {"conv": {"class": "conv", "n_out": 4, "filter_size": (2,), "strides": 2, "padding": "valid"},
               "pool": {"class": "pool", "mode": "max", "pool_size": (2,)},
               "output": {"class": "copy", "from": ["conv", "pool"]}},
              {"conv": "[B, T|'time:data:conv2s2v', F|'conv:feature'(4)] float32",
               "output": "[B, T|'time:data:conv2s2v', F|'conv:feature+data:feature'(10)] float32"}),
]

def _reduce_ref(fn):
    """{"output": fn(sequence [length, ...])} per sequence."""
    return lambda inputs, lengths, p: {"output": _per_sequence(inputs["data"], lengths["data"], fn)}


def _logsumexp_over_batch(inputs, lengths, p):
    """[T, F]: at frame t, logsumexp over the sequences that have frame t."""
    x, lens = inputs["data"], lengths["data"]
    rows = [np.log(np.exp(x[lens > t, t]).sum(0)) for t in range(lens.max())]
    return {"output": np.stack(rows)}


def _frame_wise(fn):
    """fn on the whole padded batch (frame-local operations: padded frames are not compared)."""
    return lambda inputs, lengths, p: {"output": fn(inputs["data"], p)}


def _normalized(x, axes, eps):
    mean = x.mean(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(x.var(axis=axes, keepdims=True) + eps)


def _valid_frames(inputs, lengths):
    """All valid frames of the batch: [N, F]."""
    return np.concatenate([inputs["data"][b, :n] for b, n in enumerate(lengths["data"])])


def _bn(p, name):
    """The batch_norm parameter `name` of layer "output" as [F], whatever its param_version's name and shape."""
    (key,) = [k for k in p if k.startswith("output/batch_norm/") and k.endswith("_" + name)]
    return p[key].reshape(-1)


def _bn_names(version, shape):
    prefix = {0: "batch_norm/output_output_output_", 2: "batch_norm/v2_"}[version]
    return {prefix + name: shape for name in ("mean", "variance", "gamma", "beta")}


def _batch_norm(inputs, lengths, p, mean, variance, eps=1e-3, shift=True):
    x = inputs["data"]
    y = (x - mean) / np.sqrt(variance + eps) * _bn(p, "gamma")
    return {"output": y + _bn(p, "beta") if shift else y}


REDUCE_CASES = [
    LayerCase("reduce-sum-time", _one("reduce", mode="sum", axes="T"),
              {"output": "[B, F|'data:feature'(6)] float32"}, reference=_reduce_ref(lambda s: s.sum(0))),
    LayerCase("reduce-max-axis-feature", _one("reduce", mode="MAX", axis="F"),
              {"output": "[B, T|'time:data'] float32"}, reference=_frame_wise(lambda x, p: x.max(-1))),
    LayerCase("reduce-mean-keep-dims", _one("reduce", mode="mean", axes=["T", "F"], keep_dims=True),
              {"output": "[B, T|'output:kept:time:data'(1), F|'output:kept:data:feature'(1)] float32"},
              reference=_reduce_ref(lambda s: s.mean(keepdims=True))),
    LayerCase("reduce-max-time-unmasked", _one("reduce", mode="max", axes="T", use_time_mask=False),
              {"output": "[B, F|'data:feature'(6)] float32"},
              reference=lambda inputs, lengths, p: {"output": inputs["data"].max(1)}),
    LayerCase("reduce-logsumexp-time-and-avg-batch-time",
              {"lse": {"class": "reduce", "mode": "logsumexp", "axes": "T", "is_output_layer": True},
               "output": {"class": "reduce", "mode": "avg", "axes": "BT", "from": "data"}},
              {"lse": "[B, F|'data:feature'(6)] float32", "output": "[F|'data:feature'(6)] float32"},
              reference=lambda inputs, lengths, p: {
                  "lse": _per_sequence(inputs["data"], lengths["data"], lambda s: np.log(np.exp(s).sum(0))),
                  "output": _valid_frames(inputs, lengths).mean(0)}),
    LayerCase("reduce-logsumexp-batch", _one("reduce", mode="logsumexp", axes="B"),
              {"output": "[T|'time:data', F|'data:feature'(6)] float32"}, reference=_logsumexp_over_batch),
    LayerCase("reduce-argmax-feature-sparse", _one("reduce", mode="argmax", axes="F"),
              {"output": "[B, T|'time:data'] sparse 'data:feature'(6) int32"},
              reference=_frame_wise(lambda x, p: x.argmax(-1).astype(np.int32))),
    LayerCase("reduce-argmin-dynamic-time", _one("reduce", mode="argmin", axis="T"),
              {"output": "[B, 'data:feature'(6)] sparse 'time:data' int32"},
              reference=_reduce_ref(lambda s: s.argmin(0).astype(np.int32))),
    LayerCase("reduce-argmax-time-keep-dims", _one("reduce", mode="argmax", axis="T", keep_dims=True),
              {"output": "[B, T|'output:kept:time:data'(1), 'data:feature'(6)] sparse 'time:data' int32"},
              reference=_reduce_ref(lambda s: s.argmax(0)[None].astype(np.int32))),
    LayerCase("reduce-enforce-batch-dim-axis", _one("reduce", mode="min", axes=0, enforce_batch_dim_axis=1),
              {"output": "[B, F|'data:feature'(6)] float32"}, reference=_reduce_ref(lambda s: s.min(0))),
    # RETURNN (corpus int_axis/reduce0/tm, reduce/sum/int_axis_tm): an int axis counts the batch-major layout of a
    # time-major input (axis 1 of [T, B, F] is T), and the output is batch-major
    LayerCase("reduce-int-axis-of-time-major", _one("reduce", mode="max", axes=1),
              {"output": "[B, F|'data:feature'(6)] float32"}, extern_data={"data": {"dim": 6, "batch_dim_axis": 1}}),
    LayerCase("reduce-out-maxout", _one("reduce_out", mode="max", num_pieces=2),
              {"output": "[B, T|'time:data', F|'data:feature//2'(3)] float32"},
              reference=_frame_wise(lambda x, p: x.reshape(x.shape[:-1] + (3, 2)).max(-1))),
    LayerCase("reduce-out-mean", _one("reduce_out", mode="mean", num_pieces=3),
              {"output": "[B, T|'time:data', F|'data:feature//3'(2)] float32"},
              reference=_frame_wise(lambda x, p: x.reshape(x.shape[:-1] + (2, 3)).mean(-1))),
    LayerCase("math-norm-feature", _one("math_norm", p=2, axes="F"), {"output": "[B, T|'time:data'] float32"},
              reference=_frame_wise(lambda x, p: np.sqrt((x ** 2).sum(-1)))),
    LayerCase("math-norm-axis-option-p1", _one("math_norm", p=1, axis="F"), {"output": "[B, T|'time:data'] float32"},
              reference=_frame_wise(lambda x, p: np.abs(x).sum(-1))),
    LayerCase("math-norm-time-keep-dims", _one("math_norm", p=1.5, axes="T", keep_dims=True),
              {"output": "[B, T|'output:kept:time:data'(1), F|'data:feature'(6)] float32"},
              reference=_reduce_ref(lambda s: (np.abs(s) ** 1.5).sum(0, keepdims=True) ** (1 / 1.5))),
]

NORM_CASES = [
    LayerCase("layer-norm", _one("layer_norm"), {"output": DENSE}, params={"output": {"scale": (6,), "bias": (6,)}},
              reference=_frame_wise(lambda x, p: _normalized(x, -1, 1e-6) * p["output/scale"] + p["output/bias"]),
              rtol=1e-4, atol=1e-4),
    LayerCase("norm-time-feature", _one("norm", axes="TF"), {"output": DENSE},
              params={"output": {"scale": (6,), "bias": (6,)}},
              reference=lambda inputs, lengths, p: {"output": _per_sequence(
                  inputs["data"], lengths["data"], lambda s: _normalized(s, (0, 1), 1e-6)) * p["output/scale"]
                  + p["output/bias"]}, rtol=1e-4, atol=1e-4),
    LayerCase("norm-axis-option", _one("norm", axis="F", bias=False), {"output": DENSE},
              params={"output": {"scale": (6,)}},
              reference=_frame_wise(lambda x, p: _normalized(x, -1, 1e-6) * p["output/scale"]), rtol=1e-4, atol=1e-4),
    LayerCase("norm-param-shape-in-input-order",
              _one("norm", axes="except_batch", param_shape=["F", "dim:20"], scale=False),
              {"output": "[B, T|'time:data', 'data:static1'(20), F|'data:feature'(4)] float32"},
              extern_data=IMAGE_EXTERN, params={"output": {"bias": (20, 4)}},
              reference=lambda inputs, lengths, p: {"output": _per_sequence(
                  inputs["data"], lengths["data"], lambda s: _normalized(s, (0, 1, 2), 1e-6)) + p["output/bias"]},
              rtol=1e-4, atol=1e-4),
    LayerCase("batch-norm-defaults", _one("batch_norm", update_sample_only_in_training=True), {"output": DENSE},
              # no behavior_version: RETURNN's param_version 0, broadcast shape [1, 1, F] (its default of updating
              # the running statistics in eval too is left out here: that makes a forward pass stateful; the RETURNN
              # corpus cases batch_norm/dense and batch_norm/tm check it)
              params={"output": _bn_names(0, (1, 1, 6))},
              # eval: the running statistics (as initialised: mean 0, variance 1)
              reference=lambda inputs, lengths, p: _batch_norm(inputs, lengths, p, _bn(p, "mean"), _bn(p, "variance"))),
    LayerCase("batch-norm-force-sample-uses-batch-statistics-in-eval",
              _one("batch_norm", force_sample=True, gamma_init=0.5, beta_init=0.25), {"output": DENSE},
              reference=lambda inputs, lengths, p: _batch_norm(
                  inputs, lengths, p, _valid_frames(inputs, lengths).mean(0), _valid_frames(inputs, lengths).var(0)),
              rtol=1e-4, atol=1e-4),
    LayerCase("batch-norm-training-uses-batch-statistics-of-valid-frames",
              _one("batch_norm", gamma_init=0.5, beta_init=0.25, param_version=2, update_sample_only_in_training=True),
              {"output": DENSE}, training=True,
              params={"output": _bn_names(2, (6,))},
              reference=lambda inputs, lengths, p: _batch_norm(
                  inputs, lengths, p, _valid_frames(inputs, lengths).mean(0), _valid_frames(inputs, lengths).var(0)),
              rtol=1e-4, atol=1e-4),
    LayerCase("batch-norm-force-sample-mixes-running-statistics",
              _one("batch_norm", force_sample=True, use_sample=0.25, use_shift=False,
                   update_sample_only_in_training=True), {"output": DENSE},
              reference=lambda inputs, lengths, p: _batch_norm(
                  inputs, lengths, p, 0.75 * _valid_frames(inputs, lengths).mean(0) + 0.25 * _bn(p, "mean"),
                  0.75 * _valid_frames(inputs, lengths).var(0) + 0.25 * _bn(p, "variance"), shift=False),
              rtol=1e-4, atol=1e-4),
    LayerCase("batch-norm-no-shift", _one("batch_norm", use_shift=False, momentum=0.01, param_version=0,
                   update_sample_only_in_training=True),
              {"output": DENSE},
              params={"output": {k: v for k, v in _bn_names(0, (1, 1, 6)).items() if not k.endswith("beta")}},
              reference=lambda inputs, lengths, p: _batch_norm(inputs, lengths, p, _bn(p, "mean"), _bn(p, "variance"),
                                                               shift=False)),
]

CASES = CONV_CASES + POOL_CASES + REDUCE_CASES + NORM_CASES


def _err(id_, network, error, contains, **kwargs):
    return ErrorCase(id_, network, error, ["layer 'output'"] + contains, **kwargs)


ERROR_CASES = [
    _err("conv-filter-size-vs-spatial-axes", _conv(n_out=2, filter_size=(3, 3), padding="same"), DimMismatchError,
         ["'filter_size'", "2 entries", "1 spatial axes", "input_add_feature_dim"]),
    _err("norm-axes-and-axis", _one("norm", axes="F", axis="T"), InvalidOptionError,
         ["both 'axes' and 'axis' are set", "exactly one"]),
    _err("math-norm-no-axes", _one("math_norm", p=2), InvalidOptionError, ["neither 'axes' nor 'axis'"]),
    _err("conv-missing-padding", _conv(n_out=2, filter_size=(3,)), MissingOptionError, ["'padding'"]),
    _err("conv-bad-padding", _conv(n_out=2, filter_size=(3,), padding="full"), InvalidOptionError,
         ["'padding'", "'full'"]),
    _err("conv-sparse-input", _conv(n_out=2, filter_size=(3,), padding="same", **{"from": "data:classes"}),
         InvalidOptionError, ["is sparse", "conv needs values"]),
    _err("conv-filter-layer-with-a-batch-axis", _conv(n_out=2, filter_size=(3,), padding="same", filter="data"),
         DimMismatchError, ["the 'filter' layer 'data' gives [B, T", "needs the sizes [3, 6, 2]"]),
    _err("conv-groups-must-divide", _conv(n_out=4, filter_size=(3,), padding="same", groups=4),
         InvalidOptionError, ["'groups'", "(6)"]),
    _err("conv-strides-length", _conv(n_out=2, filter_size=(3,), padding="same", strides=(1, 2)),
         InvalidOptionError, ["'strides'", "2 entries"]),
    _err("conv-filter-size-not-positive", _conv(n_out=2, filter_size=(0,), padding="same"), InvalidOptionError,
         ["'filter_size'", "positive ints"]),
    _err("conv-valid-window-too-long", _conv(n_out=2, filter_size=(3, 21), padding="valid"), DimMismatchError,
         ["'filter_size' (3, 21) spans 21 frames", "has only 20"], extern_data=IMAGE_EXTERN),
    _err("conv-split-feature-must-divide", _conv(n_out=2, filter_size=(1, 1), padding="same",
                                                 input_split_feature_dim=4), InvalidOptionError,
         ["'input_split_feature_dim'", "divide the feature size 6"]),
    _err("pool-bad-mode", _one("pool", mode="mean", pool_size=(2,)), InvalidOptionError, ["'mode'", "'mean'"]),
    _err("pool-size-vs-spatial-axes", _one("pool", mode="max", pool_size=(2,)), DimMismatchError,
         ["'pool_size'", "2 spatial axes"], extern_data=IMAGE_EXTERN),
    _err("reduce-bad-mode", _one("reduce", mode="summ", axes="T"), InvalidOptionError,
         ["'mode'", "did you mean 'sum'?"]),
    _err("reduce-axes-and-axis", _one("reduce", mode="sum", axes="T", axis="F"), InvalidOptionError,
         ["both 'axes' and 'axis'"]),
    _err("reduce-no-axes", _one("reduce", mode="sum"), InvalidOptionError, ["neither 'axes' nor 'axis'"]),
    _err("reduce-bad-axis", _one("reduce", mode="sum", axes="stag:nope"), AxisError, ["'axes'", "'nope'"]),
    _err("reduce-argmax-two-axes", _one("reduce", mode="argmax", axes="TF"), InvalidOptionError,
         ["'argmax' needs exactly one non-batch axis", "T|'time:data', F|'data:feature'(6)",
          "name one axis, e.g. 'axes': 'F'"]),
    _err("reduce-enforce-batch-dim-axis-out-of-range", _one("reduce", mode="sum", axes="T", enforce_batch_dim_axis=5),
         InvalidOptionError, ["'enforce_batch_dim_axis' 5 is out of range", "use an int from -3 to 2"]),
    _err("reduce-sparse-input", _one("reduce", mode="max", axes="T", **{"from": "data:classes"}),
         InvalidOptionError, ["sparse"]),
    _err("reduce-out-pieces-must-divide", _one("reduce_out", mode="max", num_pieces=4), InvalidOptionError,
         ["'num_pieces'", "divide the feature size 6", "'num_pieces': 2"]),
    _err("math-norm-p-zero", _one("math_norm", p=0, axes="F"), InvalidOptionError, ["'p'", "positive", "'p': 2"]),
    _err("layer-norm-sparse-input", _one("layer_norm", **{"from": "data:classes"}), InvalidOptionError,
         ["sparse"]),
    _err("norm-param-shape-dynamic", _one("norm", axes="F", param_shape="T"), InvalidOptionError,
         ["'param_shape'", "static, non-batch", "'param_shape': 'F'"]),
    _err("norm-axes-name-nothing", _one("norm", axes=[]), InvalidOptionError,
         ["'axes' [] names no axis", "e.g. 'axes': 'F'"]),
    _err("norm-negative-epsilon", _one("layer_norm", epsilon=-1e-6), InvalidOptionError,
         ["'epsilon' must be >= 0", "'epsilon': 1e-6"]),
    _err("norm-missing-axes", _one("norm"), InvalidOptionError, ["neither 'axes' nor 'axis' is set"]),
    _err("batch-norm-momentum-range", _one("batch_norm", momentum=1.5), InvalidOptionError,
         ["'momentum'", "between 0 and 1", "e.g. 'momentum': 0.1"]),
    _err("batch-norm-param-version", _one("batch_norm", param_version=3), InvalidOptionError,
         ["'param_version'"]),
]
