"""Template and emission cases for tile, repeat and resize (layers/repeat_tile.py): NumPy references computed per
sequence (cut to its length, then padded back), so padding that leaks into valid frames shows; the lengths of the
new axes are checked through a `length` layer."""

import numpy as np

from layer_harness import ErrorCase, LayerCase
from netcompiler.errors import AxisError, InvalidOptionError
from netcompiler.tensor import FeatureDim, SpatialDim

T = "T|'time:data'"
F6 = "F|'data:feature'(6)"


def per_sequence(x, lengths, fn, fill=0):
    """fn(sequence [n, ...]) for each sequence of x [B, T, ...] cut to its length, padded back into a batch."""
    seqs = [fn(x[b, :n]) for b, n in enumerate(lengths)]
    longest = max(len(s) for s in seqs)
    out = np.full((len(seqs), longest) + seqs[0].shape[1:], fill, dtype=seqs[0].dtype)
    for b, s in enumerate(seqs):
        out[b, :len(s)] = s
    return out


def _len_of(layer):
    return {"class": "length", "axis": "T", "from": layer, "is_output_layer": True}


# --- tile --------------------------------------------------------------------------------------------------
def _tile_ref(x, lengths, p):
    return {"output": np.tile(x["data"], (1, 1, 3))}


def _tile_static_ref(x, lengths, p):
    return {"output": np.tile(x["data"], (1, 1, 2, 2))}


# --- repeat ------------------------------------------------------------------------------------------------
def _repeat_int_ref(x, lengths, p):
    lens = lengths["data"]
    return {"output": per_sequence(x["data"], lens, lambda s: np.repeat(s, 2, axis=0)), "len": lens * 2}


def _repeat_int_tm_ref(x, lengths, p):
    """The same on time-major input [T, B, F]: the output is batch-major."""
    return _repeat_int_ref({"data": x["data"].transpose(1, 0, 2)}, lengths, p)


def _argmax_counts(d, lens):
    return [np.argmax(d[b, :n], axis=-1) for b, n in enumerate(lens)]


def _repeat_layer_ref(x, lengths, p):
    d, lens = x["data"], lengths["data"]
    counts = _argmax_counts(d, lens)
    out = [np.repeat(d[b, :n], counts[b], axis=0) for b, n in enumerate(lens)]
    longest = max(len(o) for o in out)
    batch = np.zeros((len(out), longest, d.shape[-1]), d.dtype)
    for b, o in enumerate(out):
        batch[b, :len(o)] = o
    return {"output": batch, "len": np.array([c.sum() for c in counts])}


def _repeat_per_seq_ref(x, lengths, p):
    lens = lengths["data"]
    out = per_sequence(x["data"], lens, lambda s: np.repeat(s, len(s), axis=0))
    return {"output": out, "len": lens * lens}


# --- resize ------------------------------------------------------------------------------------------------
def _linear(s, k):
    """Each sequence alone: frame t*k + i is s[t] + (s[t+1] - s[t]) * i/k, the last frame followed by itself."""
    n = len(s)
    out = []
    for j in range(n * k):
        t, i = divmod(j, k)
        nxt = s[min(t + 1, n - 1)]
        out.append(s[t] + (nxt - s[t]) * i / k)
    return np.array(out, dtype=s.dtype)


def _fill(s, k, value):
    out = np.full((len(s) * k,) + s.shape[1:], value, dtype=s.dtype)
    out[::k] = s
    return out


def _resize_ref(x, lengths, p):
    d, ids = x["data"], x["classes"]
    return {"nn": per_sequence(d, lengths["data"], lambda s: np.repeat(s, 3, axis=0)),
            "lin": per_sequence(d, lengths["data"], lambda s: _linear(s, 2)),
            "fill": per_sequence(d, lengths["data"], lambda s: _fill(s, 2, -0.5)),
            "fill_ids": per_sequence(ids, lengths["classes"], lambda s: _fill(s, 3, 3)),
            "len": lengths["data"] * 2}


