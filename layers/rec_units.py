"""The built-in recurrent units as tables: each recurrence (`UnitKind`: LSTM, GRU, simple RNN, zoneout LSTM,
RHN), the spellings of `unit` RETURNN accepts and their unit_opts defaults, the ones refused, and how RETURNN names
their parameters (the "rec" scope, TF's LSTMCell kernel and peepholes). Shared by `rec` and `rnn_cell`."""

from dataclasses import dataclass
from typing import Any, Dict, Tuple

from netcompiler.layer_base import NONE_TYPE

INIT_TYPES = (str, int, float, dict, NONE_TYPE)


@dataclass(frozen=True)
class UnitKind:
    """A recurrence: how many blocks of n_out its weight matrices have, and the unit_opts it knows.

    `unit_opts` maps each known key to its default; `supported` are the keys that may
    take other values (the rest are refused unless they have their default).
    """

    name: str
    blocks: int
    unit_opts: Dict[str, Any]
    supported: frozenset


LSTM = UnitKind("lstm", 4, {"forget_bias": 0.0, "state_is_tuple": True, "activation": "tanh", "use_peepholes": False,
                            "cell_clip": None, "num_proj": None, "proj_clip": None, "rec_weight_dropout": 0.0},
                frozenset({"forget_bias", "state_is_tuple", "use_peepholes"}))
GRU = UnitKind("gru", 3, {"activation": "tanh"}, frozenset())
RNN = UnitKind("rnn", 1, {"activation": "tanh"}, frozenset({"activation"}))
ZONEOUT_LSTM = UnitKind("zoneoutlstm", 4, {"zoneout_factor_cell": 0.0, "zoneout_factor_output": 0.0},
                        frozenset({"zoneout_factor_cell", "zoneout_factor_output"}))
RHN = UnitKind("rhn", 2, {"depth": 5, "dropout": 0.0, "transform_bias": 0.0, "dropout_seed": None,
                          "is_training": None, "batch_size": None},
               frozenset({"depth", "dropout_seed", "is_training", "batch_size"}))

# Spellings of `unit` (lower case, without a trailing "cell"), as RETURNN accepts them, and the
# unit_opts defaults that differ between spellings: TF's LSTMCell (RETURNN's "standardlstm", and
# "basiclstm" under TF 2; also inside RETURNN's ZoneoutLSTMCell) adds forget_bias=1.0, the native LSTMs
# add none. RETURNN runs "lstmp" as its default LSTM (no projection).
UNITS: Dict[str, Tuple[UnitKind, Dict[str, Any]]] = {
    "lstm": (LSTM, {}), "nativelstm": (LSTM, {}), "nativelstm2": (LSTM, {}), "lstmblock": (LSTM, {}),
    "lstmblockfused": (LSTM, {}), "cudnnlstm": (LSTM, {}), "lstmp": (LSTM, {}), "nativelstmlowmem": (LSTM, {}),
    "standardlstm": (LSTM, {"forget_bias": 1.0}), "basiclstm": (LSTM, {"forget_bias": 1.0}),
    "zoneoutlstm": (ZONEOUT_LSTM, {"forget_bias": 1.0}),
    "gru": (GRU, {}),
    "basicrnn": (RNN, {}), "rnn": (RNN, {}),
    "rhn": (RHN, {}),
}

# LSTM spellings RETURNN runs as a TensorFlow cell (LSTMCell, inside ZoneoutLSTMCell too), whose variables are one
# kernel [in + n, 4n] (rows: input, then recurrent weights) and a bias [4n], blocks in TF's order (i, c, f, o),
# named "rec/<scope>/kernel" and "rec/<scope>/bias".
TF_LSTM_CELL_SCOPES = {"standardlstm": "lstm_cell", "basiclstm": "basic_lstm_cell", "zoneoutlstm": "lstm_cell"}
TF_LSTM_GATE_ORDER = "icfo"

# The spellings whose TF cell takes `use_peepholes` (TF's LSTMCell; RETURNN's native LSTMs refuse it).
PEEPHOLE_UNITS = ("standardlstm",)
PEEPHOLE_GATES = "ifo"  # the diagonal weights "w_<gate>_diag" of TF's LSTMCell, in the order lstm_step takes them


def unit_key(unit: str) -> str:
    """A unit's spelling as UNITS knows it: lower case, without a trailing "cell"."""
    key = unit.lower()
    return key[:-len("cell")] if key.endswith("cell") and key != "cell" else key


# RETURNN spellings refused, and why.
UNSUPPORTED_UNITS = {
    "cudnngru": "the cuDNN GRU (reset gate after the recurrent matmul) is not supported by netcompiler yet; "
                "'gru' applies the reset gate before it",
}


def unit_param(key: str) -> str:
    """The name of a built-in unit's parameter `key` within its layer: RETURNN creates a rec layer's (and an
    rnn_cell's) cell variables in the variable scope "rec", so the checkpoint name is "<layer>/rec/<key>"."""
    return f"rec/{key}"
