"""Training a network that changes per epoch (`pretrain`, `get_network`; which dict each epoch trains is
`network_schedule.NetworkSchedule`): the session's model is rebuilt when an epoch's network dict differs from the
one trained before, as RETURNN rebuilds its network.

* Parameters come over from the old network by name (`carry_params`): with `#copy_param_mode` (or pretrain's
  `copy_param_mode`) "ifpossible" (the default) those whose shape is unchanged; "subset" also those whose shape
  changed but not their rank (the old values fill the leading part of each axis, the rest keeps its initial
  values); "reset" none. Parameters new in the network get their initializers. Pretraining's output layers are
  not carried over with `copy_output_layer` False.
* The optimizer starts afresh with the new network (its moments belonged to the old parameters; RETURNN also
  makes a new one), the step count goes on.
* Resuming at epoch k builds the network of epoch k-1 (the one its checkpoint holds), restores it and then
  changes to epoch k's network as an uninterrupted run would.
* An epoch's `#config` may set `learning_rate` (that epoch's rate; in pretraining only with
  `use_learning_rate_control_always`, as in RETURNN) and the batch settings `batch_size`, `max_seqs`,
  `max_seq_length`, `chunking`; other settings are refused with what to do instead.
* Learning rates in pretraining: each pretraining epoch trains with `pretrain_learning_rate` (default
  `learning_rate`), the first epoch after it with `learning_rate`, later ones as the learning-rate control
  decides; with `use_learning_rate_control_always` the control decides every epoch (RETURNN's rules).
"""

from __future__ import annotations

import sys
from typing import Dict, Optional, Tuple

import numpy as np

from ..config import Config
from ..errors import ConfigError
from ..limits import is_int
from ..network_schedule import EpochNetwork, NetworkSchedule

PER_EPOCH_SETTINGS = ("learning_rate", "batch_size", "max_seqs", "max_seq_length", "chunking")
"""The settings an epoch's `#config` may change."""


def epoch_config(config: Config, epoch_network: EpochNetwork) -> Config:
    """The config of one epoch: its network dict, and the settings its `#config` changes (checked)."""
    overrides = epoch_network.config_overrides
    for key in overrides:
        where = f"network entry '#config' (epoch {epoch_network.epoch})"
        if key not in PER_EPOCH_SETTINGS:
            raise ConfigError(f"it sets '{key}', which netcompiler cannot change between epochs (only "
                              f"{', '.join(PER_EPOCH_SETTINGS)})", subject=where,
                              suggestion=f"set {key} in the config itself for every epoch")
        if key != "learning_rate" and key not in config.values:
            raise ConfigError(f"it sets '{key}', which the config does not define (RETURNN requires that too)",
                              subject=where, suggestion=f"define {key} = ... in the config")
    values = dict(config.values, network=epoch_network.net_dict)
    values.update({key: value for key, value in overrides.items() if key != "learning_rate"})
    return config.with_values(values)


def network_epoch_for_task(config: Config, schedule: NetworkSchedule, task: str, model_prefix: str) -> int:
    """The epoch whose network a run starts with: in training, the epoch of the checkpoint it resumes from
    (else 1); otherwise the epoch of the checkpoint it loads (`load` named `<model>.NNN`, `load_epoch`, the newest),
    else the last epoch (`final_epoch`)."""
    from .checkpoint_files import complete_checkpoints  # (not .checkpoints: no TensorFlow import for dump-net)
    from .start_epoch import start_epoch_setting

    newest = max((epoch for marker in (".index", ".pt") for epoch, _ in complete_checkpoints(model_prefix, marker)),
                 default=None)
    if task == "train":
        start = start_epoch_setting(config.get("start_epoch"))
        return max(start - 1, 1) if start is not None else (newest or 1)
    load = config.get("load")  # before load_epoch, as the session loads it (session.py: `load` wins)
    if isinstance(load, str) and load:
        suffix = load.rsplit(".", 2)
        digits = [part for part in suffix[1:] if part.isdigit()]
        return int(digits[0]) if digits else final_epoch(config, schedule)
    load_epoch = config.get("load_epoch")
    if is_int(load_epoch) and load_epoch > 0:
        return int(load_epoch)
    return newest or final_epoch(config, schedule)