CASES = [
    LayerCase("tile-feature", {"output": {"class": "tile", "multiples": {"F": 3}}},
              {"output": f"[B, {T}, F|'3*data:feature'(18)] float32"}, reference=_tile_ref),
    LayerCase("tile-static-axes", {"output": {"class": "tile", "multiples": {"dim:4": 2, "F": 2, "T": 1}}},
              {"output": f"[B, {T}, '2*data:static1'(8), F|'2*data:feature'(6)] float32"},
              extern_data={"data": {"shape": (None, 4, 3)}}, reference=_tile_static_ref),
    LayerCase("repeat-int", {"output": {"class": "repeat", "repetitions": 2}, "len": _len_of("output")},
              {"output": f"[B, T|'time:data*2', {F6}] float32", "len": "[B] int32"}, reference=_repeat_int_ref),
    LayerCase("repeat-int-time-major", {"output": {"class": "repeat", "repetitions": 2},
                                        "len": _len_of("output")},
              {"output": "[B, T|'time:data*2', F|'data:feature'(6)] float32", "len": "[B] int32"},
              extern_data={"data": {"dim": 6, "time_dim_axis": 0, "batch_dim_axis": 1}},
              reference=_repeat_int_tm_ref),
    LayerCase("repeat-counts-per-frame",
              {"counts": {"class": "reduce", "mode": "argmax", "axes": "F", "from": "data"},
               "output": {"class": "repeat", "repetitions": "counts", "from": "data"}, "len": _len_of("output")},
              {"output": f"[B, T|'repeated:output', {F6}] float32", "len": "[B] int32"},
              reference=_repeat_layer_ref),
    LayerCase("repeat-counts-per-sequence",
              {"n": {"class": "length", "axis": "T", "from": "data"},
               "output": {"class": "repeat", "repetitions": "n", "from": "data"}, "len": _len_of("output")},
              {"output": f"[B, T|'repeated:output', {F6}] float32", "len": "[B] int32"},
              reference=_repeat_per_seq_ref),
    LayerCase("resize-kinds",
              {"nn": {"class": "resize", "factor": 3, "axis": "T", "from": "data"},
               "lin": {"class": "resize", "factor": 2, "axis": "T", "kind": "linear", "from": "data"},
               "fill": {"class": "resize", "factor": 2, "axis": "T", "kind": "fill", "fill_value": -0.5,
                        "from": "data"},
               "fill_ids": {"class": "resize", "factor": 3, "axis": "T", "kind": "fill", "fill_value": -1,
                            "from": "data:classes", "is_output_layer": True},
               "output": {"class": "copy", "from": ["nn"]}, "lin_out": {"class": "copy", "from": "lin",
                                                                        "is_output_layer": True},
               "fill_out": {"class": "copy", "from": "fill", "is_output_layer": True}, "len": _len_of("lin")},
              {"nn": f"[B, T|'time:data*3', {F6}] float32", "lin": f"[B, T|'time:data*2', {F6}] float32",
               "fill": f"[B, T|'time:data*2', {F6}] float32",
               "fill_ids": "[B, T|'time:classes*3'] sparse 'classes:sparse'(4) int32", "len": "[B] int32"},
              reference=_resize_ref),
]

ERROR_CASES = [
    ErrorCase("tile-dynamic-axis", {"output": {"class": "tile", "multiples": {"T": 2}}}, InvalidOptionError,
              ["layer 'output'", "cannot tile the dynamic axis", "'repeat'"]),
    ErrorCase("tile-bad-multiple", {"output": {"class": "tile", "multiples": {"F": 0}}}, InvalidOptionError,
              ["layer 'output'", "'multiples' of axis 'F' is 0", ">= 1"]),
    ErrorCase("tile-unknown-axis", {"output": {"class": "tile", "multiples": {"stag:nowhere": 2}}}, AxisError,
              ["layer 'output'", "stag:nowhere"]),
    ErrorCase("repeat-float-counts", {"output": {"class": "repeat", "repetitions": "data"}}, InvalidOptionError,
              ["layer 'output'", "must hold int counts", "cast"]),
    ErrorCase("repeat-counts-other-axis",
              {"output": {"class": "repeat", "repetitions": "data:classes", "from": "data"}}, InvalidOptionError,
              ["layer 'output'", "may only have the input's batch axis and the repeated axis"]),
    ErrorCase("repeat-negative", {"output": {"class": "repeat", "repetitions": -1}}, InvalidOptionError,
              ["layer 'output'", "'repetitions' is -1", ">= 0"]),
    ErrorCase("resize-float-factor", {"output": {"class": "resize", "factor": 1.5, "axis": "T"}}, InvalidOptionError,
              ["layer 'output'", "'factor' 1.5 is not supported", "padded batch", "int factor"]),
    ErrorCase("resize-cubic", {"output": {"class": "resize", "factor": 2, "axis": "T", "kind": "cubic"}},
              InvalidOptionError, ["layer 'output'", "'cubic' is not supported", "'linear'"]),
    ErrorCase("resize-fill-dropout-rate", {"output": {"class": "resize", "factor": 2, "axis": "T", "kind": "fill",
                                                      "fill_value": 0, "fill_dropout": 1.5}},
              InvalidOptionError, ["layer 'output'", "option 'fill_dropout' must be a rate in [0, 1), not 1.5",
                                   "-- a rate is the fraction dropped"]),
    ErrorCase("resize-fill-without-value", {"output": {"class": "resize", "factor": 2, "axis": "T", "kind": "fill"}},
              InvalidOptionError, ["layer 'output'", "needs 'fill_value'"]),
    ErrorCase("resize-linear-sparse", {"output": {"class": "resize", "factor": 2, "axis": "T", "kind": "linear",
                                                  "from": "data:classes"}},
              InvalidOptionError, ["layer 'output'", "'linear' interpolates floats", "'nn'"]),
    ErrorCase("resize-batch-axis", {"output": {"class": "resize", "factor": 2, "axis": "B"}}, InvalidOptionError,
              ["layer 'output'", "cannot resize the batch axis"]),
    ErrorCase("resize-unknown-kind", {"output": {"class": "resize", "factor": 2, "axis": "T", "kind": "bilinear"}},
              InvalidOptionError, ["layer 'output'", "kind"]),
]


