"""Moving layers out of a loop body (RETURNN's `optimize_move_layers_out`, on by default).

A layer of a loop body that does not depend on the step (it reads no "prev:",
no ":i", carries no step state, directly or through other layers of the body)
computes at every step what it would compute on that step's frame of its
inputs. If its class computes frame by frame (`moves_out_of_loops`), it can
instead run once over the whole sequence before the loop; each step then reads
its frame of that result (`LoopPlan.moved`, see `netcompiler.emit.loop_runner`).
A layer whose inputs are all such layers, the loop's frame inputs ("data:source",
"data:KEY") or layers outside the loop ("base:x") follows it out.

The outside copies are layers of a `MovedOutNetwork`: the same unit dict built
again next to the rec layer, where "data:source" is the rec layer's whole input
and "data:KEY" the whole sequence whose frames the loop reads. Its layers have the same names and so
the same parameters as the layers in the loop (checkpoints and training do not
change). A layer moves only if its outside template is its template in the loop
with the loop's dim added (same dtype, sparse dim and parameters); otherwise,
and for every layer that reads it, it stays in the loop.

Nothing moves out of a loop that runs until its 'end' layer (its length is not
known before it runs), in beam search, or when the rec layer's
`optimize_move_layers_out` (else the config key of that name) is False.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional

from .errors import ConfigError
from .layer_base import LayerBase
from .loop_body import LoopBody
from .network import Network
from .tensor import Data, Dim, Tensor

OPTION = "optimize_move_layers_out"
"""The rec layer option and the config key that switch moving out on and off (default: on)."""

MOVABLE_CLASSES = frozenset({
    "linear", "activation", "combine", "eval", "compare", "switch", "gating", "copy", "softmax", "dropout",
    "cast", "reinterpret_data", "scaled_grad", "layer_norm", "math_norm", "reduce", "dot", "slice", "gather",
    "split_dims", "merge_dims", "squeeze", "expand_dims",
})
"""Layer classes that compute each frame on its own: on the whole sequence they give every frame's result at
once. A class may say so itself with a class attribute `moves_out_of_loops` (True or False), which wins."""


def moves_out_of_loops(layer: LayerBase) -> bool:
    """Whether `layer`'s class computes frame by frame, so that it may run outside a loop."""
    return bool(getattr(type(layer), "moves_out_of_loops", layer.layer_class in MOVABLE_CLASSES))


class MovedOutNetwork(Network):
    """The outside copies of a loop body's layers: nested in the rec layer's network, named and parametrized
    as the body's layers ("<rec>/x", parameters "<rec>/rec/x/...")."""

    param_subscope = "rec/"


@dataclass
class MoveOutPlan:
    """Which layers of a loop body run outside (`moved`, local names in build order) and which inside."""

    network: Optional[MovedOutNetwork] = None
    moved: List[str] = field(default_factory=list)
    inside: List[str] = field(default_factory=list)


def move_out_enabled(rec: LayerBase) -> bool:
    """The rec layer's `optimize_move_layers_out`, else the config's, else True; never for a loop until 'end'
    nor in beam search (there the layers after the choice read the hypotheses' frames in a new order)."""
    searches = getattr(rec, "searches", None)
    if rec.runs_until_end() or (searches is not None and searches()):
        return False
    value = rec.opts.get(OPTION)
    if value is None and rec.network.config is not None:
        value = rec.network.config.get(OPTION)
    return value is None or bool(value)


def move_out_plan(rec: LayerBase) -> MoveOutPlan:
    """The plan for the loop body of `rec` (a rec layer with a unit dict); made once per built body."""
    body = rec.subnetwork
    key = tuple(id(layer) for layer in body.layers.values())
    cached = rec.__dict__.get("_move_out_plan")
    if cached is None or cached[0] != key:
        cached = (key, _make_plan(rec, move_out_enabled(rec)))
        rec.__dict__["_move_out_plan"] = cached
    return cached[1]


