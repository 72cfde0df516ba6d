"""Template cases for conv, pool, reduce, reduce_out, math_norm, layer_norm, norm and batch_norm."""

from layer_harness import ErrorCase, LayerCase
from netcompiler.errors import AxisError, DimMismatchError, InvalidOptionError, MissingOptionError

# [B, T, 20 (static spatial), F=4]
IMAGE_EXTERN = {"data": {"shape": (None, 20, 4)}, "classes": {"dim": 4, "sparse": True}}
DENSE = "[B, T|'time:data', F|'data:feature'(6)] float32"


def _conv(**opts):
    return {"output": dict({"class": "conv", "from": "data"}, **opts)}


def _one(cls, **opts):
    return {"output": dict({"class": cls, "from": "data"}, **opts)}


CONV_CASES = [
    LayerCase("conv-1d-same", _conv(n_out=5, filter_size=(3,), padding="same"),
              {"output": "[B, T|'time:data', F|'output:feature'(5)] float32"},
              params={"output": {"W": (3, 6, 5), "b": (5,)}}),
    LayerCase("conv-1d-strided-valid-derived-time",
              _conv(n_out=4, filter_size=[3], padding="VALID", strides=2, activation="relu", with_bias=False),
              {"output": "[B, T|'time:data:conv3s2v', F|'output:feature'(4)] float32"},
              params={"output": {"W": (3, 6, 4)}}),
    LayerCase("conv-2d-input-add-feature-dim",
              _conv(n_out=8, filter_size=(3, 3), padding="valid", strides=(1, 2), input_add_feature_dim=True),
              {"output": "[B, T|'time:data:conv3s1v', 'data:feature:conv3s2v'(2), F|'output:feature'(8)] float32"},
              params={"output": {"W": (3, 3, 1, 8), "b": (8,)}}),
    LayerCase("conv-2d-static-axis-groups",
              _conv(n_out=6, filter_size=(3, 5), padding="Same", strides=(1, 2), groups=2),
              {"output": "[B, T|'time:data', 'data:static1:conv5s2s'(10), F|'output:feature'(6)] float32"},
              extern_data=IMAGE_EXTERN, params={"output": {"W": (3, 5, 2, 6), "b": (6,)}}),
    LayerCase("conv-input-split-feature-dim",
              _conv(n_out=3, filter_size=(1, 3), padding="valid", input_split_feature_dim=2),
              {"output": "[B, T|'time:data', 'data:feature//2:conv3s1v'(1), F|'output:feature'(3)] float32"},
              params={"output": {"W": (1, 3, 2, 3), "b": (3,)}}),
    LayerCase("conv-input-expand-dims-dilated",
              _conv(n_out=2, filter_size=(3, 1), padding="valid", dilation_rate=(2, 1), input_expand_dims=1),
              {"output": "[B, T|'time:data:conv3s1d2v', 'output:expand0'(1), F|'output:feature'(2)] float32"},
              params={"output": {"W": (3, 1, 6, 2), "b": (2,)}}),
    LayerCase("conv-no-feature-input-add-feature-dim",
              {"frames": {"class": "reduce", "mode": "sum", "axes": "F", "from": "data"},
               "output": {"class": "conv", "n_out": 3, "filter_size": (5,), "padding": "same",
                          "input_add_feature_dim": True, "from": "frames"}},
              {"frames": "[B, T|'time:data'] float32",
               "output": "[B, T|'time:data', F|'output:feature'(3)] float32"},
              params={"output": {"W": (5, 1, 3), "b": (3,)}}),
]

POOL_CASES = [
    LayerCase("pool-max-default-strides-valid", _one("pool", mode="max", pool_size=(2,)),
              {"output": "[B, T|'time:data:conv2s2v', F|'data:feature'(6)] float32"}, params={"output": {}}),
    LayerCase("pool-avg-2d-same", _one("pool", mode="avg", pool_size=(1, 3), strides=(1, 3), padding="same"),
              {"output": "[B, T|'time:data', 'data:static1:conv3s3s'(7), F|'data:feature'(4)] float32"},
              extern_data=IMAGE_EXTERN),
    LayerCase("conv-and-pool-derive-the-same-time-dim",
              {"conv": {"class": "conv", "n_out": 4, "filter_size": (2,), "strides": 2, "padding": "valid"},
               "pool": {"class": "pool", "mode": "max", "pool_size": (2,)},
               "output": {"class": "copy", "from": ["conv", "pool"]}},
              {"conv": "[B, T|'time:data:conv2s2v', F|'conv:feature'(4)] float32",
               "output": "[B, T|'time:data:conv2s2v', F|'conv:feature+data:feature'(10)] float32"}),
]

