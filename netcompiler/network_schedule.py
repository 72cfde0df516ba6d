"""Which network dict each epoch trains, for configs whose network changes per epoch (pure Python, no framework).

RETURNN's two ways, and their precedence:

* `pretrain` ("default", True, or a dict of options: `repetitions`, `construction_algo`, `copy_param_mode`,
  `copy_output_layer`, `output_layers`, `input_layers`; see `pretrain_construction.py`): the first epochs train
  the growing networks of the construction, one step per epoch times its repetitions; these epochs are the
  *pretraining epochs* (the full network's own repetitions included, as in RETURNN). Later epochs train `network`.
  RETURNN's older keys `pretrain_repetitions`, `pretrain_construction_algo`, `pretrain_copy_output_layer` fill in
  options the dict does not give.
* `get_network(epoch, **kwargs)`: a config function returning the network dict of that epoch (called with
  `epoch=` only, as RETURNN calls it). Pretraining epochs, if any, come first.

A network dict of an epoch may hold `#` entries: `#config` (settings for that epoch, see `EpochNetwork`),
`#copy_param_mode` (how the parameters of the previous epoch's network are carried over into this one:
"ifpossible" (by name, where the shape matches; the default), "subset" (a parameter whose shape grew gets the old
values in its leading part), "reset" (nothing is carried over)) and, in pretraining, `#repetition` (epochs of that
step). A value of a network dict may be `WrapEpochValue(func)` (RETURNN's `returnn.pretrain.WrapEpochValue`):
each pretraining epoch's dict has `func(epoch=N)` there; epochs after pretraining the value of the last
pretraining epoch, as in RETURNN; a get_network dict has the value of its own epoch.
"""

from __future__ import annotations

import copy
from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional

from .errors import ConfigError
from .pretrain_construction import NetDict, expand_repetitions, layer_names, pretrain_steps

COPY_PARAM_MODES = (None, "ifpossible", "subset", "reset")
PRETRAIN_OPTIONS = ("repetitions", "construction_algo", "copy_param_mode", "copy_output_layer", "output_layers",
                    "input_layers", "greedy")
_OLD_KEYS = {"pretrain_repetitions": "repetitions", "pretrain_construction_algo": "construction_algo",
             "pretrain_copy_output_layer": "copy_output_layer", "pretrain_greedy": "greedy"}


class WrapEpochValue:
    """A value in a network dict that depends on the epoch: `func(epoch=N)` (see the module docstring)."""

    def __init__(self, func: Callable[..., Any]):
        self.func = func

    def get_value(self, epoch: int) -> Any:
        return self.func(epoch=epoch)


def resolve_epoch_values(value: Any, epoch: int) -> Any:
    """`value` (a network dict, a layer's options, ...) with each WrapEpochValue replaced by its value for `epoch`."""
    if isinstance(value, WrapEpochValue):
        return value.get_value(epoch)
    if isinstance(value, dict):
        return {key: resolve_epoch_values(item, epoch) for key, item in value.items()}
    if isinstance(value, (list, tuple)) and any(isinstance(item, (WrapEpochValue, dict, list, tuple))
                                                 for item in value):
        return type(value)(resolve_epoch_values(item, epoch) for item in value)
    return value


class EpochNetwork(NamedTuple):
    """What one epoch trains: its network dict (layers and `#` entries other than the three below), the settings
    its `#config` overrides, how parameters come over from the previous epoch's network, and the layers whose
    parameters do not come over (pretraining's output layers with `copy_output_layer` False)."""

    epoch: int
    net_dict: NetDict
    config_overrides: Dict[str, Any]
    copy_param_mode: Optional[str]
    reset_layers: List[str]
    is_pretrain: bool


def _meta_stripped(net: NetDict) -> NetDict:
    return {name: value for name, value in net.items() if name not in ("#config", "#copy_param_mode", "#repetition")}


def _check_copy_param_mode(value: Any, subject: str) -> Optional[str]:
    if value not in COPY_PARAM_MODES or isinstance(value, bool):
        raise ConfigError(f"expected 'ifpossible', 'subset' or 'reset', got {value!r}", subject=subject,
                          suggestion="leave it out for 'ifpossible' (parameters carried over by name)")
    return value


def schedule_is_set(values: Mapping[str, Any]) -> bool:
    """Whether the config's network changes per epoch (`pretrain` set to something that pretrains, or
    `get_network`)."""
    return values.get("get_network") is not None or _pretrain_setting(values) is not None


