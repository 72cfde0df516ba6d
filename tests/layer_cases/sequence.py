"""Template cases for the indexing, sequence and constant-like layers:
slice, gather, pad, window, cumsum, seq_len_mask, length, range, range_in_axis, range_from_length,
constant, cast, variable."""

import numpy as np

from layer_harness import ErrorCase, LayerCase
from netcompiler.errors import AxisError, InvalidOptionError, MissingOptionError
from netcompiler.tensor import FeatureDim, SpatialDim

DATA = "[B, T|'time:data', F|'data:feature'(6)] float32"
CLASSES = "[B, T|'time:classes'] sparse 'classes:sparse'(4) int32"
HIDDEN = FeatureDim("hidden", 4)


def case(id_, layer, expect, params=None, reference=None, **others):
    """A case whose layer 'output' is `layer`; `others` are further layers of the network."""
    return LayerCase(id_, {"output": layer, **others}, {"output": expect} if isinstance(expect, str) else expect,
                     params=params or {}, reference=reference)


def error(id_, layer, kind, contains, **others):
    return ErrorCase(id_, {"output": layer, **others}, kind, ["layer 'output'"] + contains)


LENGTH = {"class": "length", "from": "data"}
READ_DATA = {"class": "copy", "from": "data", "is_output_layer": True}
"""A layer that reads the extern data, so that the batch size is known to layers that make a batch axis."""


# --- NumPy references: each sequence alone, cut to its length, then padded back into a batch -------------
def _batch(seqs, fill=0):
    """Sequences [T_b, ...] of different lengths padded into one batch [B, T, ...]."""
    longest = max(len(s) for s in seqs)
    out = np.full((len(seqs), longest) + seqs[0].shape[1:], fill, dtype=seqs[0].dtype)
    for b, s in enumerate(seqs):
        out[b, :len(s)] = s
    return out


def per_seq(fn, key="data"):
    """A reference: `fn` applied to each sequence of extern data `key` alone (time axis first)."""
    return lambda x, lengths, p: {"output": _batch([fn(x[key][b, :n]) for b, n in enumerate(lengths[key])])}


def out(fn):
    """A reference: `fn(x, lengths, params)` is the output."""
    return lambda x, lengths, p: {"output": fn(x, lengths, p)}


def _chunk_lengths(lengths, size, step):
    """The frames of each chunk of time_chunking, sequence by sequence (chunks beyond a sequence: 0)."""
    count = max(int(lengths.max()) - size + step - 1, 0) // step + 1
    return np.array([min(max(n - k * step, 0), size) for n in lengths for k in range(count)], np.int32)


