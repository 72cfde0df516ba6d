"""Template cases for linear and softmax."""

import numpy as np

from layer_harness import ErrorCase, LayerCase
from netcompiler.errors import InvalidOptionError, MissingOptionError, UnknownOptionError
from netcompiler.tensor import FeatureDim, SpatialDim, batch_dim

# a config's own dims: a linear layer whose output feature dim is its input's
OWN_TIME, OWN_FEATURE = SpatialDim("own-time"), FeatureDim("own-feature", 4)


def _softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _two_sources(x, p):
    a = x @ p["a/W"] + p["a/b"]
    return np.concatenate([a, x], axis=-1) @ p["output/W"].T + p["output/b"]


CASES = [
    LayerCase(
        "linear-maps-a-dim-onto-itself",
        {"output": {"class": "linear", "out_dim": OWN_FEATURE, "from": "data"}},
        {"output": "[B, T|'own-time', F|'own-feature'(4)] float32"},
        extern_data={"data": {"dims": [batch_dim, OWN_TIME, OWN_FEATURE]}},
        params={"output": {"W": (4, 4), "b": (4,)}},
        reference=lambda x, lengths, p: {"output": x["data"] @ p["output/W"] + p["output/b"]},
    ),
    LayerCase(
        "linear-dense",
        {"output": {"class": "linear", "n_out": 5, "activation": "tanh", "from": "data"}},
        {"output": "[B, T|'time:data', F|'output:feature'(5)] float32"},
        params={"output": {"W": (6, 5), "b": (5,)}},
        reference=lambda x, lengths, p: {"output": np.tanh(x["data"] @ p["output/W"] + p["output/b"])},
    ),
    LayerCase(
        "linear-sparse-embedding-no-bias",
        {"output": {"class": "linear", "n_out": 3, "with_bias": False, "from": "data:classes"}},
        {"output": "[B, T|'time:classes', F|'output:feature'(3)] float32"},
        params={"output": {"W": (4, 3)}},
        reference=lambda x, lengths, p: {"output": p["output/W"][x["classes"]]},
    ),
    LayerCase(
        "linear-two-sources-concat",
        {"a": {"class": "linear", "n_out": 2, "from": "data"},
         "output": {"class": "linear", "n_out": 7, "from": ["a", "data"], "use_transposed_weights": True}},
        {"output": "[B, T|'time:data', F|'output:feature'(7)] float32"},
        params={"output": {"W": (7, 8), "b": (7,)}},
        reference=lambda x, lengths, p: {"output": _two_sources(x["data"], p)},
    ),
    LayerCase(
        "softmax-with-ce-loss",
        {"output": {"class": "softmax", "n_out": 4, "loss": "ce", "from": "data"}},
        {"output": "[B, T|'time:data', F|'output:feature'(4)] float32",
         "data:classes": "[B, T|'time:classes'] sparse 'classes:sparse'(4) int32"},
        reference=lambda x, lengths, p: {"output": _softmax(x["data"] @ p["output/W"] + p["output/b"])},
    ),
]

ERROR_CASES = [
    ErrorCase("linear-misspelled-option", {"output": {"class": "linear", "n_ot": 5}}, UnknownOptionError,
              ["layer 'output'", "'n_ot'", "did you mean 'n_out'?"]),
    ErrorCase("linear-no-n-out", {"output": {"class": "linear"}}, MissingOptionError, ["'n_out'"]),
    ErrorCase("linear-bad-activation", {"output": {"class": "linear", "n_out": 2, "activation": "rleu"}},
              InvalidOptionError, ["'rleu'", "did you mean 'relu'?"]),
    ErrorCase("linear-wrong-type", {"output": {"class": "linear", "n_out": "5"}}, InvalidOptionError,
              ["option 'n_out' must be int or None", "str"]),
    ErrorCase("softmax-ce-class-mismatch", {"output": {"class": "softmax", "n_out": 3, "loss": "ce"}},
              InvalidOptionError, ["3 classes", "4"]),
]
