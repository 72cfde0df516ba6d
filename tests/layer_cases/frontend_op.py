"""Template and numeric cases for frontend_op, the layer the layer-dict backend writes where no catalogue layer
computes a frontend op: one call of the op on the layer's inputs, with the recorded template."""

import numpy as np

from layer_harness import DEFAULT_EXTERN, ErrorCase, LayerCase
from netcompiler.backends.layers import InputRef
from netcompiler.errors import ConfigError
from netcompiler.tensor import Data, FeatureDim, SpatialDim, batch_dim

TIME = SpatialDim("fo-time")
FEAT = FeatureDim("fo-feat", 3)
EXTERN = {**DEFAULT_EXTERN, "enc": {"dims": [batch_dim, TIME, FEAT]}}
ENC = Data("enc", (batch_dim, TIME, FEAT), "float32", time_dim=TIME, feature_dim=FEAT)
SUMMED = Data("summed", (batch_dim, FEAT), "float32", feature_dim=FEAT)


def _softmax_over_time(x, lengths):
    out = np.zeros_like(x["enc"])
    for b, n in enumerate(lengths["enc"]):
        z = x["enc"][b, :n]
        e = np.exp(z - z.max(axis=0, keepdims=True))
        out[b, :n] = e / e.sum(axis=0, keepdims=True)
    return out


def _op(name, **kwargs):
    return {"class": "frontend_op", "from": "data:enc", "args": [InputRef(0)], "op": name, **kwargs}


CASES = [
    LayerCase("frontend-op-softmax-over-time",
              {"output": _op("netcompiler.frontend.reduce:softmax", kwargs={"axis": TIME}, template=ENC)},
              {"output": "[B, T|'fo-time', F|'fo-feat'(3)] float32"}, extern_data=EXTERN,
              reference=lambda x, n, p: {"output": _softmax_over_time(x, n)}),
    LayerCase("frontend-op-reduce-sum-over-time",
              {"output": _op("netcompiler.frontend.reduce:reduce_sum", kwargs={"axis": TIME}, template=SUMMED)},
              {"output": "[B, F|'fo-feat'(3)] float32"}, extern_data=EXTERN,
              reference=lambda x, n, p: {"output": np.stack([x["enc"][b, :k].sum(axis=0)
                                                             for b, k in enumerate(n["enc"])])}),
]

ERROR_CASES = [
    ErrorCase("frontend-op-unknown-op", {"output": _op("netcompiler.frontend.reduce:no_such_op", template=ENC)},
              ConfigError, ["no frontend op", "no_such_op"], extern_data=EXTERN),
    ErrorCase("frontend-op-without-template", {"output": _op("netcompiler.frontend.reduce:softmax")},
              ConfigError, ["template"], extern_data=EXTERN),
]
