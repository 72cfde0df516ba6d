"""Template and numeric cases for source, copy, dropout, scaled_grad, activation."""

import numpy as np

from layer_harness import DEFAULT_EXTERN, ErrorCase, LayerCase
from netcompiler.errors import DimMismatchError, InvalidOptionError, MissingOptionError, UnknownReferenceError
from netcompiler.tensor import SPATIAL, Dim, FeatureDim, batch_dim

# a feature dim that is not the last axis
CHANNELS_FIRST = {**DEFAULT_EXTERN, "image": {"dims": [batch_dim, FeatureDim("basic-channel", 3),
                                                       Dim(4, SPATIAL, "basic-width")]}}


def _softmax(z, axis=-1):
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _identity(key):
    return lambda x, lengths, p: {"output": x[key]}


CASES = [
    LayerCase("source-explicit-data-key",
              {"output": {"class": "source", "data_key": "classes", "from": []}},
              {"output": "[B, T|'time:classes'] sparse 'classes:sparse'(4) int32"},
              reference=_identity("classes")),
    LayerCase("copy-single", {"output": {"class": "copy", "from": "data"}},
              {"output": "[B, T|'time:data', F|'data:feature'(6)] float32"}, reference=_identity("data")),
    LayerCase("copy-concat-two-sources",
              {"a": {"class": "linear", "n_out": 3, "from": "data"},
               "output": {"class": "copy", "from": ["data", "a"]}},
              {"output": "[B, T|'time:data', F|'data:feature+a:feature'(9)] float32"},
              reference=lambda x, lengths, p: {
                  "output": np.concatenate([x["data"], x["data"] @ p["a/W"] + p["a/b"]], axis=-1)}),
    LayerCase("dropout-keeps-template", {"output": {"class": "dropout", "dropout": 0.3, "from": "data"}},
              {"output": "[B, T|'time:data', F|'data:feature'(6)] float32"},
              reference=_identity("data")),  # not training: the identity
    LayerCase("scaled-grad-reversal", {"output": {"class": "scaled_grad", "scale": -1.0, "from": "data"}},
              {"output": "[B, T|'time:data', F|'data:feature'(6)] float32"}, reference=_identity("data")),
    # "+" is a sum (as in RETURNN), not a chain
    LayerCase("activation-plus", {"output": {"class": "activation", "activation": "relu+tanh", "from": "data"}},
              {"output": "[B, T|'time:data', F|'data:feature'(6)] float32"},
              reference=lambda x, lengths, p: {"output": np.maximum(x["data"], 0.0) + np.tanh(x["data"])}),
    LayerCase("activation-relu", {"output": {"class": "activation", "activation": "relu", "from": "data"}},
              {"output": "[B, T|'time:data', F|'data:feature'(6)] float32"},
              reference=lambda x, lengths, p: {"output": np.maximum(x["data"], 0.0)}),
    LayerCase("activation-softmax", {"output": {"class": "activation", "activation": "softmax", "from": "data"}},
              {"output": "[B, T|'time:data', F|'data:feature'(6)] float32"},
              reference=lambda x, lengths, p: {"output": _softmax(x["data"])}),
    LayerCase("activation-log-softmax-feature-not-last",
              {"output": {"class": "activation", "activation": "log_softmax", "from": "data:image"}},
              # RETURNN (corpus activation/softmax/ffirst): the normalised feature axis moves last; a static
              # axis is no time axis (corpus activation/softmax/static)
              {"output": "[B, 'basic-width'(4), F|'basic-channel'(3)] float32"}, extern_data=CHANNELS_FIRST,
              reference=lambda x, lengths, p: {"output": np.moveaxis(np.log(_softmax(x["image"], axis=1)), 1, -1)}),
]

ERROR_CASES = [
    ErrorCase("copy-concat-different-time",
              {"output": {"class": "copy", "from": ["data", "data:feats"]}}, DimMismatchError,
              ["layer 'output'", "'data' [B, T|'time:data'", "'data:feats' [B, T|'time:feats'"],
              extern_data={"data": {"dim": 6}, "feats": {"dim": 2}}),
    ErrorCase("copy-missing-reference", {"enc0": {"class": "copy"}, "output": {"class": "copy", "from": "ecn0"}},
              UnknownReferenceError, ["layer 'output'", "'from' refers to 'ecn0'", "did you mean 'enc0'?"]),
    ErrorCase("scaled-grad-no-scale", {"output": {"class": "scaled_grad"}}, MissingOptionError, ["'scale'"]),
    ErrorCase("activation-on-sparse", {"output": {"class": "activation", "activation": "relu",
                                                  "from": "data:classes"}},
              InvalidOptionError, ["layer 'output'", "sparse"]),
    ErrorCase("source-unknown-key", {"output": {"class": "copy", "from": "data:clases"}}, UnknownReferenceError,
              ["data key 'clases'", "did you mean 'classes'?"]),
]