def final_epoch(config: Config, schedule: NetworkSchedule) -> int:
    """The epoch whose network is "the final one": `num_epochs` with get_network, else the first after
    pretraining (the config's `network`)."""
    if schedule.get_network is not None:
        num_epochs = config.get("num_epochs", 5)
        return max(num_epochs, 1) if isinstance(num_epochs, int) else 1
    return schedule.num_pretrain_epochs + 1


def epoch_network_config(config: Config, schedule: NetworkSchedule,
                         epoch: Optional[int] = None) -> Tuple[Config, EpochNetwork]:
    """The config of epoch `epoch`'s network (None: the final one, `final_epoch`) and that epoch's EpochNetwork."""
    epoch_network = schedule.for_epoch(final_epoch(config, schedule) if epoch is None else epoch)
    return epoch_config(config, epoch_network), epoch_network


def final_config(config: Config) -> Config:
    """The config of the final epoch's network (`final_epoch`) when the network changes per epoch, else `config`."""
    schedule = NetworkSchedule.from_config(config.values)
    return config if schedule is None else epoch_network_config(config, schedule)[0]


def carry_params(old_model, new_model, epoch_network: EpochNetwork) -> Dict[str, int]:
    """Sets the parameters of `new_model` from those of `old_model` with the same name (see the module
    docstring); returns how many were carried over, partly carried over ("subset") and left at their initial
    values."""
    mode = epoch_network.copy_param_mode or "ifpossible"
    reset_layers = set(epoch_network.reset_layers)
    backend = new_model.backend
    owner = {full: layer.name.split("/", 1)[0] for full, layer, _spec in new_model.network.all_params()}
    counts = {"carried": 0, "subset": 0, "initial": 0}
    for name, param in new_model.params.items():
        old = old_model.params.get(name)
        if old is None or mode == "reset" or owner.get(name) in reset_layers:
            counts["initial"] += 1
            continue
        values = np.asarray(old_model.backend.to_numpy(old))
        current = np.array(backend.to_numpy(param))
        if values.shape == current.shape:
            backend.assign_raw(param, values)
            counts["carried"] += 1
        elif mode == "subset" and values.ndim == current.ndim:
            corner = tuple(slice(0, min(a, b)) for a, b in zip(values.shape, current.shape))
            current[corner] = values[corner]
            backend.assign_raw(param, current)
            counts["subset"] += 1
        else:
            print(f"notice: epoch {epoch_network.epoch}: parameter '{name}' changed its shape "
                  f"{list(values.shape)} -> {list(current.shape)}; it starts from its initial values "
                  f"(copy_param_mode 'subset' would keep the old values in its leading part)", file=sys.stderr)
            counts["initial"] += 1
    return counts


