"""Template and numeric cases for combine, eval, compare, switch, gating, dot, softmax_over_spatial and stack."""

import numpy as np

from layer_harness import DEFAULT_EXTERN, ErrorCase, LayerCase
from netcompiler.errors import AxisError, DimMismatchError, InvalidOptionError, MissingOptionError
from netcompiler.tensor import SPATIAL, Dim, FeatureDim, SpatialDim, batch_dim

# Dims shared by several extern data entries, so that their axes are the same.
TIME = SpatialDim("ew-time")
FEAT = FeatureDim("ew-feat", 3)
QUERY_FEAT = FeatureDim("ew-q", 3)
WINDOW = Dim(5, SPATIAL, "ew-window")

EXTERN = {
    **DEFAULT_EXTERN,
    "enc": {"dims": [batch_dim, TIME, FEAT]},
    "query": {"dims": [batch_dim, QUERY_FEAT]},
    "keys": {"dims": [batch_dim, QUERY_FEAT, WINDOW]},
    "win": {"dims": [TIME, WINDOW]},
    "grid": {"dims": [batch_dim, TIME, WINDOW, FEAT]},
    "mask": {"dims": [batch_dim, TIME], "dtype": "bool"},
    "pos": {"dims": [batch_dim], "dtype": "int32"},
    "other": {"dim": 6},
}

DATA = "[B, T|'time:data', F|'data:feature'(6)]"
LIN6 = {"class": "linear", "n_out": 6, "from": "data"}


def _lin(x, p, name="lin"):
    return x @ p[f"{name}/W"] + p[f"{name}/b"]


def _sigmoid(z):
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def _gating(z):
    return np.tanh(z[..., :4]) * _sigmoid(z[..., 4:])


def _masked_softmax(z, valid, axis, log=False):
    """Softmax of `z` over `axis` among the `valid` frames (others: 0, or -inf in log space)."""
    z = np.where(valid, z, -np.inf)
    with np.errstate(invalid="ignore"):
        shifted = z - np.max(z, axis=axis, keepdims=True)
        log_p = shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))
    return log_p if log else np.exp(log_p)


def _per_sequence(lengths, fn, *arrays):
    """fn applied to each sequence of `arrays` (batch-major, time axis 1) cut to its length."""
    return [fn(*(a[b, :n] for a in arrays)) for b, n in enumerate(lengths)]


def _attention(x, lengths):
    enc, query = x["enc"], x["query"]
    energy = np.einsum("btf,bf->bt", enc, query)

    def context(e, h):
        w = _masked_softmax(e, np.ones_like(e, dtype=bool), axis=0)
        return w, w @ h

    per_seq = _per_sequence(lengths["enc"], context, energy, enc)
    weights = np.zeros_like(energy)
    for b, (w, _) in enumerate(per_seq):
        weights[b, :len(w)] = w
    return {"energy": energy, "weights": weights, "output": np.stack([c for _, c in per_seq])}


def _dot_over_time(x, lengths, p):
    lin = _lin(x["enc"], p)
    return {"output": np.stack(_per_sequence(lengths["enc"], lambda h, v: h.T @ v, x["enc"], lin))}


def _softmax_window(x, lengths, p):
    grid = 0.5 * x["grid"]  # [B, T, W, F], softmax over W among w < 3
    valid = (np.arange(grid.shape[2]) < 3)[None, None, :, None]
    return {"output": np.moveaxis(_masked_softmax(grid, valid, axis=2, log=True), 2, -1)}  # W moves last


def _softmax_start(x, lengths, p):
    enc, pos = x["enc"], x["pos"][:, None]  # [B, T, F], [B, 1]
    t = np.arange(enc.shape[1])[None, :]
    valid = (t < lengths["enc"][:, None]) & (t >= pos) & (t < pos + 2)
    return {"output": np.moveaxis(_masked_softmax(enc, valid[:, :, None], axis=1), 1, -1)}  # T moves last