# --- dims the config declares (out_dim, out_dims) --------------------------------------------------------------
REPEATED = SpatialDim("repeated")
TILED = FeatureDim("tiled", 12)


def _declared_ref(x, lengths, p):
    lens = lengths["data"]
    return {"output": per_sequence(x["data"], lens, lambda s: np.repeat(s, 3, axis=0)), "len": lens * 3,
            "tiled": np.tile(x["data"], (1, 1, 2))}


CASES += [
    LayerCase("repeat-tile-declared-dims",
              {"output": {"class": "repeat", "repetitions": 3, "out_dim": REPEATED}, "len": _len_of("output"),
               "tiled": {"class": "tile", "multiples": {"F": 2}, "out_dims": {"F": TILED}, "from": "data",
                         "is_output_layer": True}},
              {"output": f"[B, T|'repeated', {F6}] float32", "len": "[B] int32",
               "tiled": f"[B, {T}, F|'tiled'(12)] float32"},
              reference=_declared_ref),
]

ERROR_CASES += [
    ErrorCase("tile-out-dims-wrong-size", {"output": {"class": "tile", "multiples": {"F": 2},
                                                      "out_dims": {"F": FeatureDim("x", 5)}}},
              InvalidOptionError, ["layer 'output'", "'out_dims' of axis 'F' must be a Dim of size 12"]),
    ErrorCase("resize-out-dim-static", {"output": {"class": "resize", "factor": 2, "axis": "T",
                                                   "out_dim": FeatureDim("x", 5)}},
              InvalidOptionError, ["layer 'output'", "'out_dim'", "does not fit the axis"]),
]


# --- gradients through the gathers: a linear layer in front (finite differences, TF vs torch) ------------------
def _through_ref(x, lengths, p):
    d, lens = x["data"], lengths["data"]
    h = d @ p["lin/W"] + p["lin/b"]
    counts = _argmax_counts(d, lens)
    rep = [np.repeat(h[b, :n], counts[b], axis=0) for b, n in enumerate(lens)]
    out = np.zeros((len(rep), max(len(r) for r in rep), 4), h.dtype)
    for b, r in enumerate(rep):
        out[b, :len(r)] = r
    return {"output": out, "lin_resized": per_sequence(h, lens, lambda s: _linear(s, 3))}


CASES += [
    LayerCase("repeat-resize-gradients",
              {"lin": {"class": "linear", "n_out": 4, "from": "data"},
               "counts": {"class": "reduce", "mode": "argmax", "axes": "F", "from": "data"},
               "output": {"class": "repeat", "repetitions": "counts", "from": "lin"},
               "lin_resized": {"class": "resize", "factor": 3, "axis": "T", "kind": "linear", "from": "lin",
                               "is_output_layer": True}},
              {"output": "[B, T|'repeated:output', F|'lin:feature'(4)] float32",
               "lin_resized": "[B, T|'time:data*3', F|'lin:feature'(4)] float32"},
              params={"lin": {"W": (6, 4), "b": (4,)}}, reference=_through_ref),
]
