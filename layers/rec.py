"""The recurrent layer `rec`: a built-in unit (LSTM, GRU, simple RNN: `rf.lstm`, `rf.gru`, `rf.rnn`), or a unit
that is a network dict, a loop body run step by step (`layers/rec_loop.py`).
"""

from typing import Any, Dict, List, Tuple

from netcompiler import frontend as rf
from netcompiler.errors import MissingOptionError
from netcompiler.layer_base import NONE_TYPE, LayerBase, Option, ParamSpec
from netcompiler.tensor import Data, Dim, resolve_dim

from .cum_concat import in_loop_step
from .rec_builtin_unit import BuiltinUnit
from .rec_loop import LoopUnit
from .rec_unit_state import record_final_state
from .rec_units import INIT_TYPES
from .subnetwork import parent_references

# Options without effect here: a value other than the default only adds a notice.
_IGNORED = {"cheating": False, "unroll": False, "debug": None}

# Options without effect for a built-in unit only (RETURNN uses `max_seq_len` there only when unrolling):
# a value other than the default only adds a notice.
_IGNORED_BUILTIN = {"max_seq_len": None}

# Options whose other values are refused for a built-in unit: (accepted values, why).
_NOT_YET = "not supported by netcompiler yet"
_LOOP_ONLY = "only applies to a unit that is a network dict"
_RESTRICTED = {
    "input_projection": ((True,), _NOT_YET),
    "back_prop": ((None, True), _NOT_YET),
    "use_global_rec_step_offset": ((False,), _NOT_YET),
    "max_seq_len_via": ((None,), _LOOP_ONLY),
    "include_eos": ((False,), _LOOP_ONLY + " (in search)"),
}


def time_major(out: Data, time: Dim) -> Data:
    """A rec layer's output as RETURNN lays it out: the iterated dim first, the feature dim last, the other dims
    in their order between them (so [T, B, F] for the usual input, whatever its order)."""
    feature = [out.feature_dim] if out.feature_dim is not None and out.feature_dim != time else []
    rest = [d for d in out.dims if d != time and d not in feature]
    return out.copy(dims=tuple([time] + rest + feature))