REDUCE_CASES = [
    LayerCase("reduce-sum-time", _one("reduce", mode="sum", axes="T"),
              {"output": "[B, F|'data:feature'(6)] float32"}),
    LayerCase("reduce-max-axis-feature", _one("reduce", mode="MAX", axis="F"),
              {"output": "[B, T|'time:data'] float32"}),
    LayerCase("reduce-mean-keep-dims", _one("reduce", mode="mean", axes=["T", "F"], keep_dims=True),
              {"output": "[B, T|'output:kept:time:data'(1), F|'output:kept:data:feature'(1)] float32"}),
    LayerCase("reduce-logsumexp-batch", _one("reduce", mode="logsumexp", axes="B"),
              {"output": "[T|'time:data', F|'data:feature'(6)] float32"}),
    LayerCase("reduce-argmax-feature-sparse", _one("reduce", mode="argmax", axes="F"),
              {"output": "[B, T|'time:data'] sparse 'data:feature'(6) int32"}),
    LayerCase("reduce-argmin-dynamic-time", _one("reduce", mode="argmin", axis="T"),
              {"output": "[B, 'data:feature'(6)] sparse 'time:data' int32"}),
    LayerCase("reduce-enforce-batch-dim-axis", _one("reduce", mode="min", axes=0, enforce_batch_dim_axis=1),
              {"output": "[B, F|'data:feature'(6)] float32"}),
    LayerCase("reduce-out-maxout", _one("reduce_out", mode="max", num_pieces=2),
              {"output": "[B, T|'time:data', F|'data:feature//2'(3)] float32"}),
    LayerCase("math-norm-feature", _one("math_norm", p=2, axes="F"), {"output": "[B, T|'time:data'] float32"}),
    LayerCase("math-norm-time-keep-dims", _one("math_norm", p=1.5, axes="T", keep_dims=True),
              {"output": "[B, T|'output:kept:time:data'(1), F|'data:feature'(6)] float32"}),
]

NORM_CASES = [
    LayerCase("layer-norm", _one("layer_norm"), {"output": DENSE}, params={"output": {"scale": (6,), "bias": (6,)}}),
    LayerCase("norm-time-feature", _one("norm", axes="TF"), {"output": DENSE},
              params={"output": {"scale": (6,), "bias": (6,)}}),
    LayerCase("norm-param-shape-in-input-order",
              _one("norm", axes="except_batch", param_shape=["F", "dim:20"], scale=False),
              {"output": "[B, T|'time:data', 'data:static1'(20), F|'data:feature'(4)] float32"},
              extern_data=IMAGE_EXTERN, params={"output": {"bias": (20, 4)}}),
    LayerCase("batch-norm-defaults", _one("batch_norm"), {"output": DENSE},
              params={"output": {"mean": (6,), "variance": (6,), "gamma": (6,), "beta": (6,)}}),
    LayerCase("batch-norm-no-shift", _one("batch_norm", use_shift=False, momentum=0.01, param_version=0),
              {"output": DENSE}, params={"output": {"mean": (6,), "variance": (6,), "gamma": (6,)}}),
]

CASES = CONV_CASES + POOL_CASES + REDUCE_CASES + NORM_CASES


def _err(id_, network, error, contains, **kwargs):
    return ErrorCase(id_, network, error, ["layer 'output'"] + contains, **kwargs)


ERROR_CASES = [
    _err("conv-filter-size-vs-spatial-axes", _conv(n_out=2, filter_size=(3, 3), padding="same"), DimMismatchError,
         ["'filter_size'", "2 entries", "1 spatial axes", "input_add_feature_dim"]),
    _err("conv-missing-padding", _conv(n_out=2, filter_size=(3,)), MissingOptionError, ["'padding'"]),
    _err("conv-bad-padding", _conv(n_out=2, filter_size=(3,), padding="full"), InvalidOptionError,
         ["'padding'", "'full'"]),
    _err("conv-sparse-input", _conv(n_out=2, filter_size=(3,), padding="same", **{"from": "data:classes"}),
         InvalidOptionError, ["is sparse", "conv needs values"]),
    _err("conv-filter-layer-unsupported", _conv(n_out=2, filter_size=(3,), padding="same", filter="data"),
         InvalidOptionError, ["'filter'", "not supported by netcompiler yet"]),
    _err("conv-groups-must-divide", _conv(n_out=4, filter_size=(3,), padding="same", groups=4),
         InvalidOptionError, ["'groups'", "(6)"]),
    _err("conv-strides-length", _conv(n_out=2, filter_size=(3,), padding="same", strides=(1, 2)),
         InvalidOptionError, ["'strides'", "2 entries"]),
    _err("conv-dilation-with-strides", _conv(n_out=2, filter_size=(3,), padding="same", strides=2,
                                             dilation_rate=2), InvalidOptionError, ["'dilation_rate'", "strides"]),
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
         ["'argmax' needs exactly one non-batch axis", "T|'time:data', F|'data:feature'(6)"]),
    _err("reduce-sparse-input", _one("reduce", mode="max", axes="T", **{"from": "data:classes"}),
         InvalidOptionError, ["sparse"]),
    _err("reduce-out-pieces-must-divide", _one("reduce_out", mode="max", num_pieces=4), InvalidOptionError,
         ["'num_pieces'", "divide the feature size 6"]),
    _err("math-norm-p-zero", _one("math_norm", p=0, axes="F"), InvalidOptionError, ["'p'", "positive"]),
    _err("layer-norm-sparse-input", _one("layer_norm", **{"from": "data:classes"}), InvalidOptionError,
         ["sparse"]),
    _err("norm-param-shape-dynamic", _one("norm", axes="F", param_shape="T"), InvalidOptionError,
         ["'param_shape'", "static, non-batch"]),
    _err("norm-missing-axes", _one("norm"), MissingOptionError, ["'axes'"]),
    _err("batch-norm-momentum-range", _one("batch_norm", momentum=1.5), InvalidOptionError,
         ["'momentum'", "between 0 and 1"]),
    _err("batch-norm-param-version", _one("batch_norm", param_version=3), InvalidOptionError,
         ["'param_version'"]),
]
