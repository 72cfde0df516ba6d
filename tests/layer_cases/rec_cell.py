"""Cases for the built-in recurrent cells: rnn_cell (in a rec unit, step by step, and outside over time),
get_last_hidden_state, and the units zoneoutlstm, rhn and the LSTM spellings lstmp/NativeLstmLowMem, with NumPy
references that run each sequence on its own."""

import numpy as np

from layer_harness import ErrorCase, LayerCase
from netcompiler.errors import InvalidOptionError, MissingOptionError, UnknownOptionError

T = "T|'time:data'"


def _sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def lstm_states(seq, W, W_re, b, forget_bias=0.0, h0=None, c0=None, zoneout=(0.0, 0.0), peepholes=None):
    """One sequence [T, in] through an LSTM (gates c, i, f, o, RETURNN's native order): (outputs, hs, cs), each
    [T, n]; `zoneout` (cell, output) factors mix new and old states as in evaluation; `peepholes` (w_i, w_f, w_o:
    TF's LSTMCell) add w_i c and w_f c of the old cell to i and f, w_o c of the new one to o."""
    n = W_re.shape[0]
    h = np.zeros(n) if h0 is None else h0
    c = np.zeros(n) if c0 is None else c0
    outs, hs, cs = [], [], []
    for x_t in seq:
        g, i, f, o = np.split(x_t @ W + b + h @ W_re, 4)
        if peepholes is not None:
            i, f = i + peepholes[0] * c, f + peepholes[1] * c
        new_c = _sigmoid(f + forget_bias) * c + _sigmoid(i) * np.tanh(g)
        if peepholes is not None:
            o = o + peepholes[2] * new_c
        new_h = _sigmoid(o) * np.tanh(new_c)
        outs.append(new_h)
        c = (1 - zoneout[0]) * new_c + zoneout[0] * c
        h = (1 - zoneout[1]) * new_h + zoneout[1] * h
        hs.append(h)
        cs.append(c)
    return [np.reshape(v, (len(seq), n)) for v in (outs, hs, cs)]


def rhn_states(seq, W, b, depth_W):
    n = depth_W[0].shape[0]
    s, out = np.zeros(n), []
    for x_t in seq:
        xw = x_t @ W + b
        for d, U in enumerate(depth_W):
            z = s @ U + (xw if d == 0 else 0)
            s = s + _sigmoid(z[n:]) * (np.tanh(z[:n]) - s)
        out.append(s)
    return np.reshape(out, (len(seq), n))


def gru_states(seq, W, W_re, b, h0=None):
    n = W_re.shape[0]
    h, out = (np.zeros(n) if h0 is None else h0), []
    for x_t in seq:
        xw = x_t @ W + b
        z, r = np.split(_sigmoid(xw[:2 * n] + h @ W_re[:, :2 * n]), 2)
        h = z * h + (1 - z) * np.tanh(xw[2 * n:] + (r * h) @ W_re[:, 2 * n:])
        out.append(h)
    return np.reshape(out, (len(seq), n))


def per_seq(x, lengths, fn):
    """fn(sequence [T_b, in]) -> [T_b, n] per sequence, padded with zeros to [B, T, n]."""
    outs = [fn(x[b, :n]) for b, n in enumerate(lengths)]
    batch = np.zeros((len(outs), x.shape[1], outs[0].shape[-1]))
    for b, o in enumerate(outs):
        batch[b, :len(o)] = o
    return batch


def per_seq_tm(x, lengths, fn):
    """As `per_seq`, time-major [T, B, n], as a rec layer's output is laid out."""
    return np.swapaxes(per_seq(x, lengths, fn), 0, 1)


def last(x, lengths, fn):
    """fn(sequence) -> [T_b, n]: the last frame of each sequence, [B, n]."""
    return np.stack([fn(x[b, :n])[n - 1] for b, n in enumerate(lengths)])


