"""`LayerDictModel`: a frontend config's model trained on TensorFlow through the network dict it becomes (the
layer-dict backend, `netcompiler/backends/layers/`), as a step model (see `emit.model.StepModel`).

The model's train_step runs once on a probe batch with the op recorder set; the recorded layers, parameters and
marked losses become a network dict, which `build_network` builds and `CompiledNetwork` emits. Parameters keep
the model's names (`layer1.weight`) in `params` and checkpoints, so checkpoints are interchangeable with the
model run directly on TensorFlow (`FrontendModel`); in the built network the parameter of `layer1.weight` is
`layer1.weight/layer1.weight` (`param_checkpoint_name`). The probe runs in training and in evaluation: an op
that reads the flag itself (`rf.dropout`) reads it again at each run, but model code whose ops differ between the
two (a Python `if` on the flag) is refused. Python decisions on the probe's values are frozen in the dict.
"""

from __future__ import annotations

import sys
from typing import Any, Dict, List, Optional, Tuple

from .. import frontend as rf
from ..backends.layers import (
    LayerDict, LayerDictUnsupported, OpRecorder, build_layer_dict, param_checkpoint_name, param_layer_name,
)
from ..config import Config
from ..emit.model import CompiledNetwork, LossValue
from ..frontend._dispatch import set_op_recorder
from ..network import build_network
from .frontend_model import FrontendModel

PROBE_LENGTHS = (5, 3, 4)
"""Sequence lengths of the probe batch (ragged, so that masking shows in the recorded ops)."""


def _probe(frontend: FrontendModel, training: bool) -> Tuple[OpRecorder, rf.RunContext]:
    """The model's train_step run once on the probe batch with an op recorder set: (the recorder, the run)."""
    backend = frontend.backend
    named_modules = getattr(frontend.model, "named_modules", None)
    modules = {id(module): param_layer_name(path) for path, module in named_modules()} if named_modules else {}
    recorder = OpRecorder(frontend.params, param_layer_name, backend.is_trainable, modules)
    inputs, lengths = frontend.dummy_batch(PROBE_LENGTHS)
    run = rf.RunContext(backend, training=training)
    with run:
        extern = frontend._extern_tensors(run, inputs, lengths)
        for key, tensor in extern.items():
            recorder.add_input(key, tensor)
            for dim in tensor.data.dynamic_dims:  # `dim.dyn_size_ext` in model code: a layer of the sizes
                recorder(rf.dim_size_tensor, (dim,), {}, rf.dim_size_tensor(dim))
        previous = set_op_recorder(recorder)
        try:
            frontend._train_step(model=frontend.model, extern_data=extern)
        finally:
            set_op_recorder(previous)
    return recorder, run


def _structure(recorder: OpRecorder, run: rf.RunContext) -> List[str]:
    """What a recorded run called, as text (dims by name: a second run makes new Dims where the first did)."""
    return recorder.calls + sorted(recorder.used_params) + [
        f"loss {name} {m.as_error} {m.scale} {m.use_normalized_loss}" for name, m in run.losses.items()]


def record_layer_dict(frontend: FrontendModel, use_catalogue: bool = True) -> Tuple[LayerDict, Any]:
    """(the LayerDict of `frontend`'s train_step, the network built from it). The step is recorded in training
    and in evaluation: model code that computes something else in each (a Python `if` on the training flag)
    cannot be one dict, and is refused."""
    recorder, run = _probe(frontend, training=True)
    evaluation = _structure(*_probe(frontend, training=False))
    trained = _structure(recorder, run)
    if trained != evaluation:
        first = next(i for i, (a, b) in enumerate(zip(trained + [""], evaluation + [""])) if a != b)
        raise LayerDictUnsupported(
            f"train_step computes other things in training than in evaluation (model code that branches on the "
            f"training flag), so one layer dict cannot hold it; first difference: training {trained[first:first + 1]} "
            f"vs evaluation {evaluation[first:first + 1]}", subject="the model's train_step",
            suggestion="use ops that read the flag themselves (rf.dropout), or run the model without the layer dict")
    return build_layer_dict(recorder, list(run.losses.values()),
                            lambda net_dict: build_network(Config({"network": net_dict}),
                                                           extern_data=frontend.extern_data),
                            use_catalogue=use_catalogue)


