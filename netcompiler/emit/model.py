"""`CompiledNetwork`: a built network's parameters on one backend, its forward pass and its losses."""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from .. import frontend as rf
from ..backends import get_backend
from ..network import Network
from ..tensor import Data, Dim, Tensor, batch_dim
from .context import EmitContext
from .equal_layers import DEFAULT_MIN_LAYERS, SharedEmission, equal_layer_classes


@dataclass
class LossValue:
    """One loss of one batch: sums over valid frames (raw scalars), and how many frames there were."""

    name: str
    loss_sum: Any
    error_sum: Optional[Any]
    num_frames: Any
    scale: float
    normalized: bool
    """Whether training minimises the loss per frame (RETURNN's `use_normalized_loss`) or its sum."""


def objective_of(losses: List[LossValue], backend, total: Any = None):
    """What training minimises, as in RETURNN (a raw scalar): each loss summed over the batch's valid frames
    (or per frame, where the loss says `use_normalized_loss` or `custom_norm_factor`), times its scale, added to
    `total` (e.g. an L2 term). A loss with scale 0 is left out, as RETURNN leaves it out (a NaN there then
    does not stop training); an error-only loss (edit_distance, bleu) has no sum."""
    for value in losses:
        if value.loss_sum is None or value.scale == 0.0:
            continue
        term = value.loss_sum
        if value.scale != 1.0:
            term = backend.combine_raw(term, "mul", backend.convert_to_raw(value.scale, "float32"))
        if value.normalized:
            term = backend.combine_raw(term, "truediv", backend.combine_raw(
                value.num_frames, "maximum", backend.convert_to_raw(1e-8, "float32")))
        total = term if total is None else backend.combine_raw(total, "add", term)
    return backend.convert_to_raw(0.0, "float32") if total is None else total


class StepModel:
    """What a trainer trains (the "step model" protocol): documentation of the attributes and methods that
    `CompiledNetwork` (layer dicts) and the frontend's `FrontendModel` both provide. Trainers use nothing else,
    except TensorFlow's, which also asks for `input_signature(keys)` to trace its steps once.

    * ``backend``: the Backend class; ``params``: checkpoint name -> the backend's parameter;
      ``trainable_params``: the parameters training changes; ``checkpoint_root``: what checkpoints save them
      through.
    * ``step_losses(inputs, lengths, training)``: the batch's losses (`LossValue`s; one marked as an error
      only has an error) and the objective to minimise (a raw scalar of the backend).
    * ``loss_names()``: ({loss name: loss label}, {loss name: error label or None}) for printing scores.
    * ``input_keys()``: the extern_data keys a batch must hold; ``extern_data``: key -> its Data template.
    """


def batch_tensors(run: rf.RunContext, extern_data: Dict[str, Data], inputs: Dict[str, Any],
                  lengths: Dict[str, Any]) -> Tuple[Dict[str, Tensor], List[Tuple[str, Dim]]]:
    """The batch's values (raw tensors or arrays laid out as `extern_data` says) as Tensors of their templates;
    `run` learns the batch size, and the sizes of each entry's time dim from `lengths` (a batch gives one length
    per sequence and entry). Also returns (key, dim) of every other dynamic dim, whose sizes the batch lacks."""
    backend = run.backend
    extern: Dict[str, Tensor] = {}
    unsized: List[Tuple[str, Dim]] = []
    for key, data in extern_data.items():
        if key not in inputs:
            continue
        raw = backend.convert_to_raw(inputs[key], data.dtype)
        extern[key] = Tensor(data, raw)
        if batch_dim not in run.sizes and data.batch_dim_axis is not None:
            run.set_size(batch_dim, backend.get_shape_tuple_raw(raw)[data.batch_dim_axis], size_dims=())
        for dim in data.dynamic_dims:
            if dim in run.sizes:
                continue
            if dim == data.time_dim and key in lengths:
                run.set_size(dim, lengths[key])
            else:
                unsized.append((key, dim))
    return extern, unsized