def _windows(s, size, left=0, stride=1, valid=False):
    """The windows of a sequence [T, ...] alone: zeros beyond its ends ("same"), or only whole ones ("valid")."""
    if valid:
        padded, count = s, max(-(-(len(s) - size + 1) // stride), 0)
    else:
        padded, count = np.pad(s, [(left, size - 1 - left)] + [(0, 0)] * (s.ndim - 1)), -(-len(s) // stride)
    windows = [padded[t * stride:t * stride + size] for t in range(count)]
    return np.array(windows, dtype=s.dtype).reshape((count, size) + s.shape[1:])


def _keep_frames(x, keep, value):
    """x [B, T, F] where keep [B, T], else value."""
    return np.where(keep[:, :, None], x, np.asarray(value, x.dtype))


def _frames(x):
    return np.arange(x["data"].shape[1])[None, :]


def _mask_window_start(x, lengths, p):
    n, t = lengths["data"][:, None], _frames(x)
    start = np.maximum(n - 2, 0)
    return _keep_frames(x["data"], (t < n) & (t >= start) & (t < start + 3), -1)


def _mask_windowed(x, lengths, p):
    n, t = lengths["data"][:, None], _frames(x)
    return _keep_frames(x["data"], (t < lengths["classes"][:, None]) & (t >= n) & (t < n + 2), 0)


def _gather_classes_on_feature(x, lengths, p):
    return np.stack([x["data"][b][:, x["classes"][b]] for b in range(len(x["data"]))])


def _tile(value, x):
    return np.tile(value, (len(x["data"]),) + (1,) * np.ndim(value))


CASES = [
    # slice
    case("slice-dynamic-time", {"class": "slice", "axis": "T", "slice_start": 1},
         "[B, T|'time:data[1:None:None]', F|'data:feature'(6)] float32", reference=per_seq(lambda s: s[1:])),
    case("slice-static-feature-step", {"class": "slice", "axis": "F", "slice_end": 5, "slice_step": 2},
         "[B, T|'time:data', F|'data:feature[None:5:2]'(3)] float32",
         reference=out(lambda x, n, p: x["data"][..., :5:2])),
    case("slice-sparse", {"class": "slice", "axis": "T", "slice_end": -1, "from": "data:classes"},
         "[B, T|'time:classes[None:-1:None]'] sparse 'classes:sparse'(4) int32",
         reference=per_seq(lambda s: s[:-1], "classes")),
    case("slice-from-each-end-step", {"class": "slice", "axis": "T", "slice_start": -4, "slice_step": 2},
         "[B, T|'time:data[-4:None:2]', F|'data:feature'(6)] float32", reference=per_seq(lambda s: s[-4::2])),
    # gather
    case("gather-int-time", {"class": "gather", "position": 0, "axis": "T"}, "[B, F|'data:feature'(6)] float32",
         reference=out(lambda x, n, p: x["data"][:, 0])),
    case("gather-int-sparse-input", {"class": "gather", "position": 2, "axis": "T", "from": "data:classes"},
         "[B] sparse 'classes:sparse'(4) int32", reference=out(lambda x, n, p: x["classes"][:, 2])),
    case("gather-layer-shares-batch", {"class": "gather", "position": "len", "axis": "T"},
         {"len": "[B] int32", "output": "[B, F|'data:feature'(6)] float32"}, len=LENGTH,
         # position = length is one beyond each sequence: clipped to the padded axis, it reads padding
         reference=out(lambda x, n, p: x["data"][np.arange(3), np.minimum(n["data"], x["data"].shape[1] - 1)])),
    case("gather-last-frame", {"class": "gather", "position": "last", "axis": "T"},
         {"last": "[B] int32", "output": "[B, F|'data:feature'(6)] float32"},
         last={"class": "length", "from": "rest"}, rest={"class": "slice", "axis": "T", "slice_start": 1},
         reference=out(lambda x, n, p: x["data"][np.arange(3), n["data"] - 1])),
    case("gather-sparse-position-replaces-axis", {"class": "gather", "position": "data:classes", "axis": "F"},
         "[B, T|'time:data', 'time:classes'] float32", reference=out(_gather_classes_on_feature)),
    # pad
    case("pad-time-and-feature", {"class": "pad", "axes": ["T", "F"], "padding": [(1, 2), (0, 1)]},
         "[B, T|'time:data:pad1,2', F|'data:feature:pad0,1'(7)] float32",
         reference=per_seq(lambda s: np.pad(s, [(1, 2), (0, 1)]))),
    case("pad-int-sparse", {"class": "pad", "axes": "T", "padding": 2, "value": 3, "from": "data:classes"},
         "[B, T|'time:classes:pad2,2'] sparse 'classes:sparse'(4) int32",
         reference=per_seq(lambda s: np.pad(s, 2, constant_values=3), "classes")),
    case("pad-time-old-behaviour-pads-the-padded-batch",  # RETURNN's handle_dynamic_dims False: the garbage
         # beyond a short sequence's end becomes its new frames, the right padding follows the longest sequence
         {"class": "pad", "axes": "T", "padding": (1, 2), "value": 3.0, "handle_dynamic_dims": False},
         "[B, T|'time:data:pad1,2', F|'data:feature'(6)] float32",
         reference=out(lambda x, n, p: np.pad(x["data"], [(0, 0), (1, 2), (0, 0)], constant_values=3.0))),
    case("pad-reflect-pair", {"class": "pad", "axes": "F", "padding": (2, 3), "mode": "reflect"},
         "[B, T|'time:data', F|'data:feature:pad2,3'(11)] float32",
         reference=out(lambda x, n, p: np.pad(x["data"], [(0, 0), (0, 0), (2, 3)], "reflect"))),
    case("pad-reflect-time", {"class": "pad", "axes": "T", "padding": (2, 3), "mode": "reflect"},
         "[B, T|'time:data:pad2,3', F|'data:feature'(6)] float32",
         reference=per_seq(lambda s: np.pad(s, [(2, 3), (0, 0)], "reflect"))),
    case("pad-symmetric-time-left", {"class": "pad", "axes": "T", "padding": (4, 0), "mode": "symmetric"},
         "[B, T|'time:data:pad4,0', F|'data:feature'(6)] float32",
         reference=per_seq(lambda s: np.pad(s, [(4, 0), (0, 0)], "symmetric"))),
    case("pad-replication-time-and-feature",
         {"class": "pad", "axes": ["T", "F"], "padding": [(2, 1), (1, 2)], "mode": "replication"},
         "[B, T|'time:data:pad2,1', F|'data:feature:pad1,2'(9)] float32",
         reference=per_seq(lambda s: np.pad(s, [(2, 1), (1, 2)], "edge"))),
    # window
    case("window-same", {"class": "window", "window_size": 3, "window_left": 2, "window_right": 0},
         "[B, T|'time:data', 'output:window'(3), F|'data:feature'(6)] float32",
         reference=per_seq(lambda s: _windows(s, 3, left=2))),
    case("window-same-stride-default-placement", {"class": "window", "window_size": 4, "stride": 2},
         "[B, T|'time:data:conv4s2s', 'output:window'(4), F|'data:feature'(6)] float32",
         reference=per_seq(lambda s: _windows(s, 4, left=1, stride=2))),
    case("window-valid-stride", {"class": "window", "window_size": 4, "padding": "valid", "stride": 2},
         "[B, T|'time:data:conv4s2v', 'output:window'(4), F|'data:feature'(6)] float32",
         reference=per_seq(lambda s: _windows(s, 4, stride=2, valid=True))),
    case("window-over-feature", {"class": "window", "window_size": 3, "axis": "F", "padding": "VALID"},
         "[B, T|'time:data', F|'data:feature:conv3s1v'(4), 'output:window'(3)] float32",
         reference=out(lambda x, n, p: np.stack([x["data"][..., f:f + 3] for f in range(4)], axis=-2))),
    # cumsum
    case("cumsum-time", {"class": "cumsum"}, DATA, reference=per_seq(lambda s: np.cumsum(s, axis=0))),
    case("cumsum-sparse-reverse", {"class": "cumsum", "reverse": True, "from": "data:classes"},
         "[B, T|'time:classes'] int32", reference=per_seq(lambda s: np.cumsum(s[::-1])[::-1], "classes")),
    case("cumsum-reverse-with-summand", {"class": "cumsum", "reverse": True,
                                         "additional_left_summand_per_element": 0.5}, DATA,
         reference=per_seq(lambda s: np.cumsum((s + 0.5)[::-1], axis=0)[::-1])),
    # seq_len_mask
    case("seq-len-mask-time", {"class": "seq_len_mask", "mask_value": -1e4}, DATA, reference=per_seq(lambda s: s)),
    case("seq-len-mask-windowed", {"class": "seq_len_mask", "mask_value": 0, "seq_len_source": "data:classes",
                                   "window_start": "len", "window_size": 2}, DATA, len=LENGTH,
         reference=out(_mask_windowed)),
    case("seq-len-mask-window-start", {"class": "seq_len_mask", "mask_value": -1, "window_start": "ws",
                                       "window_size": 3}, DATA,
         ws={"class": "length", "from": "rest"}, rest={"class": "slice", "axis": "T", "slice_start": 2},
         reference=out(_mask_window_start)),
    case("seq-len-mask-static-axis-with-start",
         {"class": "seq_len_mask", "mask_value": -1, "axis": "F", "start": "len"}, DATA, len=LENGTH,
         reference=out(lambda x, n, p: np.where(np.arange(6) >= n["data"][:, None, None], x["data"], -1))),
    # length
    case("length-time", LENGTH, "[B] int32", reference=out(lambda x, n, p: n["data"])),
    # 'dtype' has no effect (RETURNN's lengths are int32; a notice says so)
    case("length-time-axis-int64", {"class": "length", "add_time_axis": True, "dtype": "int64"},
         "[B, T|'output:time'(1)] int32", reference=out(lambda x, n, p: n["data"][:, None].astype("int32"))),
    case("length-batch-is-scalar", {"class": "length", "axis": "B"}, "[] int32",
         reference=out(lambda x, n, p: np.int32(len(x["data"])))),
    # RETURNN (corpus length/dense/F): the length of a static axis is its size, a scalar
    case("length-static-axis-is-scalar", {"class": "length", "axis": "F"}, "[] int32",
         reference=out(lambda x, n, p: np.int32(x["data"].shape[-1]))),
    case("length-sparse-of-derived", {"class": "length", "sparse": True, "from": "sl"},
         "[B] sparse 'time:data[2:None:None]:pad0,1' int32", sl={"class": "slice", "axis": "T", "slice_start": 2},
         reference=out(lambda x, n, p: np.maximum(n["data"] - 2, 0))),
    case("length-of-chunked-time", {"class": "length", "from": "c"}, "[B|'c:chunked_batch'] int32",
         c={"class": "time_chunking", "chunk_size": 3, "chunk_step": 2, "from": "data"},
         reference=out(lambda x, n, p: _chunk_lengths(n["data"], 3, 2))),
    # range_from_length
    case("range-from-length-reuses-dim", {"class": "range_from_length", "from": "len"}, "[T|'time:data'] int32",
         len=LENGTH, reference=out(lambda x, n, p: np.arange(n["data"].max()))),
    case("range-from-length-new-dim", {"class": "range_from_length", "from": "len64", "sparse": True},
         "[T|'output:range'] sparse 'output:range' int32",
         len=LENGTH, len64={"class": "cast", "dtype": "int64", "from": "len"},
         reference=out(lambda x, n, p: np.arange(n["data"].max()))),
    # range_in_axis
    case("range-in-axis-time", {"class": "range_in_axis", "axis": "T"}, "[T|'time:data'] int32",
         reference=out(lambda x, n, p: np.arange(x["data"].shape[1]))),
    case("range-in-axis-feature-sparse", {"class": "range_in_axis", "axis": "F", "sparse": True},
         "['data:feature'(6)] sparse 'data:feature'(6) int32", reference=out(lambda x, n, p: np.arange(6))),
    # range
    case("range-int", {"class": "range", "limit": 5}, "[F|'output:range'(5)] int32",
         reference=out(lambda x, n, p: np.arange(5))),
    case("range-float", {"class": "range", "start": 1, "limit": 2, "delta": 0.25}, "[F|'output:range'(4)] float32",
         reference=out(lambda x, n, p: np.arange(1, 2, 0.25))),
    case("range-negative-delta", {"class": "range", "start": 10, "limit": 0, "delta": -3},
         "[F|'output:range'(4)] int32", reference=out(lambda x, n, p: np.arange(10, 0, -3))),
    case("range-sparse-offset", {"class": "range", "start": 2, "limit": 5, "sparse": True},
         "['output:range'(3)] sparse 'output:sparse'(5) int32", reference=out(lambda x, n, p: np.arange(2, 5))),
    # constant
    case("constant-scalar", {"class": "constant"}, "[] float32", reference=out(lambda x, n, p: np.float32(0))),
    case("constant-matrix-with-batch", {"class": "constant", "value": [[1, 2, 3], [4, 5, 6]], "with_batch_dim": True},
         "[B, 'output:dim0'(2), F|'output:feature'(3)] int32", reader=READ_DATA,
         reference=out(lambda x, n, p: _tile(np.array([[1, 2, 3], [4, 5, 6]]), x))),
    case("constant-bool", {"class": "constant", "value": True}, "[] bool", reference=out(lambda x, n, p: np.True_)),
    case("constant-big-int", {"class": "constant", "value": [1, 2**40]}, "[F|'output:feature'(2)] int64",
         reference=out(lambda x, n, p: np.array([1, 2**40]))),
    case("constant-int-as-float", {"class": "constant", "value": 3, "dtype": "float32"}, "[] float32",
         reference=out(lambda x, n, p: np.float32(3))),
    case("constant-numpy-keeps-dtype", {"class": "constant", "value": np.zeros((2,), "float64")},
         "[F|'output:feature'(2)] float64", reference=out(lambda x, n, p: np.zeros((2,), "float64"))),
    # cast
    case("cast-dense-to-int", {"class": "cast", "dtype": "int32"}, "[B, T|'time:data', F|'data:feature'(6)] int32",
         reference=out(lambda x, n, p: x["data"].astype("int32"))),
    case("cast-sparse-to-float", {"class": "cast", "dtype": "float32", "from": "data:classes"},
         "[B, T|'time:classes'] float32", reference=out(lambda x, n, p: x["classes"].astype("float32"))),
    case("cast-sparse-to-int64", {"class": "cast", "dtype": "int64", "from": "data:classes"},
         "[B, T|'time:classes'] sparse 'classes:sparse'(4) int64",
         reference=out(lambda x, n, p: x["classes"].astype("int64"))),
    # variable
    case("variable-vector", {"class": "variable", "shape": [3]}, "[F|'output:feature'(3)] float32",
         params={"output": {"output": (3,)}}, reference=out(lambda x, n, p: p["output/output"])),
    case("variable-vector-batch", {"class": "variable", "shape": [3], "add_batch_axis": True},
         "[B, F|'output:feature'(3)] float32", params={"output": {"output": (3,)}}, reader=READ_DATA,
         reference=out(lambda x, n, p: _tile(p["output/output"], x))),
    case("variable-time-no-batch", {"class": "variable", "shape": (2, 3), "add_batch_axis": False,
                                    "add_time_axis": True, "init": "glorot_uniform"},
         "['output:time'(1), 'output:dim0'(2), F|'output:feature'(3)] float32",
         params={"output": {"output": (2, 3)}}, reference=out(lambda x, n, p: p["output/output"][None])),
    case("variable-dim-shape", {"class": "variable", "shape": [HIDDEN], "trainable": False, "dtype": "float64",
                                "add_batch_axis": True},
         "[B, F|'hidden'(4)] float64", params={"output": {"output": (4,)}}, reader=READ_DATA,
         reference=out(lambda x, n, p: _tile(p["output/output"], x))),
]

ERROR_CASES = [
    error("slice-step-zero", {"class": "slice", "axis": "T", "slice_step": 0}, InvalidOptionError,
          ["'slice_step'", "use a positive step such as 1"]),
    error("slice-batch-axis", {"class": "slice", "axis": "B", "slice_end": 2}, InvalidOptionError,
          ["batch axis", "'axis'"]),
    error("slice-axis-kind", {"class": "slice", "axis": "T", "axis_kind": "T"}, InvalidOptionError,
          ["'axis_kind'", "not supported"]),
    error("gather-float-position", {"class": "gather", "position": "data", "axis": "F"}, InvalidOptionError,
          ["'position'", "integers"]),
    error("gather-int-out-of-range", {"class": "gather", "position": 6, "axis": "F"}, InvalidOptionError,
          ["'position' 6", "out of range", "use an index from -6 to 5"]),
    error("gather-no-axis", {"class": "gather", "position": 0}, MissingOptionError, ["'axis'"]),
    error("pad-pairs-mismatch", {"class": "pad", "axes": ["T", "F"], "padding": [(1, 1)]}, InvalidOptionError,
          ["'padding'", "1 pairs", "2 axes"]),
    error("pad-reflect-too-far", {"class": "pad", "axes": "F", "padding": 6, "mode": "reflect"}, InvalidOptionError,
          ["mode 'reflect'", "'padding'", "pad by at most 5 frames with mode 'reflect', or use mode 'constant'"]),
    error("pad-no-axes", {"class": "pad", "axes": [], "padding": 1}, InvalidOptionError,
          ["'axes' []", "names no axis", "e.g. 'T' or ['T', 'F']"]),
    error("pad-bad-padding-form", {"class": "pad", "axes": "T", "padding": (1, 2, 3)}, InvalidOptionError,
          ["'padding' is (1, 2, 3)", "e.g. 'padding': (2, 1)"]),
    error("pad-mode-typo", {"class": "pad", "axes": "F", "padding": 1, "mode": "replicate"}, InvalidOptionError,
          ["'mode'", "did you mean 'replication'?"]),
    error("pad-negative", {"class": "pad", "axes": "T", "padding": (-1, 0)}, InvalidOptionError,
          ["'padding'", "negative"]),
    error("window-left-right-sum", {"class": "window", "window_size": 3, "window_left": 1, "window_right": 2},
          InvalidOptionError, ["window_size - 1 = 2"]),
    error("window-valid-with-left", {"class": "window", "window_size": 3, "window_left": 1, "padding": "valid"},
          InvalidOptionError, ["'window_left'", "'same'"]),
    error("window-batch-axis", {"class": "window", "window_size": 2, "axis": "B"}, InvalidOptionError,
          ["batch axis", "'axis'"]),
    error("window-size-zero", {"class": "window", "window_size": 0}, InvalidOptionError, ["'window_size' is 0"]),
    error("window-bad-padding", {"class": "window", "window_size": 2, "padding": "full"}, InvalidOptionError,
          ["'padding'", "'full'"]),
    error("cumsum-unknown-axis", {"class": "cumsum", "axis": "stag:foo"}, AxisError, ["'axis'", "foo"]),
    error("cumsum-bool", {"class": "cumsum", "axis": "F", "from": "mask"}, InvalidOptionError, ["bool"],
          mask={"class": "constant", "value": [True, False], "with_batch_dim": True}),
    error("cumsum-fractional-summand-on-int", {"class": "cumsum", "additional_left_summand_per_element": 0.5,
                                               "from": "data:classes"}, InvalidOptionError,
          ["'additional_left_summand_per_element'", "int32"]),
    error("seq-len-mask-static", {"class": "seq_len_mask", "mask_value": 0, "axis": "F"}, InvalidOptionError,
          ["'axis'", "static"]),
    error("seq-len-mask-window-size-alone", {"class": "seq_len_mask", "mask_value": 0, "window_size": 2},
          InvalidOptionError, ["'window_size' needs option 'window_start'"]),
    error("seq-len-mask-float-start", {"class": "seq_len_mask", "mask_value": 0, "start": "data"},
          InvalidOptionError, ["'start'", "shape [B]"]),
    error("seq-len-mask-static-seq-len-source", {"class": "seq_len_mask", "mask_value": 0, "seq_len_source": "len"},
          InvalidOptionError, ["'seq_len_source'", "no dynamic time axis"], len=LENGTH),
    error("seq-len-mask-fractional-on-sparse", {"class": "seq_len_mask", "mask_value": 0.5, "from": "data:classes"},
          InvalidOptionError, ["'mask_value'", "int32"]),
    error("length-static-axis-sparse", {"class": "length", "axis": "F", "sparse": True}, InvalidOptionError,
          ["'axis'", "static", "'sparse'"]),
    error("length-static-axis-time-axis", {"class": "length", "axis": "F", "add_time_axis": True},
          InvalidOptionError, ["'axis'", "static", "'add_time_axis'"]),
    error("length-sparse-float", {"class": "length", "sparse": True, "dtype": "float32"}, InvalidOptionError,
          ["'sparse'", "integer 'dtype'"]),
    error("range-delta-zero", {"class": "range", "limit": 3, "delta": 0}, InvalidOptionError, ["'delta'"]),
    error("range-float-in-int-dtype", {"class": "range", "limit": 2.5, "dtype": "int32"}, InvalidOptionError,
          ["'dtype'", "cannot hold"]),
    error("range-sparse-float", {"class": "range", "limit": 2.5, "sparse": True}, InvalidOptionError,
          ["'sparse'", "integer 'dtype'"]),
    error("range-in-axis-unbroadcast", {"class": "range_in_axis", "axis": "T", "unbroadcast": True},
          InvalidOptionError, ["'unbroadcast'", "not supported"]),
    error("range-from-length-float", {"class": "range_from_length"}, InvalidOptionError,
          ["'from'", "integer lengths"]),
    error("range-from-length-not-b", {"class": "range_from_length", "from": "data:classes"}, InvalidOptionError,
          ["'from'", "shape [B]"]),
    error("constant-ragged", {"class": "constant", "value": [[1, 2], [3]]}, InvalidOptionError, ["'value'", "ragged"]),
    error("constant-string", {"class": "constant", "value": "a"}, InvalidOptionError, ["'value'", "numbers or bools"]),
    error("constant-fraction-as-int", {"class": "constant", "value": 1.5, "dtype": "int32"}, InvalidOptionError,
          ["'value'", "non-integer"]),
    error("cast-dtype-typo", {"class": "cast", "dtype": "flaot32"}, InvalidOptionError,
          ["'dtype'", "did you mean 'float32'?"]),
    error("variable-negative-size", {"class": "variable", "shape": [-1]}, InvalidOptionError, ["'shape'", "-1"]),
    error("variable-dynamic-dim", {"class": "variable", "shape": [SpatialDim("t")]}, InvalidOptionError,
          ["'shape'", "not a static dim"]),
    error("variable-no-shape", {"class": "variable"}, MissingOptionError, ["'shape'"]),
]
