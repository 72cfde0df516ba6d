"""Template and numeric cases for frontend_scan_state, the layer that gives one of an `rf.scan`'s results (the
layer-dict backend's rec layer of it): from [the rec layer, its stacked state, the initial state] the final state
of each sequence (the state at its last frame; the initial one for an empty sequence) or the stacked states with
each sequence's final state past its end (as rf.scan keeps it). Here the "stacked state" is data:enc itself, so
its padded frames hold the harness' garbage, which must not reach the result."""

import numpy as np

from layer_harness import DEFAULT_EXTERN, LayerCase
from netcompiler.tensor import Data, FeatureDim, SpatialDim, batch_dim

TIME = SpatialDim("ss-time")
FEAT = FeatureDim("ss-feat", 3)
EXTERN = {**DEFAULT_EXTERN, "enc": {"dims": [batch_dim, TIME, FEAT]}}
STACKED = Data("stacked", (batch_dim, TIME, FEAT), "float32", time_dim=TIME, feature_dim=FEAT)
FINAL = Data("final", (batch_dim, FEAT), "float32", feature_dim=FEAT)
INITIAL = {"class": "reduce", "mode": "sum", "axis": TIME, "from": "data:enc"}


def _final(x, n):
    enc, lengths = x["enc"], n["enc"]
    masked = [enc[b, :k].sum(axis=0) for b, k in enumerate(lengths)]  # the initial state (reduce over valid frames)
    return np.stack([enc[b, k - 1] if k > 0 else masked[b] for b, k in enumerate(lengths)])


def _stacked(x, n):
    enc, lengths = x["enc"], n["enc"]
    final = _final(x, n)
    out = enc.copy()
    for b, k in enumerate(lengths):
        out[b, k:] = final[b]
    return out


def _scan_state(final: bool, template: Data):
    return {"class": "frontend_scan_state", "from": ["data:enc", "data:enc", "initial"], "spatial_dim": TIME,
            "final": final, "template": template}


CASES = [
    LayerCase("frontend-scan-state-final", {"initial": INITIAL, "output": _scan_state(True, FINAL)},
              {"output": "[B, F|'ss-feat'(3)] float32"}, extern_data=EXTERN,
              reference=lambda x, n, p: {"output": _final(x, n)}),
    LayerCase("frontend-scan-state-stacked", {"initial": INITIAL, "output": _scan_state(False, STACKED)},
              {"output": "[B, T|'ss-time', F|'ss-feat'(3)] float32"}, extern_data=EXTERN,
              reference=lambda x, n, p: {"output": _stacked(x, n)}),
]
