"""`FrontendModel`: a model written as Python code in the config (RETURNN's `get_model` / `train_step` /
`forward_step` format), as a step model that the trainers train (see `emit.model.StepModel`).

The config defines:

* `extern_data`: key -> options; RETURNN's `{"dims": (batch_dim, time_dim, in_dim), "dtype": "float32"}` and
  `{"dims": (batch_dim, time_dim), "sparse_dim": out_dim}` forms, or the older `{"dim": 9}` ones;
* `get_model(*, epoch, step, **kwargs)`: the model, called once: an `rf.Module` (its parameters are its
  `named_parameters()`) or, on PyTorch, a plain `torch.nn.Module` (its parameters by their state-dict names);
* `train_step(*, model, extern_data, **kwargs)`: marks losses with `rf.get_run_ctx().mark_as_loss(...)` or
  `Tensor.mark_as_loss(...)`; the Tensors of `extern_data` hold the batch, and the sizes of their dynamic
  dims are known in the run (`dim.dyn_size_ext.raw_tensor`);
* optionally `forward_step(*, model, extern_data, **kwargs)` and `model_outputs` (key -> options, as
  extern_data) for `--task forward`: it marks `rf.get_run_ctx().mark_as_default_output(...)`.

Each marked loss becomes one `LossValue`: its sum over the valid frames (padded frames of its dynamic dims do
not count), its frame count (or `custom_inv_norm_factor`), `scale` and `use_normalized_loss`, as RETURNN
reports and combines them; an `as_error` loss is reported as an error and not minimised.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Dict, List, Optional, Tuple

from .. import frontend as rf
from ..backends import get_backend
from ..emit.model import LossValue, batch_tensors, objective_of
from ..errors import ConfigError, SourceLocation
from ..extern_data import data_from_options, extern_data_from_config
from ..tensor import Data, Tensor, TensorDict

STEP_FUNCTIONS = ("get_model", "train_step", "forward_step")


def is_frontend_config(values: Dict[str, Any]) -> bool:
    """Whether a config defines its model as Python code (`get_model`) rather than a `network` dict."""
    return values.get("get_model") is not None


def check_frontend_config(config) -> None:
    """A ConfigError for a frontend config that cannot work: both `network` and `get_model` (which one would run
    is ambiguous: refused), `get_model` / `train_step` missing or not callable."""
    values = config.values
    where = SourceLocation(config.path) if config.path else None
    if values.get("network") is not None:
        raise ConfigError("the config defines both 'network' (a layer dict) and 'get_model' (a model as Python "
                          "code); netcompiler would not know which one to train",
                          subject="config", location=where,
                          suggestion="remove one of them (rename it, e.g. _network, to keep it in the file)")
    for name in ("get_model", "train_step", "forward_step"):
        value = values.get(name)
        if value is not None and not callable(value):
            raise ConfigError(f"'{name}' must be a function, not {type(value).__name__}", subject="config",
                              location=where)
    if values.get("train_step") is None:
        raise ConfigError("the config defines 'get_model' but no 'train_step', so nothing says what to minimise",
                          subject="config", location=where,
                          suggestion="add def train_step(*, model, extern_data, **_kwargs): ... that calls "
                                     "loss.mark_as_loss(name='ce') (or rf.get_run_ctx().mark_as_loss(...))")


def _templates(config, key: str) -> Dict[str, Data]:
    """The templates of config setting `key` (extern_data or model_outputs), with the file named on errors."""
    try:
        if key == "extern_data":
            return extern_data_from_config(config.values)
        entries = config.values.get(key) or {}
        if not isinstance(entries, dict):
            raise ConfigError("must be a dict: key -> options such as {'dim': 2}", subject=f"config key '{key}'")
        return {name: data_from_options(name, opts) for name, opts in entries.items()}
    except ConfigError as exc:
        if exc.location is None and config.path:
            exc.with_context(location=SourceLocation(config.path))
        raise


_EPOCH_SUFFIX = re.compile(r"\.(\d+)(?:\.[A-Za-z]+)?$")
"""The epoch number of a checkpoint path ("model.003", "model.003.pt")."""


def get_model_epoch(manager, config, task: str = "train") -> int:
    """The `epoch` that get_model(epoch=...) gets, as RETURNN's engine passes it: the epoch of the checkpoint the
    run loads -- in training the newest complete one (with start_epoch = N, that of epoch N - 1), in eval and
    forward the one 'load' names (its ".NNN" suffix) or else the newest -- and without one the first epoch trained
    (start_epoch, or 1). `manager`: the run's checkpoint manager (`latest_complete()`)."""
    from .start_epoch import start_epoch_setting

    if task == "train":
        start = start_epoch_setting(config.get("start_epoch"))
        if start is not None:
            return max(start - 1, 1)
    else:
        load = config.get("load")
        match = _EPOCH_SUFFIX.search(load) if isinstance(load, str) else None
        if match:
            return int(match.group(1))
    latest = manager.latest_complete()
    return latest[0] if latest else 1