def lstm_p(p, name):
    """[W, W_re, b] of an LSTM unit of layer `name`, blocks c, i, f, o; a TF cell's kernel [in + n, 4n] (blocks
    i, c, f, o, as RETURNN's standardlstm/zoneoutlstm keep them) is cut and reordered into those."""
    kernel = p.get(f"{name}/rec/lstm_cell/kernel")
    if kernel is None:
        return [p[f"{name}/rec/{k}"] for k in ("W", "W_re", "b")]
    n = kernel.shape[1] // 4

    def native(w):
        i, c, f, o = np.split(w, 4, axis=-1)
        return np.concatenate([c, i, f, o], axis=-1)
    return [native(kernel[:-n]), native(kernel[-n:]), native(p[f"{name}/rec/lstm_cell/bias"])]


def lstm_params(n_in, n):
    return {"rec/W": (n_in, 4 * n), "rec/W_re": (n, 4 * n), "rec/b": (4 * n,)}


def tf_lstm_params(n_in, n):
    """The parameters of a unit RETURNN runs as TF's LSTMCell (standardlstm, zoneoutlstm)."""
    return {"rec/lstm_cell/kernel": (n_in + n, 4 * n), "rec/lstm_cell/bias": (4 * n,)}


def loop(unit, source="data", **opts):
    return {"class": "rec", "from": source, "unit": unit, **opts}


# --- an explicit LSTM in a rec unit: rnn_cell, and its state at every step -------------------------------------------
LSTM_UNIT = {
    "cell": {"class": "rnn_cell", "unit": "LSTMBlock", "n_out": 5, "from": "data:source"},
    "state": {"class": "get_last_hidden_state", "from": "cell", "n_out": 10, "is_output_layer": True},
    "output": {"class": "copy", "from": "cell"},
}


def _lstm_in_loop_ref(x, lengths, p):
    x, lengths = x["data"], lengths["data"]
    W = lstm_p(p, "loop/rec/cell")
    return {"loop": per_seq_tm(x, lengths, lambda s: lstm_states(s, *W)[0]),
            "loop/state": per_seq_tm(x, lengths, lambda s: np.concatenate(lstm_states(s, *W)[:0:-1], -1)),
            "builtin": per_seq_tm(x, lengths, lambda s: lstm_states(s, *lstm_p(p, "builtin"))[0])}


# --- outside a loop: rnn_cell over time; final states of rnn_cell and rec ------------------------------------------
def _outside_ref(x, lengths, p):
    x, lengths = x["data"], lengths["data"]
    gru = [p[f"gru/rec/{k}"] for k in ("W", "W_re", "b")]
    rec = lstm_p(p, "rec")
    return {"gru": per_seq_tm(x, lengths, lambda s: gru_states(s, *gru)),
            "gru_last": last(x, lengths, lambda s: gru_states(s, *gru)),
            "rec_last": np.concatenate([last(x, lengths, lambda s: lstm_states(s, *rec)[2]),
                                        last(x, lengths, lambda s: lstm_states(s, *rec)[1])], -1),
            "rec_h": last(x, lengths, lambda s: lstm_states(s, *rec)[1])}


def _initial_state_ref(x, lengths, p):
    x, lengths = x["data"], lengths["data"]
    W = lstm_p(p, "cell")
    h0 = p["cell/rec/initial_h"]
    return {"cell": per_seq_tm(x, lengths, lambda s: lstm_states(s, *W, h0=h0, c0=np.ones(4))[0])}


def _rec_initial_state_ref(x, lengths, p):
    """rec with initial_state "var" (lstm: c and h, forward and backward) and "ones" (gru)."""
    x, lengths = x["data"], lengths["data"]
    W = lstm_p(p, "fw")
    h0, c0 = p["fw/rec/initial_h"], p["fw/rec/initial_c"]
    gru = [p[f"gru/rec/{k}"] for k in ("W", "W_re", "b")]
    backward = per_seq_tm(x, lengths, lambda s: lstm_states(s[::-1], *lstm_p(p, "bw"), h0=p["bw/rec/initial_h"],
                                                           c0=p["bw/rec/initial_c"])[0][::-1])
    return {"fw": per_seq_tm(x, lengths, lambda s: lstm_states(s, *W, h0=h0, c0=c0)[0]), "bw": backward,
            "fw_last": np.concatenate([last(x, lengths, lambda s: lstm_states(s, *W, h0=h0, c0=c0)[2]),
                                       last(x, lengths, lambda s: lstm_states(s, *W, h0=h0, c0=c0)[1])], -1),
            "gru": per_seq_tm(x, lengths, lambda s: gru_states(s, *gru, h0=np.ones(3)))}