def _softmax_time(x, lengths, p):
    out = np.zeros_like(x["data"])
    for b, n in enumerate(lengths["data"]):
        out[b, :n] = _masked_softmax(x["data"][b, :n], np.ones((n, 1), bool), axis=0)
    return {"output": np.moveaxis(out, 1, -1)}  # T moves last


def case(id, network, expect, **kw):
    return LayerCase(id, network, expect, extern_data=EXTERN, **kw)


def error(id, network, error_class, contains):
    return ErrorCase(id, network, error_class, contains, extern_data=EXTERN)


CASES = [
    # combine
    case("combine-add-residual", {"lin": LIN6, "output": {"class": "combine", "kind": "add", "from": ["data", "lin"]}},
         {"output": f"{DATA} float32"},
         reference=lambda x, n, p: {"output": x["data"] + _lin(x["data"], p)}),
    case("combine-broadcast-new-dim", {"output": {"class": "combine", "kind": "mul", "from": ["data:win", "data:enc"]}},
         {"output": "[B, T|'ew-time', 'ew-window'(5), F|'ew-feat'(3)] float32"},
         reference=lambda x, n, p: {"output": x["win"][None, :, :, None] * x["enc"][:, :, None, :]}),
    case("combine-bias-activation",
         {"output": {"class": "combine", "kind": "maximum", "from": ["data", "data"], "with_bias": True,
                     "activation": "tanh"}},
         {"output": f"{DATA} float32"}, params={"output": {"b": (6,)}},
         reference=lambda x, n, p: {"output": np.tanh(x["data"] + p["output/b"])}),
    case("combine-average-three",
         {"lin": LIN6, "output": {"class": "combine", "kind": "average", "from": ["data", "lin", "lin"]}},
         {"output": f"{DATA} float32"},
         reference=lambda x, n, p: {"output": (x["data"] + 2 * _lin(x["data"], p)) / 3}),
    case("combine-sub-folds-left-broadcast",
         {"output": {"class": "combine", "kind": "sub", "from": ["data:enc", "data:grid", "data:win"]}},
         {"output": "[B, T|'ew-time', 'ew-window'(5), F|'ew-feat'(3)] float32"},
         reference=lambda x, n, p: {"output": x["enc"][:, :, None, :] - x["grid"] - x["win"][None, :, :, None]}),
    case("combine-sparse", {"output": {"class": "combine", "kind": "add", "from": ["data:classes", "data:classes"]}},
         {"output": "[B, T|'time:classes'] sparse 'classes:sparse'(4) int32"},
         reference=lambda x, n, p: {"output": 2 * x["classes"]}),
    case("combine-logical", {"output": {"class": "combine", "kind": "logical_and", "from": ["data:mask", "data:mask"]}},
         {"output": "[B, T|'ew-time'] bool"},
         reference=lambda x, n, p: {"output": x["mask"]}),
    case("combine-kind-eval", {"lin": LIN6, "output": {"class": "combine", "kind": "eval", "from": ["data", "lin"],
                                                       "eval": "source(0) * source(1)"}},
         {"output": f"{DATA} float32"},
         reference=lambda x, n, p: {"output": x["data"] * _lin(x["data"], p)}),
    # eval
    case("eval-out-type-dtype", {"output": {"class": "eval", "from": "data", "eval": "tf.cast(source(0) > 0, tf.int32)",
                                            "out_type": {"dtype": "int32"}}},
         {"output": f"{DATA} int32"},
         reference=lambda x, n, p: {"output": (x["data"] > 0).astype("int32")}),
    case("eval-locals-and-broadcast",
         {"output": {"class": "eval", "from": ["data:win", "data:enc"], "eval": "source(0) * scale",
                     "eval_locals": {"scale": 2.0}}},
         {"output": "[B, T|'ew-time', 'ew-window'(5), F|'ew-feat'(3)] float32"},
         reference=lambda x, n, p: {"output": np.broadcast_to(2.0 * x["win"][None, :, :, None],
                                                                    x["enc"].shape[:2] + (5, 3))}),
    case("eval-out-type-sparse", {"output": {"class": "eval", "from": "data:classes", "eval": "source(0) + 3",
                                             "out_type": {"sparse": True, "dim": 7}}},
         {"output": "[B, T|'time:classes'] sparse 'output:sparse'(7) int32"},
         reference=lambda x, n, p: {"output": x["classes"] + 3}),
    # compare
    case("compare-value", {"output": {"class": "compare", "kind": "less", "from": "data:classes", "value": 3}},
         {"output": "[B, T|'time:classes'] bool"},
         reference=lambda x, n, p: {"output": x["classes"] < 3}),
    case("compare-chain-with-fractional-value",
         {"output": {"class": "compare", "kind": "less_equal", "from": ["data:classes", "data:classes"],
                     "value": 1.5}},
         {"output": "[B, T|'time:classes'] bool"},
         reference=lambda x, n, p: {"output": x["classes"] <= 1.5}),
    case("compare-two-inputs",
         {"lin": LIN6, "output": {"class": "compare", "kind": "greater", "from": ["data", "lin"]}},
         {"output": f"{DATA} bool"},
         reference=lambda x, n, p: {"output": x["data"] > _lin(x["data"], p)}),
    # switch
    case("switch-mask-with-constant",
         {"cmp": {"class": "compare", "from": "data", "kind": "greater", "value": 0.0},
          "output": {"class": "switch", "condition": "cmp", "true_from": "data", "false_from": 0.0}},
         {"cmp": f"{DATA} bool", "output": f"{DATA} float32"},
         reference=lambda x, n, p: {"cmp": x["data"] > 0, "output": np.where(x["data"] > 0, x["data"], 0.0)}),
    case("switch-broadcast-condition",
         {"output": {"class": "switch", "condition": "data:mask", "true_from": "data:enc", "false_from": -1}},
         {"output": "[B, T|'ew-time', F|'ew-feat'(3)] float32"},
         reference=lambda x, n, p: {"output": np.where(x["mask"][:, :, None], x["enc"], -1.0)}),
    case("switch-constants", {"output": {"class": "switch", "condition": "data:mask", "true_from": 1, "false_from": 0}},
         {"output": "[B, T|'ew-time'] int32"},
         reference=lambda x, n, p: {"output": x["mask"].astype("int32")}),
    case("switch-static-condition", {"output": {"class": "switch", "condition": True, "true_from": "data",
                                                "false_from": None}},
         {"output": f"{DATA} float32"},
         reference=lambda x, n, p: {"output": x["data"]}),
    # gating
    case("gating-halves-feature", {"lin": {"class": "linear", "n_out": 8, "from": "data"},
                                   "output": {"class": "gating", "activation": "tanh", "from": "lin"}},
         {"output": "[B, T|'time:data', F|'lin:feature//2'(4)] float32"},
         reference=lambda x, n, p: {"output": _gating(_lin(x["data"], p))}),
    # dot
    case("dot-attention-energy", {"output": {"class": "dot", "from": ["data:enc", "data:query"], "red1": "F",
                                             "red2": "F", "var1": "T", "var2": None}},
         {"output": "[B, T|'ew-time', F|'output:dot-var2'(1)] float32"},
         reference=lambda x, n, p: {"output": np.einsum("btf,bf->bt", x["enc"], x["query"])[:, :, None]}),
    case("dot-attention-context",
         {"energy": {"class": "dot", "from": ["data:enc", "data:query"], "red1": "F", "red2": "F", "var1": "T",
                     "var2": None, "add_var2_if_empty": False},
          "weights": {"class": "softmax_over_spatial", "from": "energy"},
          "output": {"class": "dot", "from": ["weights", "data:enc"], "red1": "T", "red2": "T", "var1": None,
                     "var2": "F"}},
         {"energy": "[B, T|'ew-time'] float32", "weights": "[B, T|'ew-time'] float32",
          "output": "[B, F|'ew-feat'(3)] float32"},
         reference=lambda x, n, p: _attention(x, n)),
    case("dot-reduce-dynamic-time-masked",
         {"lin": {"class": "linear", "n_out": 2, "from": "data:enc"},
          "output": {"class": "dot", "from": ["data:enc", "lin"], "red1": "T", "red2": "T", "var1": "F",
                     "var2": "F"}},
         {"output": "[B, 'ew-feat'(3), F|'lin:feature'(2)] float32"},
         reference=_dot_over_time),
    # the same time axis as var1 and var2 (RETURNN: [B, T, T]): the second is its copy, the feature axis
    case("dot-same-axis-twice", {"output": {"class": "dot", "from": ["data:enc", "data:enc"], "red1": "F",
                                            "red2": "F", "var1": "T", "var2": "T"}},
         {"output": "[B, T|'ew-time', F|'ew-time:same-size'] float32"},
         reference=lambda x, n, p: {"output": np.einsum("btf,bsf->bts", x["enc"], x["enc"])}),
    # var1/var2 not given: every axis neither reduced nor shared with the other input (as in RETURNN)
    case("dot-defaults", {"output": {"class": "dot", "from": ["data:enc", "data:keys"]}},
         {"output": "[B, T|'ew-time', F|'ew-window'(5)] float32"},
         reference=lambda x, n, p: {"output": np.einsum("btf,bfw->btw", x["enc"], x["keys"])}),
    # softmax_over_spatial
    case("softmax-over-spatial-window",
         {"output": {"class": "softmax_over_spatial", "from": "data:grid", "axis": "stag:ew-window",
                     "energy_factor": 0.5, "window_start": 0, "window_size": 3, "log_space": True}},
         {"output": "[B, T|'ew-time', F|'ew-feat'(3), 'ew-window'(5)] float32"},
         reference=_softmax_window),
    case("softmax-over-spatial-start-layer",
         {"output": {"class": "softmax_over_spatial", "from": "data:enc", "start": "data:pos",
                     "window_start": "data:pos", "window_size": 2, "use_time_mask": True}},
         {"output": "[B, F|'ew-feat'(3), T|'ew-time'] float32"},
         reference=_softmax_start),
    case("softmax-over-spatial-time-default",
         {"output": {"class": "softmax_over_spatial", "from": "data"}},
         {"output": "[B, F|'data:feature'(6), T|'time:data'] float32"},
         reference=_softmax_time),
    # stack
    case("stack-default-axis", {"lin": LIN6, "output": {"class": "stack", "from": ["data", "lin"]}},
         {"output": "[B, T|'time:data', 'output:stack'(2), F|'data:feature'(6)] float32"},
         reference=lambda x, n, p: {"output": np.stack([x["data"], _lin(x["data"], p)], axis=2)}),
    case("stack-axis-0", {"output": {"class": "stack", "from": ["data", "data"], "axis": 0}},
         {"output": "['output:stack'(2), B, T|'time:data', F|'data:feature'(6)] float32"},
         reference=lambda x, n, p: {"output": np.stack([x["data"]] * 2, axis=0)}),
    case("stack-axis-last", {"output": {"class": "stack", "from": ["data", "data", "data"], "axis": -1}},
         {"output": "[B, T|'time:data', F|'data:feature'(6), 'output:stack'(3)] float32"},
         reference=lambda x, n, p: {"output": np.stack([x["data"]] * 3, axis=-1)}),
    case("stack-no-time-stays-no-time", {"output": {"class": "stack", "from": ["data:query", "data:query"]}},
         {"output": "[B, 'output:stack'(2), F|'ew-q'(3)] float32"},
         reference=lambda x, n, p: {"output": np.stack([x["query"]] * 2, axis=1)}),
    case("stack-sparse", {"output": {"class": "stack", "from": "data:classes"}},
         {"output": "[B, T|'time:classes', 'output:stack'(1)] sparse 'classes:sparse'(4) int32"},
         reference=lambda x, n, p: {"output": x["classes"][:, :, None]}),
    # inputs that broadcast in all of them at once: built below behavior_version 4, as in RETURNN (from 4 on it is
    # an error: tests/test_behavior_version.py); the new axes go where RETURNN puts them
    case("combine-outer-broadcast-of-two-time-axes",
         {"output": {"class": "combine", "kind": "add", "from": ["data", "data:other"]}},
         {"output": "[B, T|'time:data', 'time:other', F|'data:feature'(6)] float32"},
         reference=lambda x, n, p: {"output": x["data"][:, :, None, :] + x["other"][:, None, :, :]}),
    case("combine-outer-broadcast-of-two-feature-dims",
         {"lin": {"class": "linear", "n_out": 5, "from": "data"},
          "output": {"class": "combine", "kind": "sub", "from": ["data", "lin"]}},
         {"output": "[B, T|'time:data', 'data:feature'(6), F|'lin:feature'(5)] float32"},
         reference=lambda x, n, p: {"output": x["data"][..., :, None] - _lin(x["data"], p)[..., None, :]}),
]

