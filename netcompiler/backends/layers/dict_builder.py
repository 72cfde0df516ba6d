"""The network dict of a recorded run (`build_layer_dict`), and the names its parameters get.

Parameter names: a model parameter with checkpoint name "layer1.weight" (its `named_parameters` path) is the
`variable` layer "layer1.weight" (`param_layer_name`), whose parameter in the built network is
"layer1.weight/layer1.weight" (`param_checkpoint_name`: RETURNN names a variable layer's parameter after the
layer). The step model on this path keeps the frontend's names for its checkpoints, so a checkpoint written by
the model run directly loads here and the other way round.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Set, Tuple

from ...errors import ConfigError
from ...tensor import Data, Tensor
from .catalogue import catalogue_entry
from .recorder import LayerDictUnsupported, OpRecorder, RecordedOp

GENERIC_CLASS = "frontend_op"
"""The layer class of an op that no catalogue layer computes (`layers/frontend_op.py`)."""
LOSS_CLASS = "frontend_marked"
"""The loss class of a marked loss (`layers/frontend_op.py`): the loss Tensor summed over its valid frames."""


def param_layer_name(checkpoint_name: str) -> str:
    """The `variable` layer of the model parameter `checkpoint_name` ("layer1.weight" stays "layer1.weight";
    a "/" would read as a sublayer and becomes ".")."""
    return checkpoint_name.replace("/", ".")


def param_checkpoint_name(checkpoint_name: str) -> str:
    """The name the built network gives the parameter of that `variable` layer ("layer1.weight/layer1.weight")."""
    layer = param_layer_name(checkpoint_name)
    return f"{layer}/{layer}"


@dataclass
class LayerDict:
    """A recorded run as a network dict: `net_dict`, and which layer is what."""

    net_dict: Dict[str, Dict[str, Any]]
    ops: Dict[str, RecordedOp]
    params: Dict[str, str] = field(default_factory=dict)
    """Layer name -> the model parameter's checkpoint name."""
    losses: Dict[str, Any] = field(default_factory=dict)
    """Loss layer name -> the marked loss (name, as_error, scale, use_normalized_loss)."""
    generic: Set[str] = field(default_factory=set)
    """Op layers that are the generic `frontend_op` layer (no catalogue layer gave the recorded template)."""
    fallbacks: Dict[str, str] = field(default_factory=dict)
    """Op layer -> why the catalogue layer that would fit it was not taken (its error, or its other template)."""
    unit_ops: Dict[str, Dict[str, RecordedOp]] = field(default_factory=dict)
    """Rec layer of an rf.scan -> the recorded ops of its unit (each a generic layer there)."""


def generic_entry(op: RecordedOp) -> Dict[str, Any]:
    """The generic `frontend_op` layer dict of a recorded op (it runs the op again on its inputs)."""
    entry = {"class": GENERIC_CLASS, "from": list(op.inputs), "op": op.op_path, "args": list(op.args),
             "kwargs": dict(op.kwargs), "output_path": list(op.output_path), "template": op.template}
    if op.output_path:
        entry["call"] = op.call  # the layers of one call's outputs run it once
    return entry


def _same_template(a: Data, b: Data) -> bool:
    return a.dims == b.dims and a.dtype == b.dtype and a.sparse_dim == b.sparse_dim


