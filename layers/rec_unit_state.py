"""The state of a built-in recurrent unit: its parts ("c" and "h" for the LSTMs, else "h"), where it starts (option
`initial_state`: zeros, ones or a trainable vector per part) and where it ends (recorded per emission context for
`get_last_hidden_state`). Shared by `rec` and `rnn_cell`."""

import weakref
from typing import Any, Dict, List, Tuple

from netcompiler import frontend as rf
from netcompiler.layer_base import ParamSpec
from netcompiler.tensor import Dim

from .rec_units import LSTM, ZONEOUT_LSTM, UnitKind, unit_param

# The values of `initial_state` (for the whole state, or per part): zeros, ones, or a trainable vector.
STATE_VALUES = (None, 0, 1, "zeros", "ones", "var")

_FINAL_STATES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
"""EmitContext -> {id(layer): the layer's state after its last step} (read by `get_last_hidden_state`)."""


def record_final_state(inputs, state: Dict[str, Any]) -> None:
    """Records the state of `inputs.layer` after its last step (in a loop step: after this step)."""
    _FINAL_STATES.setdefault(inputs.ctx, {})[id(inputs.layer)] = state


def final_state_of(inputs, layer) -> Dict[str, Any]:
    """The state `layer` recorded in the context `inputs` sees it in (emitting it first if needed)."""
    inputs.value(layer)
    ctx = inputs.ctx
    while ctx is not None:
        found = _FINAL_STATES.get(ctx, {}).get(id(layer))
        if found is not None:
            return found
        ctx = ctx.parent
    raise inputs.layer.error(f"'from': layer '{layer.name}' has no hidden state here (netcompiler bug)", option="from")


class UnitState:
    """The state of a built-in unit, for a layer with options `unit` and `initial_state`: its parts, the trainable
    initial parts' parameters, and its value before the first step."""

    @staticmethod
    def state_keys(kind: UnitKind) -> Tuple[str, ...]:
        """The parts of the state, in RETURNN's order (LSTMStateTuple: c, then h)."""
        return ("c", "h") if kind in (LSTM, ZONEOUT_LSTM) else ("h",)

    # --- the initial state (option `initial_state`) ------------------------------------------------------
    def _initial_state_specs(self, kind: UnitKind) -> Dict[str, Any]:
        """State key -> None/0/1/"zeros"/"ones"/"var", from `initial_state` (one value for every part, a dict by
        key, or a list in the order of `state_keys`)."""
        keys, given = self.state_keys(kind), self.opts["initial_state"]
        if isinstance(given, dict):
            if set(given) != set(keys):
                raise self.error(f"'initial_state' {given!r} must have exactly the keys {list(keys)} (the state of "
                                 f"unit '{self.opts['unit']}')", option="initial_state",
                                 suggestion="e.g. " + repr({key: "zeros" for key in keys}))
            specs = dict(given)
        elif isinstance(given, (list, tuple)):
            if len(given) != len(keys):
                raise self.error(f"'initial_state' {given!r} must have {len(keys)} entries ({', '.join(keys)})",
                                 option="initial_state", suggestion="e.g. " + repr(["zeros"] * len(keys))
                                 + ", or one value such as 'zeros' for every part")
            specs = dict(zip(keys, given))
        else:
            specs = {key: given for key in keys}
        for key, value in specs.items():
            if isinstance(value, bool) or value not in STATE_VALUES:
                known = "a layer" if isinstance(value, str) and value != "keep_over_epoch" else repr(value)
                raise self.error(f"'initial_state' {known} (state part '{key}') is not supported by netcompiler yet",
                                 option="initial_state",
                                 suggestion="use None/'zeros', 'ones' or 'var' (a trainable initial state)")
        return specs

    def _initial_var_name(self, kind: UnitKind, key: str) -> str:
        """The parameter of a trainable initial state part, as RETURNN names it: "rec/initial_c" and
        "rec/initial_h" for the LSTMs, "rec/initial_var" for a single-part state."""
        return unit_param(f"initial_{key}" if len(self.state_keys(kind)) > 1 else "initial_var")

    def initial_state_params(self, kind: UnitKind, out_dim: Dim) -> Dict[str, ParamSpec]:
        """The trainable initial state parts ("var"): a vector [n] each, starting at zero (as in RETURNN)."""
        return {self._initial_var_name(kind, key): ParamSpec((out_dim,), 0.0)
                for key, value in self._initial_state_specs(kind).items() if value == "var"}

    def _initial_state(self, inputs, kind: UnitKind, dims: List[Dim]) -> Dict[str, Any]:
        """The state before the first step, each part with `dims` (the same for every sequence)."""
        zeros = rf.zeros(dims, dtype=self.output.dtype)
        state = {}
        for key, value in self._initial_state_specs(kind).items():
            if value == "var":
                state[key] = zeros + inputs.param(self._initial_var_name(kind, key))
            else:
                state[key] = zeros + 1.0 if value in (1, "ones") else zeros
        return state