def loop_plan_of(layer: LayerBase) -> Optional[MoveOutPlan]:
    """The plan of `layer`'s loop body if it runs one (a rec layer with a unit dict), else None."""
    return move_out_plan(layer) if isinstance(getattr(layer, "subnetwork", None), LoopBody) else None


def describe_plan(plan: MoveOutPlan) -> str:
    """One line for dumps: "moved out of the loop: a, b; inside: c, d"."""
    return f"moved out of the loop: {', '.join(plan.moved) or 'none'}; inside: {', '.join(plan.inside) or 'none'}"


def moved_values(rec: LayerBase, inputs, frames: Dict[str, Tensor]) -> Dict[str, Tensor]:
    """Emits the moved layers of `rec`'s loop over the whole sequence: local name -> Tensor with the loop's dim.
    `frames` are the loop's inputs by extern key ("source": the rec layer's input), as the loop reads them."""
    plan = move_out_plan(rec)
    if not plan.moved:
        return {}
    ctx = inputs.nested(plan.network, {key: frames[key] for key in plan.network.extern_data})
    return {name: ctx.value(plan.network.layers[name]) for name in plan.moved}


def _make_plan(rec: LayerBase, enabled: bool) -> MoveOutPlan:
    body = rec.subnetwork
    own = [name for name in body.layers if name in body.net_dict]  # not extern data ("data:source")
    if not enabled:
        return MoveOutPlan(inside=own)
    time = rec.loop_dim()
    outside = MovedOutNetwork(body.net_dict, _whole_extern_data(rec, body, time), parent=rec.network,
                              prefix=body.prefix)
    outside.owner = rec
    outside.notices = []  # building a copy says nothing new about the config
    outside.dim_memo = dict(body.dim_memo)  # the same Dims as in the loop; new ones stay here
    plan = MoveOutPlan(outside)
    for name in own:
        if _moves(name, body.layers[name], body, outside, plan.moved, time):
            plan.moved.append(name)
        else:
            plan.inside.append(name)
    return plan


def _whole_extern_data(rec: LayerBase, body: Network, time: Dim) -> Dict[str, Data]:
    """What the body reads frame by frame, whole: "source" is the rec layer's input, the others their frames with
    the loop's dim (after the batch dim, as in the usual [B, T, F]; the fed Tensors may have any order)."""
    whole = {}
    for key, frame in body.extern_data.items():
        if key == "source":
            whole[key] = rec.input_data
            continue
        at = 1 if frame.dims and frame.dims[0].is_batch else 0
        whole[key] = frame.copy(name=key, dims=frame.dims[:at] + (time,) + frame.dims[at:], time_dim=time)
    return whole


def _moves(name: str, layer: LayerBase, body, outside: MovedOutNetwork, moved: List[str], time) -> bool:
    """Whether body layer `name` moves out; if so, its outside copy is built in `outside`."""
    if body.step_dependent(name) or not moves_out_of_loops(layer):
        return False
    for dep in layer.dependencies():
        if dep.network is body:
            local = dep.name[len(body.prefix):]
            if local in body.net_dict and local not in moved:
                return False  # reads a layer that stays in the loop
        elif body._contains(dep.network):
            return False  # a layer of a network nested in the loop
    try:
        copy = outside.get_layer(name)
    except ConfigError:
        return False
    if _is_whole_sequence_of(copy, layer, time):
        return True
    del outside.layers[name]
    return False


def _is_whole_sequence_of(copy: LayerBase, layer: LayerBase, time) -> bool:
    """Whether `copy` is `layer` with the loop's dim `time` added: same other dims, dtype, sparse dim, params."""
    out, step = copy.output, layer.output
    return (not step.has_dim(time) and set(out.dims) == set(step.dims) | {time} and out.dtype == step.dtype
            and out.sparse_dim == step.sparse_dim
            and {k: s.sizes for k, s in copy.params.items()} == {k: s.sizes for k, s in layer.params.items()})