def _loss_entries(recorder: OpRecorder, losses: List[Any], taken: Set[str]) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    entries, marks = {}, {}
    for marked in losses:
        source = recorder.layer_of(marked.loss, f"the loss '{marked.name}'")
        name = marked.name if marked.name not in taken else f"loss_{marked.name}"
        entries[name] = {"class": "copy", "from": [source], "loss": LOSS_CLASS, "loss_scale": float(marked.scale),
                         "loss_opts": {"use_normalized_loss": bool(marked.use_normalized_loss)},
                         "is_output_layer": True}
        factor = getattr(marked, "custom_inv_norm_factor", None)
        if isinstance(factor, Tensor):  # the loss layer's target: its sum is the number of frames
            entries[name]["target"] = f"layer:{recorder.layer_of(factor, f'the norm factor of loss {marked.name!r}')}"
        elif isinstance(factor, (int, float)) and not isinstance(factor, bool):
            entries[name]["loss_opts"]["num_frames"] = float(factor)
        elif factor is not None:
            raise LayerDictUnsupported(f"loss '{marked.name}': custom_inv_norm_factor {type(factor).__name__} is "
                                       f"neither a Tensor nor a number", subject="the model's train_step",
                                       suggestion="give an rf Tensor (e.g. the sizes of a dim) or a number")
        marks[name] = marked
        taken.add(name)
    return entries, marks


def _needed(recorder: OpRecorder, outputs: List[str]) -> Set[str]:
    """The layers that `outputs` are computed from (themselves included): what the dict holds."""
    needed: Set[str] = set()
    stack = list(outputs)
    while stack:
        name = stack.pop()
        if name not in needed:
            needed.add(name)
            op = recorder.ops.get(name)
            stack.extend(op.inputs if op is not None else ())
    return needed


def build_layer_dict(recorder: OpRecorder, losses: List[Any], build: Callable[[Dict[str, Any]], Any],
                     use_catalogue: bool = True) -> Tuple[LayerDict, Any]:
    """(the LayerDict, the network `build(net_dict)` made of it). `losses`: the run's marked losses (objects
    with name, loss, as_error, scale, use_normalized_loss, custom_inv_norm_factor). Catalogue layers whose
    inferred template (or build) disagrees with the record are replaced by the generic layer, and the dict is
    built again."""
    if not losses:
        raise LayerDictUnsupported("the model marked no loss, so the layer dict would compute nothing",
                                   subject="the model's train_step", suggestion="mark a loss with mark_as_loss")
    loss_entries, marks = _loss_entries(recorder, losses, set(recorder.ops) | set(recorder.used_params))
    needed = _needed(recorder, [entry["from"][0] for entry in loss_entries.values()] +
                     [entry["target"][len("layer:"):] for entry in loss_entries.values() if "target" in entry])
    ops = {name: op for name, op in recorder.ops.items() if name in needed}
    used_params = {name: p for name, p in recorder.used_params.items() if name in needed}
    generic = set() if use_catalogue else set(ops)
    fallbacks: Dict[str, str] = {}
    for _ in range(len(ops) + 1):
        net_dict: Dict[str, Dict[str, Any]] = {}
        for layer, param in used_params.items():
            net_dict[layer] = {"class": "variable", "shape": list(param.template.dims), "dtype": param.template.dtype,
                               "add_batch_axis": False, "trainable": param.trainable}
        catalogue = set()
        for name, op in ops.items():
            if op.entry is not None:
                net_dict[name] = op.entry
                continue
            entry = None if name in generic else catalogue_entry(op)
            if entry is None:
                generic.add(name)
                entry = generic_entry(op)
            else:
                catalogue.add(name)
            net_dict[name] = entry
        net_dict.update(loss_entries)
        try:
            network = build(net_dict)
        except ConfigError as exc:
            layer = getattr(exc, "layer", None)
            if layer in catalogue:
                generic.add(layer)
                fallbacks[layer] = f"{net_dict[layer]['class']}: {exc}"
                continue
            raise
        wrong = {name for name in catalogue
                 if name in network.layers and not _same_template(network.layers[name].output, ops[name].template)}
        if not wrong:
            params = {layer: p.name for layer, p in used_params.items()}
            units = {name: recorder.unit_ops[name] for name in ops if name in recorder.unit_ops}
            return LayerDict(net_dict, ops, params, marks, generic, fallbacks, units), network
        for name in wrong:
            fallbacks[name] = (f"{net_dict[name]['class']} gives {network.layers[name].output.describe()}, the op "
                               f"gave {ops[name].template.describe()}")
        generic |= wrong
    raise AssertionError("unreachable: every round makes one more layer generic")
