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

In training a `choice` with a target is that target's frame: it moves out as the
target's whole sequence. "prev:x" of a moved layer x is x shifted by one frame
along the loop's dim (frame 0: what "prev:x" is at the first step), so a layer
reading it (the embedding of the previous label) moves out too.

Layers after the loop (`MoveOutPlan.after`): a layer that stays in the body but
that no step reads (no layer in the loop reads it, nor "prev:" of it; no step
state; not 'end'), and whose inputs are moved layers, layers outside the loop,
or layers that stay in the loop, runs once after the loop on the stacked values
of those (the loop collects them, `MoveOutPlan.stacked`), e.g. the readout and
output softmax of an attention decoder. Its copy is built in the same
`MovedOutNetwork`, where each layer that stays in the loop is a `StackedLayer`.

Nothing moves out of a loop that runs until its 'end' layer (its length is not
known before it runs), in beam search, or when the rec layer's
`optimize_move_layers_out` (else the config key of that name) is False.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

from . import frontend as rf
from .errors import ConfigError, UnknownReferenceError
from .layer_base import LayerBase, has_step_state
from .loop_body import LoopBody, PlaceholderLayer, PrevLayer, StepIndexLayer
from .network import Network
from .references import DATA, target_reference
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


class StackedLayer(PlaceholderLayer, register=False):
    """In a `MovedOutNetwork`: a layer that stays in the loop, as its values of all steps stacked over the loop's
    dim (the loop collects them; `after_function` presets them)."""

    layer_class = "rec_stacked"


class ShiftedLayer(PlaceholderLayer, register=False):
    """In a `MovedOutNetwork`: "prev:x", x's whole sequence shifted by one frame along the loop's dim; frame 0 is
    what "prev:x" is at the first step (set by `_preset_shifted`)."""

    layer_class = "rec_shifted"

    def __init__(self, name: str, network: Network, template: Data, of: str, source: LayerBase):
        self.of, self.source = of, source
        super().__init__(name, network, template)


class MovedOutNetwork(Network):
    """The outside copies of a loop body's layers: nested in the rec layer's network, named and parametrized
    as the body's layers ("<rec>/x", parameters "<rec>/rec/x/..."). "prev:x" is a `ShiftedLayer` of x's copy
    (or of its `StackedLayer`)."""

    param_subscope = "rec/"
    shifted: Dict[str, ShiftedLayer]

    def get_prev_layer(self, path: str, user: Optional[str], option: str) -> LayerBase:
        shifted = self.__dict__.setdefault("shifted", {})
        if path not in shifted:
            if "/" in path:
                raise UnknownReferenceError(f"'prev:{path}' of a sublayer is not moved out of a loop", option=option)
            source = self.get_layer(path, user, option)
            shifted[path] = ShiftedLayer(self.path(f"prev:{path}"), self, source.output.copy(name=f"prev:{path}"),
                                         path, source)
        return shifted[path]


@dataclass
class MoveOutPlan:
    """Which layers of a loop body run outside (`moved`, local names in build order) and which inside."""

    network: Optional[MovedOutNetwork] = None
    moved: List[str] = field(default_factory=list)
    inside: List[str] = field(default_factory=list)
    after: List[str] = field(default_factory=list)
    """Layers computed once after the loop, on the stacked values of `stacked` (local names in build order)."""
    stacked: List[str] = field(default_factory=list)
    """Layers that stay in the loop and that `after` layers read: the loop collects them."""


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
    """One line for dumps: "moved out of the loop: a, b; after the loop: e; inside: c, d" (no "after the loop"
    part when there is none)."""
    after = f"; after the loop: {', '.join(plan.after)}" if plan.after else ""
    return f"moved out of the loop: {', '.join(plan.moved) or 'none'}{after}; inside: {', '.join(plan.inside) or 'none'}"


def collected(rec: LayerBase, names: List[str]) -> List[str]:
    """What the loop of `rec` must stack to give the layers `names`: those that run after the loop are replaced by
    the layers of the loop they read."""
    plan = move_out_plan(rec)
    return [n for n in names if n not in plan.after] + [n for n in plan.stacked if n not in names]