def _peepholes_ref(x, lengths, p):
    """standardlstm with use_peepholes (forget_bias 1.0), forward, and backward in a loop body's rnn_cell."""
    x, lengths = x["data"], lengths["data"]

    def run(s, name):
        peep = [p[f"{name}/rec/lstm_cell/w_{gate}_diag"] for gate in "ifo"]
        return lstm_states(s, *lstm_p(p, name), forget_bias=1.0, peepholes=peep)[0]
    return {"peep": per_seq_tm(x, lengths, lambda s: run(s, "peep")),
            "bw": per_seq_tm(x, lengths, lambda s: run(s[::-1], "bw")[::-1]),
            "loop": per_seq_tm(x, lengths, lambda s: run(s, "loop/rec/cell"))}


def _one_step_per_frame_ref(x, lengths, p):
    """rec on data without a time axis: every frame one step from the zero state (RETURNN's; corpus
    rec/lstm/static). With axis "dim:4" it runs over that axis instead."""
    x = x["data"]
    W = lstm_p(p, "step")
    steps = np.stack([[lstm_states(x[b, s:s + 1], *W)[0][0] for s in range(x.shape[1])] for b in range(len(x))])
    over = np.stack([lstm_states(x[b], *lstm_p(p, "over"))[0] for b in range(len(x))])  # [B, S, n]
    return {"step": steps, "over": np.swapaxes(over, 0, 1)}


# --- zoneoutlstm (evaluation: the deterministic mix), rhn, and LSTM spellings ---------------------------------------
def _zoneout_ref(x, lengths, p):
    x, lengths = x["data"], lengths["data"]

    def run(s, name):
        return lstm_states(s, *lstm_p(p, name), forget_bias=1.0, zoneout=(0.3, 0.2))
    return {"zo": per_seq_tm(x, lengths, lambda s: run(s, "zo")[0]),
            "loop": per_seq_tm(x, lengths, lambda s: run(s, "loop/rec/cell")[0]),
            "zo_state": np.concatenate([last(x, lengths, lambda s: run(s, "zo")[2]),
                                        last(x, lengths, lambda s: run(s, "zo")[1])], -1)}


def _rhn_ref(x, lengths, p):
    x, lengths = x["data"], lengths["data"]

    def run(s, name):
        return rhn_states(s, p[f"{name}/rec/W"], p[f"{name}/rec/b"], [p[f"{name}/rec/depth_{d}/W"] for d in range(2)])
    return {"rhn": per_seq_tm(x, lengths, lambda s: run(s, "rhn")),
            "loop": per_seq_tm(x, lengths, lambda s: run(s, "loop/rec/cell"))}


def _spellings_ref(x, lengths, p):
    x, lengths = x["data"], lengths["data"]
    return {name: per_seq_tm(x, lengths, lambda s, name=name: lstm_states(s, *lstm_p(p, name))[0])
            for name in ("lstmp", "lowmem")}


RHN_PARAMS = {"rec/W": (6, 6), "rec/b": (6,), "rec/depth_0/W": (3, 6), "rec/depth_1/W": (3, 6)}
ZO_OPTS = {"zoneout_factor_cell": 0.3, "zoneout_factor_output": 0.2}

