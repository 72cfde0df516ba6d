"""Template cases for linear and softmax."""

from layer_harness import ErrorCase, LayerCase
from netcompiler.errors import InvalidOptionError, MissingOptionError, UnknownOptionError

CASES = [
    LayerCase(
        "linear-dense",
        {"output": {"class": "linear", "n_out": 5, "activation": "tanh", "from": "data"}},
        {"output": "[B, T|'time:data', F|'output:feature'(5)] float32"},
        params={"output": {"W": (6, 5), "b": (5,)}},
    ),
    LayerCase(
        "linear-sparse-embedding-no-bias",
        {"output": {"class": "linear", "n_out": 3, "with_bias": False, "from": "data:classes"}},
        {"output": "[B, T|'time:classes', F|'output:feature'(3)] float32"},
        params={"output": {"W": (4, 3)}},
    ),
    LayerCase(
        "linear-two-sources-concat",
        {"a": {"class": "linear", "n_out": 2, "from": "data"},
         "output": {"class": "linear", "n_out": 7, "from": ["a", "data"], "use_transposed_weights": True}},
        {"output": "[B, T|'time:data', F|'output:feature'(7)] float32"},
        params={"output": {"W": (7, 8), "b": (7,)}},
    ),
    LayerCase(
        "softmax-with-ce-loss",
        {"output": {"class": "softmax", "n_out": 4, "loss": "ce", "from": "data"}},
        {"output": "[B, T|'time:data', F|'output:feature'(4)] float32",
         "data:classes": "[B, T|'time:classes'] sparse 'classes:sparse'(4) int32"},
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