def moved_values(rec: LayerBase, inputs, frames: Dict[str, Tensor],
                 initial_prev: Dict[str, Tensor]) -> Dict[str, Tensor]:
    """Emits the moved layers of `rec`'s loop over the whole sequence: local name -> Tensor with the loop's dim.
    `frames` are the loop's inputs by extern key ("source": the rec layer's input), as the loop reads them;
    `initial_prev` "prev:x" at the first step by local path."""
    plan = move_out_plan(rec)
    if not plan.moved and not plan.after:
        return {}
    ctx = inputs.nested(plan.network, {key: frames[key] for key in plan.network.extern_data})
    _preset_shifted(ctx, plan.network, initial_prev, rec.loop_dim())
    return {name: ctx.value(plan.network.layers[name]) for name in plan.moved}


def after_function(rec: LayerBase, inputs, frames: Dict[str, Tensor]
                   ) -> Optional[Callable[[Dict[str, Tensor]], Dict[str, Tensor]]]:
    """None if no layer of `rec`'s loop runs after it; else a function from the loop's stacked values (by name,
    with those of `plan.stacked`) to the values of the after-loop layers over all steps (not masked). Call after
    `moved_values` (it shares that context)."""
    plan = move_out_plan(rec)
    if not plan.after:
        return None

    def after(stacked: Dict[str, Tensor]) -> Dict[str, Tensor]:
        ctx = inputs.nested(plan.network, {key: frames[key] for key in plan.network.extern_data})
        for name in plan.stacked:
            ctx.preset(plan.network.layers[name], lambda value=stacked[name]: value)
        return {name: ctx.value(plan.network.layers[name]) for name in plan.after}

    return after


def _preset_shifted(ctx, network: MovedOutNetwork, initial_prev: Dict[str, Tensor], time: Dim) -> None:
    for path, layer in network.__dict__.get("shifted", {}).items():
        def shifted(layer=layer, first=initial_prev[path]) -> Tensor:
            x = ctx.value(layer.source)
            index = rf.range_over_dim(time)
            before = rf.gather(x, indices=rf.maximum(index - 1, 0), axis=time)
            return rf.where(rf.compare(index, "equal", 0), first, before)
        ctx.preset(layer, shifted)


def _make_plan(rec: LayerBase, enabled: bool) -> MoveOutPlan:
    body = rec.subnetwork
    own = [name for name in body.layers if name in body.net_dict]  # not extern data ("data:source")
    if not enabled:
        return MoveOutPlan(inside=own)
    time = rec.loop_dim()
    choices = _teacher_forced_choices(body, own)
    outside = _outside_network(rec, body, time, choices)
    plan = MoveOutPlan(outside)
    changed = True
    while changed:  # "prev:x" of a moved x may let more layers move: until nothing changes
        changed = False
        for name in own:
            if name not in plan.moved and _moves(name, body.layers[name], body, outside, plan.moved, time, choices):
                plan.moved.append(name)
                changed = True
    plan.inside = [name for name in own if name not in plan.moved]
    _plan_after(rec, body, plan, time, choices)
    return plan


def _outside_network(rec: LayerBase, body: LoopBody, time: Dim, choices: Dict[str, str]) -> MovedOutNetwork:
    net_dict = dict(body.net_dict)
    net_dict.update({name: {"class": "copy", "from": f"data:{key}"} for name, key in choices.items()})
    outside = MovedOutNetwork(net_dict, _whole_extern_data(rec, body, time), parent=rec.network, prefix=body.prefix)
    outside.owner = rec
    outside.notices = []  # building a copy says nothing new about the config
    outside.dim_memo = dict(body.dim_memo)  # the same Dims as in the loop; new ones stay here
    return outside


def _teacher_forced_choices(body: LoopBody, own: List[str]) -> Dict[str, str]:
    """Local name -> extern key of the target frame, for each `choice` of the body that does not search and has
    a target the loop reads frame by frame: its value is that frame."""
    found = {}
    for name in own:
        layer = body.layers[name]
        if layer.layer_class != "choice" or layer.opts.get("input_type") == "regression" or layer.searching():
            continue
        if layer.opts.get("target") is None:
            continue
        ref = target_reference(layer.opts["target"], layer.name)
        if ref.kind == DATA and ref.name in body.extern_data and ref.name != "source":
            found[name] = ref.name
    return found


def _body_inputs(layer: LayerBase, body: LoopBody):
    """(kind, local name) of each input of body layer `layer`: "prev" (of x), "step" (":i" or a layer nested in
    the body), "own" (a layer of the body), "outside" (extern frames, layers outside the loop)."""
    for dep in layer.dependencies():
        if isinstance(dep, PrevLayer) and dep.network is body:
            yield "prev", dep.of
        elif isinstance(dep, StepIndexLayer) or (dep.network is not body and body._contains(dep.network)):
            yield "step", None
        elif dep.network is body and dep.name[len(body.prefix):] in body.net_dict:
            yield "own", dep.name[len(body.prefix):]
        else:
            yield "outside", None


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