CASES = [
    LayerCase("rnn-cell-lstm-in-loop-and-state", {
        "loop": loop(LSTM_UNIT), "builtin": {"class": "rec", "unit": "lstm", "n_out": 5, "from": "data"},
        "output": {"class": "copy", "from": ["loop", "builtin"]}},
        {"loop": f"[{T}, B, F|'loop/cell:feature'(5)] float32",
         "loop/state": f"[{T}, B, F|'loop/state:feature'(10)] float32",
         "builtin": f"[{T}, B, F|'builtin:feature'(5)] float32"},
        params={"loop/cell": lstm_params(6, 5), "builtin": lstm_params(6, 5)}, reference=_lstm_in_loop_ref),
    LayerCase("rnn-cell-gru-outside-loop-and-final-states", {
        "gru": {"class": "rnn_cell", "unit": "GRU", "n_out": 3, "from": "data"},
        "gru_last": {"class": "get_last_hidden_state", "from": "gru", "n_out": 3, "key": None, "is_output_layer": True},
        "rec": {"class": "rec", "unit": "NativeLstm2", "n_out": 4, "from": "data"},
        "rec_last": {"class": "get_last_hidden_state", "from": "rec", "n_out": 8, "is_output_layer": True},
        "rec_h": {"class": "get_last_hidden_state", "from": "rec", "n_out": 4, "key": "h", "is_output_layer": True},
        "output": {"class": "copy", "from": "gru"}},
        {"gru": f"[{T}, B, F|'gru:feature'(3)] float32", "gru_last": "[B, F|'gru_last:feature'(3)] float32",
         "rec_last": "[B, F|'rec_last:feature'(8)] float32", "rec_h": "[B, F|'rec_h:feature'(4)] float32"},
        params={"gru": {"rec/W": (6, 9), "rec/W_re": (3, 9), "rec/b": (9,)}, "rec": lstm_params(6, 4)},
        reference=_outside_ref),
    LayerCase("rnn-cell-initial-state-var-and-ones", {
        "cell": {"class": "rnn_cell", "unit": "lstm", "n_out": 4, "from": "data",
                 "initial_state": {"c": "ones", "h": "var"}},
        "output": {"class": "copy", "from": "cell"}},
        {"cell": f"[{T}, B, F|'cell:feature'(4)] float32"},
        params={"cell": {**lstm_params(6, 4), "rec/initial_h": (4,)}}, reference=_initial_state_ref),
    LayerCase("rec-standardlstm-peepholes", {
        "peep": {"class": "rec", "unit": "standardlstm", "n_out": 3, "from": "data",
                 "unit_opts": {"use_peepholes": True}},
        "bw": {"class": "rec", "unit": "StandardLSTM", "n_out": 3, "from": "data", "direction": -1,
               "unit_opts": {"use_peepholes": True}},
        "loop": loop({"cell": {"class": "rnn_cell", "unit": "standardlstm", "n_out": 3, "from": "data:source",
                               "unit_opts": {"use_peepholes": True}},
                      "output": {"class": "copy", "from": "cell"}}),
        "output": {"class": "copy", "from": ["peep", "bw", "loop"]}},
        {"peep": f"[{T}, B, F|'peep:feature'(3)] float32", "bw": f"[{T}, B, F|'bw:feature'(3)] float32",
         "loop": f"[{T}, B, F|'loop/cell:feature'(3)] float32"},
        # TF's LSTMCell names its peephole weights w_<gate>_diag (corpus case rec/standardlstm/peepholes)
        params={"peep": {**tf_lstm_params(6, 3), **{f"rec/lstm_cell/w_{g}_diag": (3,) for g in "ifo"}}},
        reference=_peepholes_ref),
    LayerCase("rec-static-input-one-step-per-frame", {
        "step": {"class": "rec", "unit": "lstm", "n_out": 3, "from": "data"},
        "over": {"class": "rec", "unit": "lstm", "n_out": 3, "from": "data", "axis": "dim:4"},
        "output": {"class": "copy", "from": ["step", "over"]}},
        {"step": "[B, 'data:static0'(4), F|'step:feature'(3)] float32",
         "over": "[T|'data:static0'(4), B, F|'over:feature'(3)] float32"},
        extern_data={"data": {"shape": (4, 6)}}, params={"step": lstm_params(6, 3)},
        reference=_one_step_per_frame_ref),
    LayerCase("rec-initial-state-var-and-ones", {
        "fw": {"class": "rec", "unit": "lstm", "n_out": 4, "from": "data", "initial_state": "var"},
        "bw": {"class": "rec", "unit": "NativeLstm2", "n_out": 4, "from": "data", "direction": -1,
               "initial_state": {"c": "var", "h": "var"}},
        "fw_last": {"class": "get_last_hidden_state", "from": "fw", "n_out": 8, "is_output_layer": True},
        "gru": {"class": "rec", "unit": "gru", "n_out": 3, "from": "data", "initial_state": "ones"},
        "output": {"class": "copy", "from": ["fw", "bw", "gru"]}},
        {"fw": f"[{T}, B, F|'fw:feature'(4)] float32", "bw": f"[{T}, B, F|'bw:feature'(4)] float32",
         "gru": f"[{T}, B, F|'gru:feature'(3)] float32"},
        # the initial state variables as RETURNN names them (corpus case rec/lstm/initial_state_var)
        params={"fw": {**lstm_params(6, 4), "rec/initial_c": (4,), "rec/initial_h": (4,)},
                "gru": {"rec/W": (6, 9), "rec/W_re": (3, 9), "rec/b": (9,)}},
        reference=_rec_initial_state_ref),
    LayerCase("zoneoutlstm-rec-and-rnn-cell-eval", {
        "zo": {"class": "rec", "unit": "ZoneoutLSTM", "n_out": 3, "from": "data", "unit_opts": ZO_OPTS},
        "zo_state": {"class": "get_last_hidden_state", "from": "zo", "n_out": 6, "is_output_layer": True},
        "loop": loop({"cell": {"class": "rnn_cell", "unit": "zoneoutlstm", "n_out": 3, "from": "data:source",
                               "unit_opts": ZO_OPTS},
                      "output": {"class": "copy", "from": "cell"}}),
        "output": {"class": "copy", "from": ["zo", "loop"]}},
        {"zo": f"[{T}, B, F|'zo:feature'(3)] float32", "zo_state": "[B, F|'zo_state:feature'(6)] float32",
         "loop": f"[{T}, B, F|'loop/cell:feature'(3)] float32"},
        params={"zo": tf_lstm_params(6, 3), "loop/cell": tf_lstm_params(6, 3)}, reference=_zoneout_ref),
    LayerCase("rhn-rec-and-rnn-cell", {
        "rhn": {"class": "rec", "unit": "RHNCell", "n_out": 3, "from": "data", "unit_opts": {"depth": 2}},
        "loop": loop({"cell": {"class": "rnn_cell", "unit": "rhn", "n_out": 3, "from": "data:source",
                               "unit_opts": {"depth": 2}},
                      "output": {"class": "copy", "from": "cell"}}),
        "output": {"class": "copy", "from": ["rhn", "loop"]}},
        {"rhn": f"[{T}, B, F|'rhn:feature'(3)] float32", "loop": f"[{T}, B, F|'loop/cell:feature'(3)] float32"},
        params={"rhn": RHN_PARAMS, "loop/cell": RHN_PARAMS}, reference=_rhn_ref),
    LayerCase("rec-lstm-spellings-lstmp-nativelstmlowmem", {
        "lstmp": {"class": "rec", "unit": "lstmp", "n_out": 3, "from": "data"},
        "lowmem": {"class": "rec", "unit": "NativeLstmLowMem", "n_out": 3, "from": "data"},
        "output": {"class": "copy", "from": ["lstmp", "lowmem"]}},
        {"lstmp": f"[{T}, B, F|'lstmp:feature'(3)] float32", "lowmem": f"[{T}, B, F|'lowmem:feature'(3)] float32"},
        params={"lstmp": lstm_params(6, 3), "lowmem": lstm_params(6, 3)}, reference=_spellings_ref),
]