def _pretrain_setting(values: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    """The pretrain options (a dict), or None without pretraining."""
    value = values.get("pretrain")
    if value is None or value is False or value == "" or value == {}:
        return None
    if value == "default" or value is True:
        options: Dict[str, Any] = {}
    elif isinstance(value, dict):
        options = dict(value)
    else:
        raise ConfigError(f"expected 'default' or a dict of options, got {value!r}", subject="config key 'pretrain'",
                          suggestion="pretrain = 'default', or {'repetitions': 2, 'construction_algo': "
                                     "'from_output'}")
    for key, option in _OLD_KEYS.items():
        if values.get(key) is not None:
            options.setdefault(option, values[key])
    return options


class NetworkSchedule:
    """The network dict of every epoch (see the module docstring): `for_epoch(n)`."""

    def __init__(self, network: Optional[NetDict] = None, pretrain: Optional[Dict[str, Any]] = None,
                 get_network: Optional[Callable[..., Any]] = None):
        self.network = network
        self.get_network = get_network
        self.pretrain_epochs: List[NetDict] = []
        self.copy_param_mode: Optional[str] = None
        self.copy_output_layer: Any = "ifpossible"
        self.output_layers: List[str] = ["output"]
        if get_network is not None and not callable(get_network):
            raise ConfigError(f"expected a function get_network(epoch, **kwargs) -> network dict, got "
                              f"{type(get_network).__name__}", subject="config key 'get_network'",
                              suggestion="def get_network(epoch, **kwargs): return {...}")
        if pretrain is not None:
            self._set_up_pretrain(pretrain)

    @classmethod
    def from_config(cls, values: Mapping[str, Any]) -> Optional["NetworkSchedule"]:
        """The config's schedule, or None when its network is the same in every epoch."""
        if not schedule_is_set(values):
            return None
        pretrain = _pretrain_setting(values)
        network = values.get("network")
        if pretrain is not None and not isinstance(network, dict):
            raise ConfigError("pretraining grows the network towards the config's 'network', which is not set",
                              subject="config key 'pretrain'",
                              suggestion="define network = {...} (the full network)")
        return cls(network if isinstance(network, dict) else None, pretrain, values.get("get_network"))

    def _set_up_pretrain(self, options: Dict[str, Any]) -> None:
        unknown = sorted(set(options) - set(PRETRAIN_OPTIONS))
        if unknown:
            raise ConfigError(f"unknown option {unknown[0]!r}", subject="config key 'pretrain'",
                              suggestion=f"the options are {', '.join(PRETRAIN_OPTIONS)}")
        if options.get("greedy"):
            raise ConfigError("greedy pretraining (train only the newest layers) is not supported (RETURNN dropped "
                              "it too)", subject="config key 'pretrain' option 'greedy'", suggestion="remove it")
        mode = _check_copy_param_mode(options.get("copy_param_mode"), "config key 'pretrain' option 'copy_param_mode'")
        output = options.get("copy_output_layer", mode if mode is not None else "ifpossible")
        if output not in (True, False, None, "ifpossible", "subset", "reset"):
            raise ConfigError(f"expected True, False, 'ifpossible', 'subset' or 'reset', got {output!r}",
                              subject="config key 'pretrain' option 'copy_output_layer'",
                              suggestion="leave it out to follow copy_param_mode")
        self.copy_param_mode = mode
        self.copy_output_layer = False if output == "reset" else ("ifpossible" if output is None else output)
        self.output_layers = _names(options.get("output_layers", ("output",)), "output_layers")
        steps = pretrain_steps(self.network, options.get("construction_algo", "from_output"), self.output_layers,
                               _names(options.get("input_layers", ("data",)), "input_layers"))
        self.pretrain_epochs = [resolve_epoch_values(net, epoch) for epoch, net in
                                enumerate(expand_repetitions(steps, options.get("repetitions")), start=1)]

    # --- queries -------------------------------------------------------------------------
    @property
    def num_pretrain_epochs(self) -> int:
        return len(self.pretrain_epochs)

    def is_pretrain_epoch(self, epoch: int) -> bool:
        return epoch <= self.num_pretrain_epochs

    def net_dict_for_epoch(self, epoch: int) -> NetDict:
        """The network dict epoch `epoch` (from 1) trains, `#` entries included."""
        if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 1:
            raise ConfigError(f"epochs count from 1, got {epoch!r}", subject="epoch",
                              suggestion="give an epoch >= 1")
        if self.is_pretrain_epoch(epoch):
            return self.pretrain_epochs[epoch - 1]
        if self.get_network is not None:
            net = self.get_network(epoch=epoch)
            if not isinstance(net, dict):
                raise ConfigError(f"get_network(epoch={epoch}) returned {type(net).__name__}, not a network dict",
                                  subject="config key 'get_network'",
                                  suggestion="return a dict of layer name -> layer options")
            return resolve_epoch_values(net, epoch)
        return resolve_epoch_values(self.network, self.num_pretrain_epochs or epoch)

    def for_epoch(self, epoch: int) -> EpochNetwork:
        """Everything epoch `epoch` needs to know about its network (see `EpochNetwork`)."""
        net = self.net_dict_for_epoch(epoch)
        pretrain = self.is_pretrain_epoch(epoch)
        overrides = net.get("#config", {})
        if not isinstance(overrides, dict) or not all(isinstance(key, str) for key in overrides):
            raise ConfigError(f"must be a dict of setting name -> value, not {overrides!r}",
                              subject=f"network entry '#config' (epoch {epoch})",
                              suggestion="e.g. '#config': {'batch_size': 1000}")
        mode = net.get("#copy_param_mode", self.copy_param_mode if pretrain else None)
        mode = _check_copy_param_mode(mode, f"network entry '#copy_param_mode' (epoch {epoch})")
        stripped = _meta_stripped(net)
        reset = []
        if pretrain and not self.copy_output_layer:
            reset = [name for name in sorted(stripped) if isinstance(stripped[name], dict) and (
                name in self.output_layers or stripped[name].get("class") == "softmax" or "target" in stripped[name])]
        return EpochNetwork(epoch, copy.deepcopy(stripped), dict(overrides), mode, reset, pretrain)

    def describe(self) -> str:
        parts = []
        if self.pretrain_epochs:
            parts.append(f"pretraining: {self.num_pretrain_epochs} epochs ("
                         + ", ".join(f"{len(layer_names(net))} layers" for net in self.pretrain_epochs) + ")")
        if self.get_network is not None:
            parts.append(("later" if self.pretrain_epochs else "every") + " epoch: get_network(epoch)")
        return "; ".join(parts) or "one network"


def _names(value: Any, option: str) -> List[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not value or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"expected a list of layer names, got {value!r}",
                          subject=f"config key 'pretrain' option '{option}'",
                          suggestion="give one or more layer names, e.g. ['output'] or ['data']")
    return list(value)
