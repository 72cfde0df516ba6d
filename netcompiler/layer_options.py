"""Layer option declarations: `Option` (default, accepted types, choices, how it names other layers), the type
check every option value goes through, and the options every layer accepts (`COMMON_OPTIONS`) or ignores."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional, Sequence, Tuple


REQUIRED = object()
"""Default of an option that must be given."""

NONE_TYPE = type(None)
NUMBER = (int, float)


@dataclass(frozen=True)
class Option:
    """The declaration of one layer option.

    `types` are the accepted Python types (empty: anything); `choices` the
    accepted values; `ref` says the value names other layers and how:
    "layer" (one name), "layers" (a name or a list of names), "layer_or_value"
    (a layer name or a constant), "layer_dict" (a dict whose string values are
    layer names), "network" (a nested network dict); `rate` that a number
    must be a probability in [0, 1) (a dropout rate).
    """

    default: Any = REQUIRED
    types: Tuple[type, ...] = ()
    choices: Tuple[Any, ...] = ()
    ref: Optional[str] = None
    doc: str = ""
    rate: bool = False

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


def matches_types(value: Any, types: Tuple[type, ...]) -> bool:
    """isinstance, except that bool is no int, and an int is a fine float."""
    if not types:
        return True
    if isinstance(value, bool):
        return bool in types
    if isinstance(value, int) and float in types:
        return True
    return isinstance(value, types)


def type_names(types: Sequence[type]) -> str:
    names = ["None" if t is NONE_TYPE else t.__name__ for t in types]
    return " or ".join(names)



# Options every layer accepts.
COMMON_OPTIONS: Dict[str, Option] = {
    "class": Option(types=(str,), doc="the layer class"),
    "from": Option("data", (str, list, tuple), ref="layers", doc="input layer(s)"),
    "n_out": Option(None, (int, NONE_TYPE), doc="output feature size (checked, or defines it)"),
    "out_type": Option(None, (dict, NONE_TYPE), doc="expected output template fields"),
    "loss": Option(None, (str, NONE_TYPE), doc="loss on this layer's output"),
    "target": Option(None, (str, NONE_TYPE), doc="target of the loss (extern data key or 'layer:NAME')"),
    "loss_scale": Option(1.0, NUMBER),
    "loss_opts": Option(None, (dict, NONE_TYPE)),
    "is_output_layer": Option(False, (bool,)),
    "initial_output": Option(None, (str, int, float, NONE_TYPE),
                             doc="inside a rec unit dict: what 'prev:' of this layer is at the first step"),
    "trainable": Option(True, (bool,)),
    "dropout": Option(0.0, NUMBER, doc="dropout rate on the (concatenated) input", rate=True),
    "dropout_noise_shape": Option(None, (dict, list, tuple, NONE_TYPE)),
    "dropout_on_forward": Option(False, (bool,)),
    "dropout_axis": Option(None, (str, list, tuple, NONE_TYPE),
                           doc="the axes along which the dropout mask varies (shared along all others)"),
    "reuse_params": Option(None, (str, dict, NONE_TYPE),
                           doc="parameter sharing: a layer name, or {'map': {param: layer}} (see param_reuse)"),
    "L2": Option(None, (int, float, NONE_TYPE), doc="L2 weight decay on this layer's parameters"),
    "name_scope": Option(None, (str, NONE_TYPE), doc="where the parameters are named: 'x' -> 'x/W' instead of "
                                                      "'<layer>/W' (relative to the network), '/x' absolute"),
    "register_as_extern_data": Option(None, (str, NONE_TYPE),
                                      doc="top level only: 'data:KEY' and target KEY name this layer's output"),
}

# Options RETURNN layers accept that change nothing here (placement and graph hints).
IGNORED_OPTIONS = frozenset({
    "param_device", "collocate_with", "encapsulate", "control_dependencies_on_output",
    "only_on_search", "loss_only_on_non_search", "need_last",
})