def _cell(**opts):
    return {"output": {"class": "rnn_cell", "unit": "lstm", "n_out": 3, "from": "data", **opts}}


def _last(source_opts, **opts):
    return {"src": {"class": "rec", "unit": "lstm", "n_out": 3, "from": "data", **source_opts},
            "output": {"class": "get_last_hidden_state", "from": "src", "n_out": 6, **opts}}


ERROR_CASES = [
    ErrorCase("rec-peepholes-of-a-native-lstm", {"output": {"class": "rec", "unit": "nativelstm2", "n_out": 3,
                                                             "unit_opts": {"use_peepholes": True}}},
              InvalidOptionError, ["use_peepholes", "unit 'nativelstm2' has no peepholes", "'standardlstm'"]),
    ErrorCase("rnn-cell-no-n-out", _cell(n_out=None), MissingOptionError, ["layer 'output'", "needs option 'n_out'"]),
    ErrorCase("rnn-cell-unknown-unit", _cell(unit="lstn"), InvalidOptionError, ["unknown unit 'lstn'", "lstm"]),
    ErrorCase("rnn-cell-initial-state-layer", _cell(initial_state="data"), InvalidOptionError,
              ["'initial_state' a layer", "not supported", "'var'"]),
    ErrorCase("rnn-cell-initial-state-keep-over-epoch", _cell(initial_state="keep_over_epoch"), InvalidOptionError,
              ["'initial_state' 'keep_over_epoch'", "not supported"]),
    ErrorCase("rnn-cell-initial-state-wrong-keys", _cell(initial_state={"h": "zeros"}), InvalidOptionError,
              ["must have exactly the keys ['c', 'h']", "e.g. {'c': 'zeros', 'h': 'zeros'}"]),
    ErrorCase("rnn-cell-initial-state-list-length", _cell(initial_state=["zeros"]), InvalidOptionError,
              ["must have 2 entries (c, h)", "e.g. ['zeros', 'zeros']"]),
    ErrorCase("rnn-cell-initial-output", _cell(initial_output="ones"), InvalidOptionError,
              ["'initial_output'", "set 'initial_state' instead"]),
    ErrorCase("rnn-cell-outside-loop-without-time",
              {"red": {"class": "reduce", "mode": "max", "axes": "T", "from": "data"},
               "output": {"class": "rnn_cell", "unit": "gru", "n_out": 3, "from": "red"}},
              InvalidOptionError, ["outside a loop, rnn_cell runs over the input's time axis"]),
    ErrorCase("rnn-cell-rhn-dropout", _cell(unit="rhn", unit_opts={"dropout": 0.3}), InvalidOptionError,
              ["'unit_opts' dropout=0.3 is not supported"]),
    ErrorCase("rec-zoneout-factor-out-of-range",
              {"output": {"class": "rec", "unit": "zoneoutlstm", "n_out": 3,
                          "unit_opts": {"zoneout_factor_cell": 1.5}}},
              InvalidOptionError, ["zoneout_factor_cell must be a number in [0, 1]"]),
    ErrorCase("rnn-cell-zoneout-unknown-unit-opt", _cell(unit="zoneoutlstm", unit_opts={"zoneout": 0.1}),
              UnknownOptionError, ["'unit_opts' key 'zoneout' unknown"]),
    ErrorCase("get-last-hidden-state-n-out", _last({}, n_out=5), InvalidOptionError,
              ["'n_out' is 5", "has size 6", "set 'n_out': 6"]),
    ErrorCase("get-last-hidden-state-bad-key", _last({}, key="x"), InvalidOptionError,
              ["'key' 'x' does not name a part", "'c', 'h'"]),
    ErrorCase("get-last-hidden-state-of-linear", {"lin": {"class": "linear", "n_out": 3, "from": "data"},
                                                  "output": {"class": "get_last_hidden_state", "from": "lin",
                                                             "n_out": 3}},
              InvalidOptionError, ["'lin' (linear) has no hidden state"]),
    ErrorCase("get-last-hidden-state-add-unequal",
              {"a": {"class": "rec", "unit": "gru", "n_out": 3, "from": "data"},
               "b": {"class": "rec", "unit": "gru", "n_out": 2, "from": "data"},
               "output": {"class": "get_last_hidden_state", "from": ["a", "b"], "n_out": 3, "combine": "add"}},
              InvalidOptionError, ["combine 'add' needs states of one size"]),
]