class LayerDictModel:
    """A frontend config's model as its layer dict on TensorFlow (see the module docstring): the step-model
    protocol (params, trainable_params, checkpoint_root, step_losses, loss_names, input_keys, input_signature),
    and `forward_outputs` (the config's forward_step, run directly with the trained values)."""

    def __init__(self, config, *, seed: int = 42, use_catalogue: bool = True, epoch: int = 1):
        self.frontend = FrontendModel(config, "tensorflow", seed=seed, epoch=epoch)
        self.config = config
        self.backend = self.frontend.backend
        self.extern_data = self.frontend.extern_data
        self.layer_dict, self.network = record_layer_dict(self.frontend, use_catalogue)
        self.compiled = CompiledNetwork(self.network, seed=seed, backend="tensorflow")
        self.params: Dict[str, Any] = {}
        """The model's parameter names -> tf.Variable: the built network's where the dict reads the parameter,
        else the model's own (unused by the losses, kept so that checkpoints hold every parameter)."""
        for name, raw in self.frontend.params.items():
            built = self.compiled.params.get(param_checkpoint_name(name))
            if built is not None:
                self.backend.assign_raw(built, self.backend.to_numpy(raw))
            self.params[name] = built if built is not None else raw
        self.checkpoint_root = self.backend.parameter_container(
            {name.replace(".", "/"): raw for name, raw in self.params.items()})

    # --- what dump-net and compile-net print of the model (see frontend_dump.py) ---------------------
    @property
    def model(self):
        """The config's get_model() result."""
        return self.frontend.model

    def param_dims(self):
        return self.frontend.param_dims()

    def probe_losses(self):
        return self.frontend.probe_losses()

    # --- the step-model protocol ----------------------------------------------------------------------
    @property
    def trainable_params(self) -> List[Any]:
        used = set(self.layer_dict.params.values())
        return [raw for name, raw in self.params.items() if name in used and self.backend.is_trainable(raw)]

    def step_losses(self, inputs: Dict[str, Any], lengths: Dict[str, Any], training: bool):
        """(a LossValue per marked loss, the objective), as `FrontendModel.step_losses` defines them, computed by
        the built network's loss layers."""
        ctx = self.compiled.forward(inputs, lengths, training=training, emit_all=False)
        values = []
        for value in self.compiled.losses(ctx):
            marked = self.layer_dict.losses[value.name]
            if marked.as_error:
                values.append(LossValue(marked.name, None, value.loss_sum, value.num_frames, 0.0, False))
            else:
                values.append(LossValue(marked.name, value.loss_sum, None, value.num_frames, float(marked.scale),
                                        bool(marked.use_normalized_loss)))
        return values, self.frontend.objective(values)

    def loss_names(self):
        return self.frontend.loss_names()

    def input_keys(self) -> List[str]:
        return self.frontend.input_keys()

    def input_signature(self, keys=None):
        return self.frontend.input_signature(keys)

    def forward_outputs(self, inputs: Dict[str, Any], lengths: Dict[str, Any]):
        """The config's forward_step run directly on TensorFlow, with the values trained through the dict."""
        for name, raw in self.params.items():
            if raw is not self.frontend.params[name]:
                self.backend.assign_raw(self.frontend.params[name], self.backend.to_numpy(raw))
        return self.frontend.forward_outputs(inputs, lengths)


def frontend_step_model(config, backend: str, seed: Optional[int] = None, log=sys.stderr, epoch: int = 1):
    """The step model compile-net trains for a frontend config: on TensorFlow the layer dict the model becomes
    (`LayerDictModel`), or, where the dict cannot express the model (`LayerDictUnsupported`, e.g. a loop of
    unknown length), the model run directly on TensorFlow, with a notice saying why; on other backends the model
    run directly. `epoch`: what get_model(epoch=...) gets (`frontend_model.get_model_epoch`)."""
    if backend == "tensorflow":
        try:
            return LayerDictModel(config, seed=42 if seed is None else seed, epoch=epoch)
        except LayerDictUnsupported as exc:
            print(f"notice: the model runs directly on TensorFlow, not through a layer dict: {exc}", file=log)
    return FrontendModel(config, backend, seed=seed, epoch=epoch)


def format_layer_dict(model: LayerDictModel, formatter) -> str:
    """`formatter(network)` (dump-net's text, --json or --dot) of the network the model became; the text also
    names the op behind each generic layer and why no catalogue layer was taken."""
    text = formatter(model.network)
    if not text.lstrip().startswith("layer dict") and formatter.__name__ == "format_text":
        lines = ["layer dict of the model (the layer-dict backend; compile-net ++backend tensorflow trains it):",
                 text]
        for name in sorted(model.layer_dict.generic & set(model.network.layers)):
            op = model.layer_dict.ops[name]
            why = model.layer_dict.fallbacks.get(name)
            lines.append(f"  {name} = {op.call_text()}" + (f"  (no catalogue layer: {why})" if why else ""))
        for loop, unit_ops in sorted(model.layer_dict.unit_ops.items()):
            lines.extend(f"  {loop}/{name} = {op.call_text()}" for name, op in unit_ops.items())
        text = "\n".join(lines)
    return text