class EpochNetworks:
    """The per-epoch networks of one training run: builds each epoch's model, carries parameters over, gives
    each epoch's settings and learning rate (see the module docstring)."""

    def __init__(self, config: Config, schedule: NetworkSchedule, log=sys.stdout):
        self.config = config
        self.schedule = schedule
        self.log = log
        self.epoch_network: Optional[EpochNetwork] = None
        """What the current model was built from."""
        self.values = config.values
        """The settings of the current epoch (the config's, with its `#config`)."""

    @classmethod
    def from_config(cls, config: Config, log=sys.stdout) -> Optional["EpochNetworks"]:
        schedule = NetworkSchedule.from_config(config.values)
        return None if schedule is None else cls(config, schedule, log)

    def build_model(self, epoch: int, seed: int, backend: str, search: bool = False):
        """(the model of epoch `epoch`, its EpochNetwork)."""
        from ..emit.equal_layers import min_layers_setting
        from ..emit.model import CompiledNetwork
        from ..network import build_network

        epoch_network = self.schedule.for_epoch(epoch)
        network = build_network(epoch_config(self.config, epoch_network), search=search)
        return CompiledNetwork(network, seed=seed, backend=backend,
                               equal_layers_min=min_layers_setting(self.config.values)), epoch_network

    def start(self, session, epoch: int) -> None:
        """Makes the session's model the network of `epoch` (the epoch of the checkpoint training resumes from,
        or 1) before anything is built on it."""
        if not hasattr(session.model, "network"):
            raise ConfigError("pretrain and get_network change a layer-dict network per epoch; this config defines "
                              "its model with get_model", subject="config",
                              suggestion="remove pretrain/get_network, or build the model per epoch in get_model "
                                         "(it is called with epoch=)")
        epoch_network = self.schedule.for_epoch(epoch)
        if session.model.network.net_dict != epoch_network.net_dict:
            session.model, epoch_network = self.build_model(epoch, self._seed(), session.backend)
        self._enter(epoch_network)

    def change_for_epoch(self, session, epoch: int) -> bool:
        """Before training `epoch`: rebuilds the session's model if the epoch's network dict differs from the
        current one, carrying parameters over; returns whether it did (then the optimizer must be made anew)."""
        epoch_network = self.schedule.for_epoch(epoch)
        if epoch_network.net_dict == self.epoch_network.net_dict:
            self._enter(epoch_network)
            return False
        old = session.model
        session.model, epoch_network = self.build_model(epoch, self._seed(), session.backend)
        counts = carry_params(old, session.model, epoch_network)
        self._enter(epoch_network)
        kind = "pretraining " if epoch_network.is_pretrain else ""
        print(f"epoch {epoch}: new {kind}network ({len(session.model.network.layers)} layers, "
              f"{len(session.model.params)} parameters: {counts['carried']} carried over"
              + (f", {counts['subset']} partly" if counts["subset"] else "")
              + f", {counts['initial']} initial)", file=self.log)
        return True

    def _enter(self, epoch_network: EpochNetwork) -> None:
        self.epoch_network = epoch_network
        self.values = epoch_config(self.config, epoch_network).values

    def _seed(self) -> int:
        return self.config.get("random_seed", 42)

    # --- learning rate ---------------------------------------------------------------------
    def prepare_learning_rate(self, control, epoch: int) -> None:
        """Puts RETURNN's rate for `epoch` into the learning-rate control's history before the control is asked
        (nothing for an epoch the history already has a rate for, e.g. on resume)."""
        from .learning_rate_history import EpochRecord

        always = bool(self.config.get("use_learning_rate_control_always", False))
        pretrain = self.schedule.is_pretrain_epoch(epoch)
        override = self.epoch_network.config_overrides.get("learning_rate")
        if override is not None and pretrain and not always:
            raise ConfigError(f"it sets the learning rate of pretraining epoch {epoch}, which RETURNN allows only "
                              f"with use_learning_rate_control_always = True",
                              subject=f"network entry '#config' (epoch {epoch})",
                              suggestion="set use_learning_rate_control_always = True, or use "
                                         "pretrain_learning_rate for all pretraining epochs")
        if override is not None:
            rate = override
        elif always or not self.schedule.num_pretrain_epochs or epoch > self.schedule.num_pretrain_epochs + 1:
            return  # the control decides
        elif pretrain:
            rate = self.config.get("pretrain_learning_rate", self.config.get("learning_rate", 1.0))
        else:
            rate = self.config.get("learning_rate", 1.0)
        record = control.epochs.get(epoch)
        if record is None:
            control.epochs[epoch] = EpochRecord(float(rate))
            control.save()
        elif override is not None and record.learning_rate != override:
            record.learning_rate = float(override)
            control.save()



def task_network_config(config: Config, task: str) -> Config:
    """The config whose network a compile-net task builds first: the config itself, or for a network that
    changes per epoch, the config of the epoch `network_epoch_for_task` names."""
    from .session import model_prefix_of

    schedule = NetworkSchedule.from_config(config.values)
    if schedule is None:
        return config
    epoch = network_epoch_for_task(config, schedule, task, model_prefix_of(config))
    return epoch_network_config(config, schedule, epoch)[0]