class FrontendModel:
    """A config's `get_model()` on one backend, with its `train_step` / `forward_step` run per batch: a step
    model (the protocol `emit.model.StepModel` documents: params, trainable_params, checkpoint_root,
    step_losses, loss_names, input_keys, input_signature)."""

    def __init__(self, config, backend: str = "torch", *, epoch: int = 1, step: int = 0, seed: Optional[int] = None):
        """`seed`: where given, rf's parameter initialisation restarts from it (`rf.set_random_seed`) before
        get_model() runs (a plain PyTorch model draws from torch's generator, which the session seeds)."""
        check_frontend_config(config)
        self.config = config
        self.backend = get_backend(backend)
        self.extern_data: Dict[str, Data] = _templates(config, "extern_data")
        self.model_outputs: Dict[str, Data] = _templates(config, "model_outputs")
        self._train_step: Callable = config.values["train_step"]
        self._forward_step: Optional[Callable] = config.values.get("forward_step")
        if seed is not None:
            rf.set_random_seed(seed)
        with rf.RunContext(self.backend, training=False):  # parameters made here exist before any step is traced
            self.model = config.values["get_model"](epoch=epoch, step=step)
        if self.model is None:
            raise ConfigError("get_model() returned None", subject="config", location=self._where(),
                              suggestion="return the model (an rf.Module or a torch.nn.Module)")
        self.params: Dict[str, Any] = self._collect_params()
        """Checkpoint name -> the backend's parameter (rf.Module: its parameter names, e.g. "layer1.weight";
        torch.nn.Module: its state-dict names, e.g. "layers.0.weight")."""
        self.checkpoint_root = self.model if self.is_torch_module else self.backend.parameter_container(
            {name.replace(".", "/"): raw for name, raw in self.params.items()})
        """What checkpoints save the parameters through: a plain torch.nn.Module itself (its state dict, with
        buffers); otherwise the backend's container (dots in names become '/': torch's ParameterDict forbids
        dots)."""
        self._probe: Optional[Dict[str, rf.MarkedLoss]] = None

    def _where(self) -> Optional[SourceLocation]:
        return SourceLocation(self.config.path) if self.config.path else None

    # --- parameters ------------------------------------------------------------------------------
    @property
    def is_torch_module(self) -> bool:
        """Whether get_model() returned a plain PyTorch module (not an rf.Module)."""
        return not isinstance(self.model, rf.Module) and hasattr(self.model, "state_dict") and \
            hasattr(self.model, "named_parameters")

    def _collect_params(self) -> Dict[str, Any]:
        if self.is_torch_module:
            if self.backend.name != "torch":
                raise ConfigError("get_model() returned a PyTorch module, which runs only with backend 'torch'",
                                  subject="config key 'backend'", location=self._where(),
                                  suggestion="set backend = 'torch', or write the model with rf.Module")
            return dict(self.model.named_parameters())
        named = getattr(self.model, "named_parameters", None)
        if named is None:
            raise ConfigError(f"get_model() returned a {type(self.model).__name__}, which has no parameters "
                              f"netcompiler can train", subject="config", location=self._where(),
                              suggestion="return an rf.Module (or, with backend 'torch', a torch.nn.Module)")
        params = {}
        for name, param in named():
            params[name] = param.raw if isinstance(param, Tensor) else param
        return params

    @property
    def trainable_params(self) -> List[Any]:
        return [raw for raw in self.params.values() if self.backend.is_trainable(raw)]

    def param_dims(self) -> Dict[str, Tuple[str, Tuple[Optional[int], ...]]]:
        """Name -> (dims as text, shape) of each parameter, for dump-net."""
        result = {}
        rf_params = dict(self.model.named_parameters()) if not self.is_torch_module else {}
        for name, raw in self.params.items():
            shape = tuple(self.backend.get_known_shape_raw(raw))
            param = rf_params.get(name)
            dims = "[" + ", ".join(d.short_repr() for d in param.dims) + "]" if isinstance(param, Tensor) else \
                str(list(shape))
            result[name] = (dims, shape)
        return result

    # --- a step -----------------------------------------------------------------------------------
    def _extern_tensors(self, run: rf.RunContext, inputs: Dict[str, Any], lengths: Dict[str, Any]) -> TensorDict:
        """The batch as a TensorDict of the extern_data templates (`emit.model.batch_tensors`); a ConfigError for a
        dynamic dim the batches give no sizes for."""
        extern, unsized = batch_tensors(run, self.extern_data, inputs, lengths)
        for key, dim in unsized:
            data = self.extern_data[key]
            raise ConfigError(f"extern_data '{key}' {data.describe()}: the batches give lengths for "
                              f"one dynamic dim per entry (its time dim), not for {dim}",
                              subject=f"extern_data '{key}'", location=self._where())
        return TensorDict(extern)

    def _set_module_mode(self, training: bool) -> None:
        if self.is_torch_module:
            self.model.train(training)  # dropout and batch norm as in RETURNN's torch engine

    def run_train_step(self, inputs: Dict[str, Any], lengths: Dict[str, Any], training: bool) -> rf.RunContext:
        """Runs the config's train_step on the batch; the returned run context holds the marked losses."""
        self._set_module_mode(training)
        run = rf.RunContext(self.backend, training=training)
        with run:
            extern = self._extern_tensors(run, inputs, lengths)
            self._train_step(model=self.model, extern_data=extern)
        if not run.losses:
            raise ConfigError("train_step marked no loss", subject="config key 'train_step'",
                              location=self._where(),
                              suggestion="call loss.mark_as_loss(name='ce') or "
                                         "rf.get_run_ctx().mark_as_loss(loss=..., name='ce') in train_step")
        return run

    def step_losses(self, inputs: Dict[str, Any], lengths: Dict[str, Any], training: bool):
        """(a LossValue per marked loss, the objective): RETURNN's total loss, the sum over the losses that are
        not `as_error` of their sum over valid frames (per frame with `use_normalized_loss`) times `scale`."""
        run = self.run_train_step(inputs, lengths, training)
        with run:
            values = [self._loss_value(marked) for marked in run.losses.values()]
        minimised = [v for v in values if v.loss_sum is not None and v.scale != 0.0]
        if not minimised and training:
            raise ConfigError("train_step marked only errors (as_error=True) or losses with scale 0: there is "
                              "nothing to minimise", subject="config key 'train_step'", location=self._where(),
                              suggestion="mark at least one loss without as_error")
        return values, self.objective(values)

    def _loss_value(self, marked: rf.MarkedLoss) -> LossValue:
        loss = marked.loss
        if loss.dtype != "float32":
            loss = rf.cast(loss, "float32")
        if loss.dims:
            loss_sum = rf.reduce_sum(loss, axis=list(loss.dims))  # masks the padded frames of dynamic dims
            frames = rf.reduce_sum(rf.ones(list(loss.dims), dtype="float32"), axis=list(loss.dims))
        else:
            loss_sum, frames = loss, rf.convert_to_tensor(1.0, dtype="float32")
        if marked.custom_inv_norm_factor is not None:
            frames = self._as_frames(marked.custom_inv_norm_factor)
        if marked.as_error:
            return LossValue(marked.name, None, loss_sum.raw, frames.raw, 0.0, False)
        return LossValue(marked.name, loss_sum.raw, None, frames.raw, marked.scale, marked.use_normalized_loss)

    def _as_frames(self, factor: Any) -> Tensor:
        """`custom_inv_norm_factor` (a Tensor, a raw value or a number) as a float32 scalar Tensor."""
        if not isinstance(factor, Tensor):
            factor = rf.convert_to_tensor(factor, dtype="float32") if not self.backend.is_raw(factor) else \
                Tensor(Data("inv_norm_factor", (), self.backend.dtype_name(factor)), factor)
        factor = rf.cast(factor, "float32")
        return rf.reduce_sum(factor, axis=list(factor.dims)) if factor.dims else factor

    def objective(self, losses: List[LossValue]):
        """What training minimises (a raw scalar): see `objective_of`."""
        return objective_of(losses, self.backend)

    # --- names and inputs --------------------------------------------------------------------------
    def probe_losses(self) -> Dict[str, rf.MarkedLoss]:
        """The losses train_step marks, from one run on a small dummy batch (cached): their names and
        templates are known before training."""
        if self._probe is None:
            inputs, lengths = self.dummy_batch()
            self._probe = self.run_train_step(inputs, lengths, training=False).losses
        return self._probe

    def dummy_batch(self, lengths=(3, 2)) -> Tuple[Dict[str, Any], Dict[str, Any]]:
        """Zeros for every extern_data entry: len(lengths) sequences of these lengths along the dynamic dims."""
        import numpy as np

        inputs, lens = {}, {}
        for key, data in self.extern_data.items():
            shape = [len(lengths) if d.is_batch else max(lengths) if d.is_dynamic else d.size for d in data.dims]
            inputs[key] = np.zeros(shape, dtype=data.dtype)
            if data.dynamic_dims:
                lens[key] = np.asarray(lengths, dtype="int32")
        return inputs, lens

    def loss_names(self) -> Tuple[Dict[str, Optional[str]], Dict[str, Optional[str]]]:
        """({name: loss label or None}, {name: error label or None}): a marked loss is labelled by its name, as
        an error if marked `as_error`."""
        losses = self.probe_losses()
        return ({name: None if m.as_error else name for name, m in losses.items()},
                {name: name if m.as_error else None for name, m in losses.items()})

    def input_keys(self) -> List[str]:
        return list(self.extern_data)

    def input_signature(self, keys=None):
        """The backend's description of the inputs (TF: TensorSpecs with batch and dynamic dims open)."""
        extern = {k: d for k, d in self.extern_data.items() if keys is None or k in keys}
        return self.backend.input_signature(extern)

    # --- forward ----------------------------------------------------------------------------------
    def forward_outputs(self, inputs: Dict[str, Any], lengths: Dict[str, Any]) -> rf.RunContext:
        """Runs the config's forward_step on the batch (not training); the run holds the marked outputs and the
        sizes of their dims."""
        if self._forward_step is None:
            raise ConfigError("the config has no 'forward_step' for --task forward", subject="config",
                              location=self._where(),
                              suggestion="add def forward_step(*, model, extern_data, **_kwargs): ... "
                                         "rf.get_run_ctx().mark_as_default_output(...)")
        self._set_module_mode(False)
        run = rf.RunContext(self.backend, training=False)
        run.expected_outputs = TensorDict.from_templates(self.model_outputs) if self.model_outputs else None
        with run:
            extern = self._extern_tensors(run, inputs, lengths)
            self._forward_step(model=self.model, extern_data=extern)
        if "output" not in run.outputs:
            raise ConfigError("forward_step marked no default output", subject="config key 'forward_step'",
                              location=self._where(),
                              suggestion="call rf.get_run_ctx().mark_as_default_output(tensor=...)")
        return run


def default_backend(config) -> str:
    """The backend a frontend config runs on: its `backend` setting, else torch."""
    return config.values.get("backend") or "torch"