ERROR_CASES = [
    # combine / eval
    error("combine-bad-kind", {"output": {"class": "combine", "kind": "addd", "from": "data"}},
          InvalidOptionError, ["layer 'output'", "'kind'", "did you mean 'add'?"]),
    error("combine-logical-on-float", {"output": {"class": "combine", "kind": "logical_or", "from": ["data", "data"]}},
          InvalidOptionError, ["layer 'output'", "kind 'logical_or' needs bool", "float32"]),
    error("combine-dtype-mismatch", {"output": {"class": "combine", "kind": "add", "from": ["data:mask", "data:enc"]}},
          DimMismatchError, ["layer 'output'", "different dtypes", "bool", "float32"]),
    error("combine-bias-on-sparse",
          {"output": {"class": "combine", "kind": "add", "from": "data:classes", "with_bias": True}},
          InvalidOptionError, ["layer 'output'", "'with_bias' needs a float output"]),
    error("combine-eval-without-expression", {"output": {"class": "combine", "kind": "eval", "from": "data"}},
          InvalidOptionError, ["layer 'output'", "option 'eval'"]),
    error("combine-eval-string-without-kind-eval",
          {"output": {"class": "combine", "kind": "add", "from": "data", "eval": "source(0)"}},
          InvalidOptionError, ["layer 'output'", "only used with kind 'eval'"]),
    error("eval-out-type-sparse-without-dim",
          {"output": {"class": "eval", "from": "data", "eval": "source(0)", "out_type": {"sparse": True}}},
          InvalidOptionError, ["layer 'output'", "'out_type'", "no 'dim'"]),
    error("eval-syntax-error", {"output": {"class": "eval", "from": "data", "eval": "source(0) +* 2"}},
          InvalidOptionError, ["layer 'output'", "option 'eval'", "not valid Python"]),
    error("eval-for-output-loss", {"output": {"class": "eval", "from": "data", "eval": "source(0)",
                                              "eval_for_output_loss": True}},
          InvalidOptionError, ["layer 'output'", "not supported by netcompiler yet"]),
    # compare
    error("compare-single-input-no-value", {"output": {"class": "compare", "from": "data"}},
          InvalidOptionError, ["layer 'output'", "'value'"]),
    error("compare-bad-kind", {"output": {"class": "compare", "from": "data", "value": 1, "kind": "lesser"}},
          InvalidOptionError, ["layer 'output'", "did you mean 'less'?"]),
    # switch
    error("switch-condition-not-bool",
          {"output": {"class": "switch", "condition": "data", "true_from": "data", "false_from": 0.0}},
          InvalidOptionError, ["layer 'output'", "condition 'data'", "must be bool"]),
    error("switch-static-condition-picks-constant",
          {"output": {"class": "switch", "condition": False, "true_from": "data", "false_from": 0.0}},
          InvalidOptionError, ["layer 'output'", "'false_from' must be a layer"]),
    error("switch-branches-different-time",
          {"output": {"class": "switch", "condition": "data:mask", "true_from": "data", "false_from": 0.0}},
          DimMismatchError, ["layer 'output'", "'ew-time'", "'time:data'", "one input must have every dim"]),
    # gating
    error("gating-odd-feature", {"lin": {"class": "linear", "n_out": 5, "from": "data"},
                                 "output": {"class": "gating", "activation": "tanh", "from": "lin"}},
          DimMismatchError, ["layer 'output'", "even", "'lin:feature'(5)"]),
    error("gating-missing-activation", {"output": {"class": "gating", "from": "data"}},
          MissingOptionError, ["layer 'output'", "'activation'"]),
    # dot
    error("dot-reduce-size-mismatch", {"output": {"class": "dot", "from": ["data", "data:enc"], "red1": "F",
                                                  "red2": "F", "var1": None, "var2": None}},
          DimMismatchError, ["layer 'output'", "reduce axes do not match", "'data:feature'(6)", "'ew-feat'(3)",
                             DATA]),
    error("dot-reduce-different-time-dims", {"output": {"class": "dot", "from": ["data", "data:enc"], "red1": "T",
                                                        "red2": "T", "var1": "F", "var2": "F"}},
          DimMismatchError, ["layer 'output'", "'time:data'", "'ew-time'"]),
    error("dot-default-red2-is-batch", {"output": {"class": "dot", "from": ["data:enc", "data:query"]}},
          InvalidOptionError, ["layer 'output'", "'red2' -2", "batch axis"]),
    error("dot-one-input", {"output": {"class": "dot", "from": "data:enc"}},
          InvalidOptionError, ["layer 'output'", "exactly two inputs", "e.g. 'from': ['a', 'b']"]),
    error("dot-axis-reduced-and-kept", {"output": {"class": "dot", "from": ["data:enc", "data:enc"], "red1": "F",
                                                   "red2": "F", "var1": ["T", "F"], "var2": "T"}},
          InvalidOptionError, ["layer 'output'", "named by both 'red1' and 'var1'", "not both"]),
    error("dot-bad-axis", {"output": {"class": "dot", "from": ["data:enc", "data:enc"], "red1": "stag:nope"}},
          AxisError, ["layer 'output'", "option 'red1'", "'stag:nope'"]),
    # softmax_over_spatial
    error("softmax-over-spatial-feature-axis", {"output": {"class": "softmax_over_spatial", "from": "data",
                                                           "axis": "F"}},
          InvalidOptionError, ["layer 'output'", "softmax axis must be spatial", "F|'data:feature'(6)"]),
    error("softmax-over-spatial-window-start-alone", {"output": {"class": "softmax_over_spatial", "from": "data",
                                                                 "window_start": 2}},
          InvalidOptionError, ["layer 'output'", "'window_size' is not given", "go together",
                               "give 'window_size' too, or leave out both"]),
    error("softmax-over-spatial-window-size-zero", {"output": {"class": "softmax_over_spatial", "from": "data",
                                                               "window_start": 0, "window_size": 0}},
          InvalidOptionError, ["layer 'output'", "'window_size' must be positive", "'window_size': 5"]),
    error("softmax-over-spatial-time-mask-static",
          {"output": {"class": "softmax_over_spatial", "from": "data:grid", "axis": "stag:ew-window",
                      "use_time_mask": True}},
          InvalidOptionError, ["layer 'output'", "'use_time_mask'", "static", "set 'use_time_mask': False"]),
    error("softmax-over-spatial-float-start", {"output": {"class": "softmax_over_spatial", "from": "data:enc",
                                                          "start": "data:query"}},
          DimMismatchError, ["layer 'output'", "'start' layer 'data:query'", "must hold ints",
                             "give int frame indices"]),
    error("softmax-over-spatial-sparse-input", {"output": {"class": "softmax_over_spatial", "from": "data:classes"}},
          InvalidOptionError, ["layer 'output'", "float values"]),
    # stack
    error("stack-different-dims", {"output": {"class": "stack", "from": ["data", "data:other"]}},
          DimMismatchError, ["layer 'output'", DATA, "'time:other'", "make them match first"]),
    error("stack-axis-out-of-range", {"output": {"class": "stack", "from": ["data", "data"], "axis": 5}},
          InvalidOptionError, ["layer 'output'", "'axis' 5 is out of range"]),
]