def _layers_of_loss(layer) -> List[Any]:
    """The layers `layer`'s loss holds (itself, its target, layers its options name: `signal_layer`, ...)."""
    from ..layer_base import LayerBase

    found = []
    for value in vars(layer.loss).values():
        found += [item for item in (value if isinstance(value, (list, tuple)) else [value])
                  if isinstance(item, LayerBase)]
    return found


def _is_trained(layer, spec) -> bool:
    """Whether training changes this parameter of `layer`: its spec and the layer's `trainable` say so."""
    return spec.trainable and bool(layer.opts.get("trainable", True))


class CompiledNetwork(StepModel):
    """One parameter per layer parameter, named "<layer>/<param>" (e.g. "lstm/W", "output/b"; in a rec unit
    "<rec>/rec/<inner>/<param>", see `LayerBase.param_scope`), on a backend."""

    global_train_step: Any = None
    """The trainer's step counter (a raw scalar variable) when training: config functions read it as RETURNN's
    `network.global_train_step` (e.g. a SpecAugment schedule)."""

    def __init__(self, network: Network, seed: int = 0, backend: str = "tensorflow",
                 equal_layers_min: Optional[int] = DEFAULT_MIN_LAYERS):
        """Creates the parameters; each random initializer is seeded from `seed` and the parameter's name.
        Classes of at least `equal_layers_min` equal layers (None or 0: none) have their parameters in groups
        and share one traced function, where the backend can (`equal_layers`)."""
        self.network = network
        self.backend = get_backend(backend)
        self.param_tensors: Dict[str, Tensor] = {}
        self._l2_scales: List[Tuple[str, float]] = []
        """(parameter name, the L2 factor of its layer) of the layers that set L2."""
        classes = equal_layer_classes(network, equal_layers_min) if self.backend.supports_parameter_groups else []
        self.shared_emission = SharedEmission(classes) if classes else None
        params = list(network.all_params())
        values = self.backend.initial_values_raw([  # all at once: a backend may draw equal ones together
            (spec.init, [d.size for d in spec.shape], spec.dtype, zlib.crc32(f"{seed}/{full}".encode()), layer.name,
             full) for full, layer, spec in params])
        grouped, self._groups = self._create_groups(classes, params, values)
        """Per parameter group: its members' full names, in order."""
        for index, (full, layer, spec) in enumerate(params):
            if layer.opts.get("L2"):
                self._l2_scales.append((full, float(layer.opts["L2"])))
            if full in grouped:
                self.param_tensors[full] = Tensor(Data(full, tuple(spec.shape), spec.dtype), grouped[full])
                continue
            trainable = _is_trained(layer, spec)
            value, values[index] = values[index], None  # (each value dropped once its parameter holds a copy)
            self.param_tensors[full] = rf.create_parameter(self.backend, full, spec.shape, init=spec.init,
                                                           dtype=spec.dtype, trainable=trainable, initial_value=value)
        self.params: Dict[str, Any] = {name: t.raw for name, t in self.param_tensors.items()}
        """Parameter name -> the backend's variable."""
        self.checkpoint_root = self.backend.parameter_container(self.params)
        """What a checkpoint saves the parameters through (TF: a tf.Module whose `params` are these)."""
        self._eager_plan = None
        """(layers the losses read, softmax layers whose logits suffice) of an eager step (`step_losses`)."""
        self._loss_layers = tuple(layer for layer in network.all_layers() if getattr(layer, "loss", None) is not None)

    def _create_groups(self, classes, params, values) -> Tuple[Dict[str, Any], List[List[str]]]:
        """The parameters of each equal-layer class, one group per parameter name: ({full name: member}, per
        group its members' full names in order). Each member starts from its own initial value, as it would
        alone."""
        groups: List[List[str]] = []
        index_of = {full: index for index, (full, _, _) in enumerate(params)}
        members: Dict[str, Any] = {}
        for layers in classes:
            for name in sorted(layers[0].params):
                names = [layer.param_full_name(name) for layer in layers]
                spec = layers[0].params[name]
                group = self.backend.create_parameter_group_raw(
                    names, [values[index_of[full]] for full in names], spec.dtype, _is_trained(layers[0], spec))
                for full in names:
                    values[index_of[full]] = None
                members.update(zip(names, group))
                groups.append(names)
        return members, groups

    @property
    def group_storages(self) -> List[Any]:
        """The variables of the parameter groups (each holds several parameters; empty without groups)."""
        return [self.backend.parameter_storage_raw(self.params[names[0]]) for names in self._groups]

    def _step_params(self) -> Dict[str, Tensor]:
        """The parameters as a pass reads them: each group read once (its members' values), the others as they
        are."""
        if not self._groups:
            return self.param_tensors
        params = dict(self.param_tensors)
        for names in self._groups:
            values = self.backend.parameter_group_values_raw([self.params[full] for full in names])
            params.update((full, Tensor(self.param_tensors[full].data, value)) for full, value in zip(names, values))
        return params

    def param(self, layer, name: str):
        return self.params[layer.param_full_name(name)]

    @property
    def trainable_params(self) -> List[Any]:
        found: Dict[int, Any] = {}  # (a group's variable once, for all its members)
        for t in self.param_tensors.values():
            storage = self.backend.parameter_storage_raw(t.raw)
            if self.backend.is_trainable(storage):
                found.setdefault(id(storage), storage)
        return list(found.values())

    # --- the forward pass ---------------------------------------------------------------------
    def forward(self, inputs: Dict[str, Any], lengths: Dict[str, Any], training: bool,
                emit_all: bool = True, keep_only=None, logits_suffice=()) -> EmitContext:
        """Emits every built layer for these inputs (raw tensors or arrays, laid out as extern_data says);
        the returned context holds every layer's output as a Tensor (with `keep_only`, those layers' only:
        `EmitContext.emit_all`; the softmax layers in `logits_suffice` hold their logits:
        `EmitContext.logits_suffice`). With `emit_all` False, layers are emitted when asked for (`ctx.value`), so
        that inputs a caller does not need may be left out."""
        run = rf.RunContext(self.backend, training=training)
        run.global_train_step = self.global_train_step
        with run:
            extern = self._extern_tensors(run, inputs, lengths)
            shared = None if self.shared_emission is None else self.shared_emission.for_pass()
            ctx = EmitContext(self.network, run, self._step_params(), extern, shared=shared)
            ctx.logits_suffice = frozenset(id(layer) for layer in logits_suffice)
            if emit_all:
                ctx.emit_all(keep_only)
        return ctx

    def _extern_tensors(self, run: rf.RunContext, inputs: Dict[str, Any], lengths: Dict[str, Any]) -> Dict[str, Tensor]:
        return batch_tensors(run, self.network.extern_data, inputs, lengths)[0]

    def loss_layers(self) -> Tuple[Any, ...]:
        """The layers with a loss, nested ones included (found once: the network does not change)."""
        return self._loss_layers

    def losses(self, ctx: EmitContext) -> List[LossValue]:
        result = []
        with ctx.run:
            for layer in self.loss_layers():
                loss = layer.loss
                target = ctx.value(layer.target_layer) if layer.target_layer is not None else None
                with self.backend.name_scope_raw(f"loss_{layer.name.replace('/', '_')}"):
                    loss_sum, error_sum, frames = loss.compute(ctx, ctx.value(layer), target)
                normalized = bool(loss.opts.get("use_normalized_loss")) or \
                    loss.opts.get("custom_norm_factor") is not None
                result.append(LossValue(layer.name, None if loss_sum is None else loss_sum.raw,  # None: an error only
                                        None if error_sum is None else error_sum.raw,
                                        rf.cast(frames, "float32").raw, loss.scale, normalized))
        return result

    def l2_term(self, ctx: EmitContext) -> Optional[Tensor]:
        """Sum over layers of L2 * (sum of squares of their parameters); None if no layer sets L2."""
        total = None
        with ctx.run:
            for full, l2 in self._l2_scales:
                p = ctx.params[full]
                term = rf.reduce_sum(rf.square(p), axis=p.dims) * l2
                total = term if total is None else total + term
        return total

    def objective(self, losses: List[LossValue], ctx: EmitContext):
        """What training minimises (`objective_of`), plus L2. A raw scalar."""
        l2 = self.l2_term(ctx)
        return objective_of(losses, self.backend, None if l2 is None else l2.raw)

    # --- the step-model protocol (see `StepModel`) ----------------------------------------------
    def step_losses(self, inputs: Dict[str, Any], lengths: Dict[str, Any], training: bool):
        """(losses of the batch, the objective): the forward pass, every loss layer's loss, their combination."""
        eager = self.backend.name == "torch"  # on TF this runs once, traced: nothing to free, unread ops pruned
        if eager and self._eager_plan is None:  # the network does not change: walked once, not every step
            self._eager_plan = (self._loss_readers(), self._unread_probabilities())
        keep_only, logits_suffice = self._eager_plan if eager else (None, ())
        ctx = self.forward(inputs, lengths, training=training, keep_only=keep_only, logits_suffice=logits_suffice)
        losses = self.losses(ctx)
        objective = self.objective(losses, ctx)
        ctx.release()  # the outputs are freed now, not when the cycle collector next runs
        return losses, objective

    def _loss_readers(self) -> List[Any]:
        """The layers the losses read after the forward pass: loss layers, their targets and sources, layers
        their losses refer to (`signal_layer`, ...), output layers."""
        found = []
        for layer in self.network.layers.values():
            if layer.name == "output" or layer.opts.get("is_output_layer"):
                found.append(layer)
        for layer in self.loss_layers():
            found += [layer, layer.target_layer] + list(layer.dependencies()) + _layers_of_loss(layer)
        return [layer for layer in found if layer is not None]

    def _unread_probabilities(self) -> List[Any]:
        """The loss layers of a flat network whose loss reads recorded logits, not the output (`reads_output`
        False: ce), and whose output no other layer or loss reads: a softmax among them need not compute its
        probabilities in a step that only makes the losses."""
        if not self.network.is_flat():
            return []  # nested networks read outer layers when they run
        read = {id(dep) for layer in self.network.layers.values() for dep in layer.dependencies()}
        read.update(id(other) for layer in self.loss_layers() for other in _layers_of_loss(layer) if other is not layer)
        return [layer for layer in self.loss_layers() if not layer.loss.reads_output and id(layer) not in read]

    def loss_names(self) -> Tuple[Dict[str, str], Dict[str, Optional[str]]]:
        """Per loss layer: the loss's label (`ce`) and its error's label (`fer`, or None)."""
        layers = self.loss_layers()
        return ({layer.name: layer.loss.loss_class for layer in layers},
                {layer.name: layer.loss.error_name for layer in layers})

    def input_keys(self) -> List[str]:
        return self.network_input_keys()

    # --- inputs -------------------------------------------------------------------------------------
    @property
    def extern_data(self) -> Dict[str, Data]:
        """The network's extern data templates, key -> Data (as `FrontendModel.extern_data`)."""
        return self.network.extern_data

    def network_input_keys(self) -> List[str]:
        """The extern data keys the built network reads (its inputs and loss targets)."""
        return [layer.opts["data_key"] for layer in self.network.layers.values() if layer.layer_class == "source"]

    def input_signature(self, keys=None):
        """The backend's description of the inputs (TF: TensorSpecs with batch and dynamic dims open) and their
        lengths, for compiled steps."""
        extern = {k: d for k, d in self.network.extern_data.items() if keys is None or k in keys}
        return self.backend.input_signature(extern)
