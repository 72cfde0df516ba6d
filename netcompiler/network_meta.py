"""RETURNN's `#`-prefixed meta entries of a network dict (`"#config": {...}`, `"#repetition": 2`, ...).

They are no layers: RETURNN skips every name starting with "#" when it builds a network (nested ones too).
Their meaning here, for a network given as `network` (one network for every epoch):

* `#config`: settings that replace the config's for training, as RETURNN applies them when it sets up the
  network (each key must be a setting the config has, as RETURNN asserts); a notice names each change.
  When the network changes per epoch (`pretrain`, `get_network`), each epoch's `#config` applies to that epoch
  only (`engine/epoch_networks.py`), not here.
* `#trainable`: True changes nothing; False (train without updating any parameter) is refused.
* `#repetition` (epochs of a pretraining step) and `#copy_param_mode` (how parameters come over from the
  previous epoch's network): read by `network_schedule.py` when the network changes per epoch; for one network
  they change nothing: a notice says so.
* `#finish_all_data`: read only by Horovod training: a notice.
* any other `#` entry (`#info`, `#name`, ...): RETURNN ignores it; a notice says that it is ignored here too.
"""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

from .errors import ConfigError
from .network_schedule import schedule_is_set

_PER_EPOCH_ONLY = {
    "#repetition": "how many epochs a pretraining step lasts",
    "#copy_param_mode": "how parameters are carried over when the network changes between epochs",
}


def is_meta_entry(name: Any) -> bool:
    return isinstance(name, str) and name.startswith("#")


def split_meta_entries(net_dict: Dict[str, Any]) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """(the layers, the `#` entries) of a network dict; the dict itself is returned when it has no `#` entry."""
    meta = {name: value for name, value in net_dict.items() if is_meta_entry(name)}
    if not meta:
        return net_dict, meta
    return {name: d for name, d in net_dict.items() if not is_meta_entry(name)}, meta


def meta_notices(meta: Dict[str, Any], where: str = "network", top_level: bool = True) -> List[str]:
    """A notice per `#` entry that changes nothing here; a ConfigError for `#trainable: False`. RETURNN reads
    `#config` and `#trainable` of the top-level network only."""
    notices = []
    for name, value in meta.items():
        if name in ("#config", "#trainable") and not top_level:
            notices.append(f"{where} entry '{name}': RETURNN reads it only in the top-level network; ignored")
            continue
        if name == "#config":
            continue  # applied to the settings (`apply_network_config`), which notes each change
        if name == "#trainable":
            if value is False or value == 0:
                raise ConfigError("'#trainable': False (train without updating parameters) is not supported",
                                  subject=f"{where} entry '#trainable'",
                                  suggestion="remove it, or use --task eval to score a model without training")
            continue
        if name in _PER_EPOCH_ONLY:
            notices.append(f"{where} entry '{name}' ({_PER_EPOCH_ONLY[name]}) matters only when the network "
                           f"changes per epoch (pretrain, get_network); this config's network is the same in "
                           f"every epoch, so it changes nothing -- ignored")
        elif name == "#finish_all_data":
            notices.append(f"{where} entry '#finish_all_data' is read only by Horovod training; ignored")
        else:
            notices.append(f"{where} entry '{name}' is no layer (a '#' entry); RETURNN ignores it, so does "
                           f"netcompiler")
    return notices


def apply_network_config(values: Dict[str, Any]) -> List[str]:
    """Applies the top-level network's `#config` to the settings `values` in place (as RETURNN does when it
    sets up the network); returns a notice per changed setting."""
    net = values.get("network")
    if not isinstance(net, dict) or "#config" not in net or schedule_is_set(values):
        return []  # with a network per epoch, each epoch's '#config' applies to it (engine/epoch_networks.py)
    updates = net["#config"]
    if not isinstance(updates, dict) or not all(isinstance(key, str) for key in updates):
        raise ConfigError(f"must be a dict of setting name -> value, not {updates!r}",
                          subject="network entry '#config'", suggestion="e.g. '#config': {'batch_size': 1000}")
    notices = []
    for key, value in updates.items():
        if key in ("learning_rate", "learning_rates"):
            raise ConfigError(f"it sets '{key}', which RETURNN applies to the current epoch's learning rate only "
                              f"(through its learning-rate control); netcompiler does not do that",
                              subject="network entry '#config'",
                              suggestion=f"set {key} in the config itself (or 'learning_rates' per epoch)")
        if key not in values:
            raise ConfigError(f"it sets '{key}', which the config does not define (RETURNN requires that too)",
                              subject="network entry '#config'",
                              suggestion=f"define {key} = ... in the config, or remove it from '#config'")
        notices.append(f"network entry '#config' sets '{key}' to {value!r} (the config has {values[key]!r}), "
                       f"as RETURNN does")
        values[key] = value
    return notices
