"""Template cases for source, copy, dropout, scaled_grad, activation."""

from layer_harness import ErrorCase, LayerCase
from netcompiler.errors import DimMismatchError, InvalidOptionError, MissingOptionError, UnknownReferenceError

CASES = [
    LayerCase("source-explicit-data-key",
              {"output": {"class": "source", "data_key": "classes", "from": []}},
              {"output": "[B, T|'time:classes'] sparse 'classes:sparse'(4) int32"}),
    LayerCase("copy-single", {"output": {"class": "copy", "from": "data"}},
              {"output": "[B, T|'time:data', F|'data:feature'(6)] float32"}),
    LayerCase("copy-concat-two-sources",
              {"a": {"class": "linear", "n_out": 3, "from": "data"},
               "output": {"class": "copy", "from": ["data", "a"]}},
              {"output": "[B, T|'time:data', F|'data:feature+a:feature'(9)] float32"}),
    LayerCase("dropout-keeps-template", {"output": {"class": "dropout", "dropout": 0.3, "from": "data"}},
              {"output": "[B, T|'time:data', F|'data:feature'(6)] float32"}),
    LayerCase("scaled-grad-reversal", {"output": {"class": "scaled_grad", "scale": -1.0, "from": "data"}},
              {"output": "[B, T|'time:data', F|'data:feature'(6)] float32"}),
    LayerCase("activation-chain", {"output": {"class": "activation", "activation": "exp+log", "from": "data"}},
              {"output": "[B, T|'time:data', F|'data:feature'(6)] float32"}),
    LayerCase("activation-softmax", {"output": {"class": "activation", "activation": "softmax", "from": "data"}},
              {"output": "[B, T|'time:data', F|'data:feature'(6)] float32"}),
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