def _moves(name: str, layer: LayerBase, body, outside: MovedOutNetwork, moved: List[str], time,
           choices: Dict[str, str]) -> bool:
    """Whether body layer `name` moves out; if so, its outside copy is built in `outside`."""
    if has_step_state(layer):
        return False
    if name not in choices:  # (a teacher-forced choice reads only its target's frame)
        if not moves_out_of_loops(layer):
            return False
        for kind, local in _body_inputs(layer, body):
            if kind == "step" or (kind in ("prev", "own") and local not in moved):
                return False  # reads the step, or a layer that stays in the loop (or "prev:" of one)
    return _built_whole(name, layer, outside, time)


def _built_whole(name: str, layer: LayerBase, outside: MovedOutNetwork, time) -> bool:
    """Builds the outside copy of body layer `name`; False (and no copy) unless it is the layer over all steps."""
    try:
        copy = outside.get_layer(name)
    except ConfigError:
        outside.layers.pop(name, None)
        return False
    if _is_whole_sequence_of(copy, layer, time):
        return True
    del outside.layers[name]
    return False


def _plan_after(rec: LayerBase, body: LoopBody, plan: MoveOutPlan, time: Dim, choices: Dict[str, str]) -> None:
    """Finds the layers that run after the loop (see the module docstring) and builds their copies."""
    read_by_prev = {path.split("/", 1)[0] for path in body.prev_layers}
    inputs = {name: list(_body_inputs(body.layers[name], body)) for name in plan.inside}
    candidates = [name for name in plan.inside
                  if name != "end" and name not in read_by_prev and not has_step_state(body.layers[name])
                  and moves_out_of_loops(body.layers[name]) and all(kind != "step" for kind, _ in inputs[name])]
    outer = _dims_from_outside(body)
    while candidates:
        changed = True
        while changed:  # a layer read by one that stays in the loop stays too
            changed = False
            staying = [name for name in plan.inside if name not in candidates]
            read = {local for name in staying for kind, local in inputs[name] if kind in ("own", "prev")}
            # a layer whose size changes from step to step (a dim made in the loop) cannot be stacked
            unstackable = {name for name in staying if any(d.size is None and not d.is_batch and d not in outer
                                                          for d in body.layers[name].output.dims)}
            blocked = read | {name for name in candidates
                              if any(kind in ("own", "prev") and local in unstackable for kind, local in inputs[name])}
            if blocked & set(candidates):
                candidates = [name for name in candidates if name not in blocked]
                changed = True
        if not candidates:
            return
        outside = _outside_network(rec, body, time, choices)
        for name in plan.moved:
            outside.get_layer(name)
        stacked = [name for name in plan.inside if name not in candidates
                   and any(local == name for c in candidates for kind, local in inputs[c] if kind in ("own", "prev"))]
        for name in stacked:
            outside.layers[name] = StackedLayer(body.layers[name].name, outside,
                                                rec._stacked_template(body.layers[name].output, body.layers[name].name))
        failed = next((name for name in candidates if not _built_whole(name, body.layers[name], outside, time)), None)
        if failed is None:
            plan.network, plan.after, plan.stacked = outside, candidates, stacked
            plan.inside = [name for name in plan.inside if name not in candidates]
            return
        candidates = [name for name in candidates if name != failed]


def _dims_from_outside(body: LoopBody) -> List[Dim]:
    """The dims of the values the body's layers read from outside the loop (their sizes are the same at each step)."""
    dims: List[Dim] = []
    for layer in body.layers.values():
        for dep in layer.dependencies():
            if not body._contains(dep.network):
                dims.extend(d for d in dep.output.dims if d not in dims)
        if layer.network is body and layer.layer_class == "source":
            dims.extend(d for d in layer.output.dims if d not in dims)
    return dims


def _is_whole_sequence_of(copy: LayerBase, layer: LayerBase, time) -> bool:
    """Whether `copy` is `layer` with the loop's dim `time` added: same other dims, dtype, sparse dim, params."""
    out, step = copy.output, layer.output
    return (not step.has_dim(time) and set(out.dims) == set(step.dims) | {time} and out.dtype == step.dtype
            and out.sparse_dim == step.sparse_dim
            and {k: s.sizes for k, s in copy.params.items()} == {k: s.sizes for k, s in layer.params.items()})