class RecLayer(LoopUnit, BuiltinUnit, LayerBase):
    """Runs a recurrent unit over the time axis (`axis`) of the input: out[t] = unit(x[t], state[t-1]).

    Options: `unit` ("lstm"; also "gru", "basicrnn"/"rnn", and the LSTM spellings "nativelstm",
    "nativelstm2", "lstmblock", "lstmblockfused", "cudnnlstm", "lstmp" (RETURNN runs it as its plain LSTM),
    "nativelstmlowmem", "standardlstm", "basiclstm"; "zoneoutlstm" (RETURNN's ZoneoutLSTMCell, see
    `rf.zoneout_lstm`), "rhn" (recurrent highway net, RETURNN's RHNCell, see `rf.rhn`); any
    case, a trailing "Cell" allowed; or a network dict, see below), `n_out` (required for a built-in unit),
    `unit_opts` (None; lstm: "forget_bias" (0.0; 1.0 for "standardlstm"/"basiclstm"/"zoneoutlstm", added to the
    forget gate at run time); standardlstm: "use_peepholes" (False; True: TF's LSTMCell peepholes, parameters
    "rec/lstm_cell/w_i_diag", "w_f_diag", "w_o_diag" [n]: i and f see the old cell, o the new one; the other spellings
    refuse it, as RETURNN); basicrnn: "activation" ("tanh"); zoneoutlstm: "zoneout_factor_cell",
    "zoneout_factor_output" (0.0); rhn: "depth" (5; "dropout" only 0, "transform_bias" only 0)),
    `direction` (None or 1: forward, -1: backward), `axis` (None: "T"), `initial_state` (as in
    `rnn_cell`: None, 0 or "zeros"; 1 or "ones"; "var": a trainable vector per state part, parameters "rec/initial_c"
    and "rec/initial_h" for the LSTMs, "rec/initial_var" otherwise, starting at zero as in RETURNN; for the LSTMs also
    a dict {"c": ..., "h": ...} or a list [c, h]; layers are not supported yet; a unit dict takes none),
    `forward_weights_init` (None: "glorot_uniform"), `recurrent_weights_init` (None: the forward
    init), `bias_init` (None: 0.0), `input_projection` (True; False not supported), `max_seq_len` (no effect
    with a built-in unit: RETURNN uses it there only to unroll), `max_seq_len_via`, `include_eos` (loop
    bodies only), `back_prop` (None; False not supported),
    `use_global_rec_step_offset` (False; True not supported), `optimize_move_layers_out` (None: the
    config key of that name, default True; see below), `cheating`, `unroll`, `debug` (no effect).

    Output: the input with its feature dim replaced by "<name>:feature"(n_out); every other dim,
    time included, is the input's own Dim, and the iterated axis is the output's time dim. The order is
    RETURNN's: the iterated axis first, the feature dim last, the other dims in their order between them (time-major
    [T, B, F] for a [B, T, F] input). On data without a time axis (no dynamic axis) and without `axis`, RETURNN
    runs one step of the unit per frame, each from the initial state, and so does this: the output keeps the input's
    order and has no time axis (corpus rec/lstm/static). A sparse input is embedded (rows of W), as in `linear`.

    Parameters (checkpoint names "<layer>/rec/<param>", as RETURNN's cell variables are named), with in = input
    features (classes if sparse), n = n_out:
    "rec/W" [in, k*n] (input weights), "rec/W_re" [n, k*n] (recurrent weights), "rec/b" [k*n]. The k blocks
    along the last axis: lstm (k=4, every LSTM spelling) as RETURNN's native LSTM orders them (so RETURNN's
    W/W_re/b give RETURNN's numbers): cell input c, input gate i, forget gate f, output gate o;
    gru (k=3): update gate z, reset gate r, candidate h, with the reset gate applied to the state
    before the recurrent matmul (Keras `reset_after=False`, TF 1's GRUCell; one bias);
    basicrnn (k=1): h[t] = activation(x W + h[t-1] W_re + b); zoneoutlstm as lstm; rhn (k=2: candidate h,
    transform gate t): "rec/W", "rec/b" and "rec/depth_<l>/W" [n, 2n] for each depth layer l instead of "rec/W_re".
    The units RETURNN runs as TF's LSTMCell ("standardlstm", "zoneoutlstm": "rec/lstm_cell/...", "basiclstm":
    "rec/basic_lstm_cell/...") have its variables instead: "kernel" [in + n, 4n] (the input rows, then the
    recurrent ones) and "bias" [4n], blocks in TF's order i, c, f, o (reordered for the LSTM at run time).
    Gates use the logistic sigmoid; the state starts at `initial_state`. `get_last_hidden_state` reads the final
    state.

    A unit that is a network dict is a loop body
    (`netcompiler.loop_body.LoopBody`, layers named "<rec>/<inner>") run once per frame of the dim the
    loop runs over: the input's iterated axis (`axis`), or with no input ("from": []) the time dim of
    the target (the rec layer's `target` or `size_target`, else the target of a loss inside the unit), or with neither
    a new dim "<rec>:time" whose length is not known before: the loop runs until the unit's layer
    "end" (bool [B]) has been true for every sequence, at most `max_seq_len` steps (an int, or
    "max_len_from('base:x')" with an optional "* N"/"+ N": the longest sequence of x's time dim); a
    sequence's length is the number of steps before its first "end" (RETURNN's include_eos=False), or
    `max_seq_len`. Inside:
    "data:source" is the input's frame at the step, "data:KEY" the frame of extern data KEY if it has
    that dim (else the whole of it), "prev:x" is x of the step before (at the first step: zeros, or
    x's `initial_output`: None/0/"zeros", "ones" or a number; other forms are refused), ":i" the step
    (int32, 0 first), "base:x" layer x of the network around (computed once, before the loop). The
    first guess for "prev:x"'s template comes from x's `n_out`/`out_type` (else from its first input);
    inference repeats until the templates settle. The output is the unit's "output" at every step,
    stacked: its dims with the loop's dim in front (time-major, as RETURNN stacks them: [T, B, F] for the usual
    [B, F] step), zero past each sequence's end. "rec/x" read from outside (and x with
    `is_output_layer` or a loss in the unit) is x stacked the same way; a loss inside the unit is
    computed on that stacked layer. Where the length is known (input or target), `max_seq_len` is
    checked and has no effect (RETURNN does not use it then either; a notice says so). With `direction` -1 the
    loop runs from each sequence's end. In search (`task = "search"`, or in any task for a choice with
    `"search": True`) a `choice` in the unit runs beam search (layers/choice.py) and the loop runs until 'end'.
    Not yet: `max_seq_len_via`, `include_eos`. With `optimize_move_layers_out`, a layer of the unit that does
    not depend on the step and computes frame by frame runs once over the whole sequence before the
    loop (`netcompiler/loop_move_out.py`; not in a loop until 'end'); the results are the same. Parameters are named
    "<rec>/rec/<inner>/<param>", as in RETURNN's checkpoints (the layers are "<rec>/<inner>"). The loop is one
    `rf.while_loop` whose per-step values are stacked with `rf.step_stack` (TensorFlow: one loop, traced once
    for any length; netcompiler/emit/loop_runner.py).

    Emission, through the op layer (`rf.lstm`, `rf.gru`, `rf.rnn`, netcompiler/frontend/rec.py): every index
    of the other frame dims (batch, extra spatial dims) is a sequence of its own. Every unit projects all
    frames with one matmul, then recurs in one backend loop (TensorFlow: one graph loop, traced once for any
    length; the LSTM's backward is a hand-written loop on both backends, backends/tensorflow/lstm_loop.py and
    backends/torch/lstm_function.py; backends/tensorflow/recurrent.py says why not TF's fused LSTM kernel).
    Frames after a sequence's end are computed on padding but cannot reach earlier frames. direction -1 reverses each
    sequence within its own length (`rf.reverse_sequence`, which keeps its padding behind it), runs forward,
    and reverses back. The output is zero on padded frames of the iterated dim. The unit runs time-major and its
    result is the output as it is: a batch-major input is transposed once, a time-major one (another rec layer's
    output) not at all.
    """

    layer_class = "rec"
    options = {
        "unit": Option("lstm", (str, dict), doc="a built-in unit name, or a loop body network dict"),
        "unit_opts": Option(None, (dict, NONE_TYPE)),
        "n_out": Option(None, (int, NONE_TYPE), doc="output feature size"),
        "direction": Option(None, (int, NONE_TYPE), choices=(None, 1, -1)),
        "axis": Option(None, (str, int, Dim, NONE_TYPE), doc="the axis to iterate over (default 'T')"),
        "input_projection": Option(True, (bool,)),
        "initial_state": Option(None, (str, int, float, list, tuple, dict, NONE_TYPE)),
        "max_seq_len": Option(None, (int, str, NONE_TYPE)),
        "max_seq_len_via": Option(None, (str, NONE_TYPE), ref="layer"),
        "forward_weights_init": Option(None, INIT_TYPES),
        "recurrent_weights_init": Option(None, INIT_TYPES),
        "bias_init": Option(None, INIT_TYPES),
        "optimize_move_layers_out": Option(None, (bool, NONE_TYPE)),
        "cheating": Option(False, (bool,)),
        "unroll": Option(False, (bool,)),
        "back_prop": Option(None, (bool, NONE_TYPE)),
        "use_global_rec_step_offset": Option(False, (bool,)),
        "include_eos": Option(False, (bool,)),
        "size_target": Option(None, (str, NONE_TYPE), doc="loop body: the target whose time dim the loop runs "
                                                           "over (like 'target', without a loss)"),
        "debug": Option(None, (bool, NONE_TYPE)),
    }

    @classmethod
    def referenced_names(cls, d: Dict[str, Any]) -> List[Tuple[str, str]]:
        refs = super().referenced_names(d)
        return refs + [("unit", name) for name in parent_references(d.get("unit"))]

    def make_output(self) -> Data:
        unit = self.opts["unit"]
        self._notice_ignored_options()
        if isinstance(unit, dict):
            return self._make_loop_output(unit)
        kind, _ = self._resolve_unit(unit)  # checks the unit and its unit_opts (make_params and emit resolve again)
        self._check_builtin_options()
        self._initial_state_specs(kind)
        if in_loop_step(self):  # in a loop body: one step of the unit, as rnn_cell (RETURNN does the same)
            if self.opts["direction"] == -1:
                raise self.error("'direction' -1 has no meaning for one step of a unit in a loop body",
                                 option="direction", suggestion="remove 'direction'")
            return self.projected_output(self._out_dim())
        return self._builtin_output()

    # --- the built-in unit ----------------------------------------------------------
    def _check_builtin_options(self) -> None:
        for key, (accepted, why) in _RESTRICTED.items():
            value = self.opts[key]
            if value not in accepted:
                shown = value.name if isinstance(value, LayerBase) else value
                raise self.error(f"option '{key}'={shown!r}: {why}", option=key)

    def _notice_ignored_options(self) -> None:
        ignored = _IGNORED if isinstance(self.opts["unit"], dict) else dict(_IGNORED, **_IGNORED_BUILTIN)
        for key, default in ignored.items():
            if self.opts[key] != default:
                self.network.notices.append(f"layer '{self.name}': option '{key}' has no effect in netcompiler; "
                                            f"ignored")

    def _out_dim(self) -> Dim:
        n_out = self.opts["n_out"]
        if n_out is None:
            raise MissingOptionError(f"class 'rec' with unit '{self.opts['unit']}' needs option 'n_out' "
                                     f"(the output feature size)", layer=self.name, option="n_out")
        return self.new_feature_dim(n_out)

    def _builtin_output(self) -> Data:
        x = self.input_data
        if not self._iterates():  # one step per frame (as RETURNN): no time axis
            return self.projected_output(self._out_dim(), time_dim=None)
        time = self._iteration_dim(x)
        return time_major(self.projected_output(self._out_dim(), time_dim=time), time)

    def _iterates(self) -> bool:
        """Whether a built-in unit runs over an axis: the input has a time axis or `axis` names one; else RETURNN
        runs one step per frame."""
        return self.input_data.time_dim is not None or self.opts["axis"] is not None

    def _iteration_dim(self, x: Data) -> Dim:
        # RETURNN iterates over the time axis; a unit dict on data without one not at all (a built-in unit there
        # runs one step per frame, see _iterates; its loop dim would be the first spatial axis)
        builtin = not isinstance(self.opts["unit"], dict)
        axis = self.opts["axis"]
        if axis is None:
            axis = "T" if x.time_dim is not None or not builtin else "spatial:0"
        dim = resolve_dim(x, axis, layer=self.name, option="axis")
        if dim.is_batch or dim == x.feature_dim:
            raise self.error(f"option 'axis' {axis!r} names the {'batch' if dim.is_batch else 'feature'} axis of "
                             f"the input {x.describe()}; rec iterates over a spatial axis", option="axis",
                             suggestion="use 'T' or another spatial axis")
        return dim

    def make_params(self) -> Dict[str, ParamSpec]:
        if isinstance(self.opts["unit"], dict):
            return {}  # the parameters belong to the layers of the unit
        kind, unit_opts = self._resolve_unit(self.opts["unit"])
        params = self.unit_params(kind, unit_opts, self.projected_in_dim(), self.output.feature_dim,
                                  *(self.opts[key] for key in ("forward_weights_init", "recurrent_weights_init",
                                                               "bias_init")))
        return {**params, **self.initial_state_params(kind, self.output.feature_dim)}

    # --- emission ---------------------------------------------------------------------
    def initial_step_state(self, inputs):
        """A built-in unit in a loop body: its state at the first step (`initial_state`)."""
        if isinstance(self.opts["unit"], dict) or not in_loop_step(self):
            return None
        kind, _ = self._resolve_unit(self.opts["unit"])
        return self._initial_state(inputs, kind, list(self.output.dims))

    def emit(self, inputs):
        if isinstance(self.opts["unit"], dict):
            return self.loop_values(inputs)["output"]
        kind, unit_opts = self._resolve_unit(self.opts["unit"])
        if inputs.loop_state is not None:
            y, new = self.step_unit(inputs, kind, unit_opts, inputs.x, self.projected_in_dim(),
                                    self.output.feature_dim, inputs.step_state)
            inputs.set_step_state(new)
            record_final_state(inputs, new)
            return y
        if not self._iterates():  # data without a time axis: one step per frame from the initial state, as RETURNN
            out_dim = self.output.feature_dim
            y, final = self.step_unit(inputs, kind, unit_opts, inputs.x, self.projected_in_dim(), out_dim,
                                      self._initial_state(inputs, kind, [out_dim]))
            record_final_state(inputs, final)
            return y
        time, out_dim = self._iteration_dim(self.input_data), self.output.feature_dim
        backward = self.opts["direction"] == -1
        x = rf.reverse_sequence(inputs.x, axis=time) if backward else inputs.x
        y, final = self.run_unit(inputs, kind, unit_opts, x, time, self.projected_in_dim(), out_dim,
                                 self._initial_state(inputs, kind, [out_dim]))
        record_final_state(inputs, final)
        return rf.reverse_sequence(y, axis=time) if backward else y

    # --- a unit dict: its layers read from outside as "rec/x" -----------------------------------
    def get_sub_layer(self, name: str):
        return self.loop_sub_layer(name) if isinstance(self.opts["unit"], dict) else None

    def sub_layer_names(self) -> List[str]:
        return [str(name) for name in self.opts["unit"]] if isinstance(self.opts["unit"], dict) else []

    def built_sub_layers(self) -> List[LayerBase]:
        return list(self.accumulated.values())

    def dependencies(self) -> List[LayerBase]:
        deps = super().dependencies()
        if not isinstance(self.opts["unit"], dict):
            return deps
        return deps + [d for d in self.loop_dependencies() if d not in deps]
