"""`BuiltinUnit`: what `rec` with a built-in unit and `rnn_cell` share -- resolving and checking `unit` and
`unit_opts`, the unit's parameters, and its emission over a Dim or as one step."""

from typing import Any, Dict, Tuple

from netcompiler import frontend as rf
from netcompiler.frontend.rec import lstm_gates_reordered
from netcompiler.frontend.rec_cell import peephole_lstm
from netcompiler.errors import UnknownOptionError, closest_match
from netcompiler.layer_base import NUMBER, ParamSpec
from netcompiler.tensor import FEATURE, Dim

from .activations import activate, check_activation
from .rec_unit_state import UnitState
from .rec_units import (LSTM, PEEPHOLE_GATES, PEEPHOLE_UNITS, RHN, RNN, TF_LSTM_CELL_SCOPES, TF_LSTM_GATE_ORDER, UNITS,
                        UNSUPPORTED_UNITS, ZONEOUT_LSTM, UnitKind, unit_key, unit_param)


class BuiltinUnit(UnitState):
    """What `rec` with a built-in unit and `rnn_cell` share: the unit (`unit`, `unit_opts`), its parameters,
    its state (a dict: "c" and "h" for the LSTMs, in RETURNN's LSTMStateTuple order; else "h") and its
    emission over a Dim or as one step (`rf.lstm`/`rf.lstm_step` etc., with the same weights)."""

    def _resolve_unit(self, unit: str) -> Tuple[UnitKind, Dict[str, Any]]:
        """The unit's kind and its unit_opts with defaults filled in."""
        key = unit_key(unit)
        if key in UNSUPPORTED_UNITS:
            raise self.error(f"unit '{unit}': {UNSUPPORTED_UNITS[key]}", option="unit",
                             suggestion="use a built-in unit, e.g. 'lstm' or 'gru'")
        if key not in UNITS:
            guess = closest_match(key, UNITS)
            raise self.error(f"unknown unit '{unit}' (built-in units: {', '.join(UNITS)})", option="unit",
                             suggestion=f"did you mean '{guess}'?" if guess else None)
        kind, spelling_defaults = UNITS[key]
        return kind, {**kind.unit_opts, **spelling_defaults, **self._checked_unit_opts(kind, unit)}

    def _checked_unit_opts(self, kind: UnitKind, unit: str) -> Dict[str, Any]:
        given = dict(self.opts["unit_opts"] or {})
        if "activation" in given and given["activation"] is None:
            given["activation"] = "tanh"  # TF's cells read None as their default, tanh
        if "transform_bias" in given and given["transform_bias"] is None:
            given["transform_bias"] = 0.0  # RETURNN's RHNCell reads None as 0
        for key, value in given.items():
            if key not in kind.unit_opts:
                guess = closest_match(str(key), kind.unit_opts)
                raise self.error(f"'unit_opts' key {key!r} unknown for unit '{unit}'", option="unit_opts",
                                 kind=UnknownOptionError,
                                 suggestion=f"did you mean '{guess}'?" if guess else
                                 f"it takes: {', '.join(sorted(kind.supported)) or 'nothing'}")
            if key not in kind.supported and value != kind.unit_opts[key]:
                raise self.error(f"'unit_opts' {key}={value!r} is not supported by netcompiler yet "
                                 f"(only {kind.unit_opts[key]!r})", option="unit_opts",
                                 suggestion=f"leave out '{key}' or set it to {kind.unit_opts[key]!r}")
        self._check_unit_opt_values(given)
        return given

    def _check_unit_opt_values(self, given: Dict[str, Any]) -> None:
        peepholes = given.get("use_peepholes", False)
        if not isinstance(peepholes, bool):
            raise self.error(f"'unit_opts' use_peepholes must be True or False, not {peepholes!r}", option="unit_opts",
                             suggestion="e.g. 'unit_opts': {'use_peepholes': True}")
        if peepholes and unit_key(self.opts["unit"]) not in PEEPHOLE_UNITS:
            raise self.error(f"'unit_opts' use_peepholes: unit '{self.opts['unit']}' has no peepholes (RETURNN "
                             f"refuses them too)", option="unit_opts",
                             suggestion="use unit 'standardlstm' (TF's LSTMCell) for an LSTM with peepholes")
        bias = given.get("forget_bias", 0.0)
        if isinstance(bias, bool) or not isinstance(bias, NUMBER):
            raise self.error(f"'unit_opts' forget_bias must be a number, not {bias!r}", option="unit_opts",
                             suggestion="e.g. 'unit_opts': {'forget_bias': 1.0}")
        if "activation" in given:
            check_activation(given["activation"], self.name, option="unit_opts")
        for key in ("zoneout_factor_cell", "zoneout_factor_output"):
            value = given.get(key, 0.0)
            if isinstance(value, bool) or not isinstance(value, NUMBER) or not 0 <= value <= 1:
                raise self.error(f"'unit_opts' {key} must be a number in [0, 1], not {value!r}", option="unit_opts",
                                 suggestion=f"e.g. 'unit_opts': {{'{key}': 0.1}}")
        depth = given.get("depth", 1)
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
            raise self.error(f"'unit_opts' depth must be a positive int, not {depth!r}", option="unit_opts",
                             suggestion="e.g. 'unit_opts': {'depth': 5} (RETURNN's default)")

    def unit_params(self, kind: UnitKind, unit_opts: Dict[str, Any], in_dim: Dim, out_dim: Dim, forward: Any,
                    recurrent: Any, bias: Any) -> Dict[str, ParamSpec]:
        """The parameters (None inits: the defaults), under "rec/" as RETURNN's cell scope names them ("rec/W",
        "rec/W_re", "rec/b"; rhn: "rec/W", "rec/b" and "rec/depth_<l>/W", one per depth layer)."""
        gates = self.new_dim(kind.blocks * out_dim.size, FEATURE, f"{self.name}:{kind.name}-gates")
        forward = "glorot_uniform" if forward is None else forward
        recurrent = forward if recurrent is None else recurrent
        cell = self.tf_lstm_cell_scope()
        if cell is not None:  # one kernel for input and recurrent weights: the forward init for all of it
            rows = self.new_dim(in_dim.size + out_dim.size, FEATURE, f"{self.name}:{cell}-in+out")
            peepholes = {unit_param(f"{cell}/w_{gate}_diag"): ParamSpec((out_dim,), forward)
                         for gate in PEEPHOLE_GATES} if unit_opts.get("use_peepholes") else {}
            return {unit_param(f"{cell}/kernel"): ParamSpec((rows, gates), forward),
                    unit_param(f"{cell}/bias"): ParamSpec((gates,), 0.0 if bias is None else bias), **peepholes}
        specs = {unit_param("W"): ParamSpec((in_dim, gates), forward),
                 unit_param("b"): ParamSpec((gates,), 0.0 if bias is None else bias)}
        if kind is RHN:
            return {**specs, **{unit_param(f"depth_{i}/W"): ParamSpec((out_dim, gates), recurrent)
                                for i in range(unit_opts["depth"])}}
        return {**specs, unit_param("W_re"): ParamSpec((out_dim, gates), recurrent)}

    def tf_lstm_cell_scope(self):
        """The TF cell's variable scope if RETURNN runs this unit as a TF LSTM cell (TF_LSTM_CELL_SCOPES), else
        None."""
        return TF_LSTM_CELL_SCOPES.get(unit_key(self.opts["unit"]))

    def _tf_lstm_cell_weights(self, inputs, in_dim: Dim, out_dim: Dim) -> Dict[str, Any]:
        """The TF cell's kernel and bias as the weights of `rf.lstm` (rows cut into W and W_re, blocks reordered)."""
        cell = self.tf_lstm_cell_scope()
        kernel, bias = inputs.param(unit_param(f"{cell}/kernel")), inputs.param(unit_param(f"{cell}/bias"))
        (gates,) = bias.dims
        (rows,) = [d for d in kernel.dims if d != gates]
        ff, rec = rf.split(kernel, axis=rows, out_dims=[in_dim, out_dim])
        ff, rec, bias = (lstm_gates_reordered(w, gate_dim=gates, order=TF_LSTM_GATE_ORDER) for w in (ff, rec, bias))
        return {"ff_weight": ff, "rec_weight": rec, "bias": bias}

    def _unit_args(self, inputs, kind: UnitKind, unit_opts: Dict[str, Any], in_dim: Dim, out_dim: Dim):
        args = {"in_dim": in_dim, "out_dim": out_dim}
        if self.tf_lstm_cell_scope() is not None:
            args.update(self._tf_lstm_cell_weights(inputs, in_dim, out_dim))
        else:
            args.update(ff_weight=inputs.param(unit_param("W")), bias=inputs.param(unit_param("b")))
        if "rec_weight" in args:
            pass
        elif kind is RHN:
            args["depth_weights"] = [inputs.param(unit_param(f"depth_{i}/W")) for i in range(unit_opts["depth"])]
        else:
            args["rec_weight"] = inputs.param(unit_param("W_re"))
        if kind in (LSTM, ZONEOUT_LSTM):
            args["forget_bias"] = unit_opts["forget_bias"]
        if unit_opts.get("use_peepholes"):
            cell = self.tf_lstm_cell_scope()
            args["peepholes"] = tuple(inputs.param(unit_param(f"{cell}/w_{gate}_diag")) for gate in PEEPHOLE_GATES)
        if kind is ZONEOUT_LSTM:
            args.update(zoneout_cell=unit_opts["zoneout_factor_cell"],
                        zoneout_output=unit_opts["zoneout_factor_output"])
        if kind is RNN:
            args["activation"] = lambda h: activate(h, unit_opts["activation"])
        return args

    def run_unit(self, inputs, kind: UnitKind, unit_opts: Dict[str, Any], x, time: Dim, in_dim: Dim, out_dim: Dim,
                 state: Dict[str, Any]):
        """The unit over `time` from `state`: (output, the final state of each sequence)."""
        args = {**self._unit_args(inputs, kind, unit_opts, in_dim, out_dim), "spatial_dim": time}
        if kind in (LSTM, ZONEOUT_LSTM):
            unit = rf.zoneout_lstm if kind is ZONEOUT_LSTM else peephole_lstm if "peepholes" in args else rf.lstm
            y, (h, c) = unit(x, state_h=state["h"], state_c=state["c"], **args)
            return y, {"c": c, "h": h}
        y, h = {"gru": rf.gru, "rnn": rf.rnn, "rhn": rf.rhn}[kind.name](x, state=state["h"], **args)
        return y, {"h": h}

    def step_unit(self, inputs, kind: UnitKind, unit_opts: Dict[str, Any], x, in_dim: Dim, out_dim: Dim,
                  state: Dict[str, Any]):
        """One step of the unit: (output, the new state)."""
        args = self._unit_args(inputs, kind, unit_opts, in_dim, out_dim)
        if kind is LSTM:
            h, c = rf.lstm_step(x, state_h=state["h"], state_c=state["c"], **args)
            return h, {"c": c, "h": h}
        if kind is ZONEOUT_LSTM:
            y, (h, c) = rf.zoneout_lstm_step(x, state_h=state["h"], state_c=state["c"], **args)
            return y, {"c": c, "h": h}
        h = {"gru": rf.gru_step, "rnn": rf.rnn_step, "rhn": rf.rhn_step}[kind.name](x, state=state["h"], **args)
        return h, {"h": h}
