"""Running a loop body step by step: one `rf.while_loop` for every kind of loop.

`run_loop(ctx, plan)` runs the `LoopBody` of `plan` in `ctx` (the context of
the network around the loop). Each step is a context of its own
(`EmitContext.loop_step`) that sees the step's frames of the loop's inputs,
the "prev:" values, ":i" and the step states of the layers that carry one.

A loop runs over a known length (the sizes of its dim: an input's or a
target's), or until its `end` layer was true once for every sequence (bounded
by `max_len`); then the sizes of its dim are what the loop found. Past a
sequence's end its "prev:" values and step states stay unchanged, so they hold
each sequence's final values. The layers in `plan.collect` are stacked over
the loop's dim (zero past each sequence's end).

Step states: a layer whose `initial_step_state(inputs)` returns a nest of
Tensors (called once before the loop, in the outer context) reads its state of
the step before as `inputs.step_state` and sets the new one with
`inputs.set_step_state(...)` at every step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Union

from .. import frontend as rf
from ..errors import TemplateMismatchError
from ..layer_base import has_step_state
from ..tensor import Dim, Tensor, batch_dim
from .context import EmitContext, LayerInputs


@dataclass
class LoopPlan:
    """What `run_loop` needs: the body, the loop's dim, what each step reads and what the loop gives back."""

    body: Any
    """The LoopBody."""
    time: Dim
    """The loop's dim (its sizes are set by `run_loop` when the loop runs until `end`)."""
    frames: Dict[str, Tensor] = field(default_factory=dict)
    """Extern key -> a Tensor with `time`: inside, "data:KEY" is its frame at the step."""
    initial_prev: Dict[str, Tensor] = field(default_factory=dict)
    """Local path -> "prev:path" at the first step."""
    collect: Dict[str, Any] = field(default_factory=dict)
    """Name -> layer of the body whose per-step values are stacked over `time`."""
    end: Any = None
    """The body's layer 'end' when the loop runs until it; None for a loop over `time`'s known sizes."""
    max_len: Union[None, int, Tensor] = None
    """The bound of a loop that runs until `end` (None: unbounded)."""
    moved: Dict[str, Tensor] = field(default_factory=dict)
    """Name of a body layer -> its values of all steps (with `time`), computed outside the loop: in a step, the
    layer's value is their frame; stacked over the loop, they are used as they are."""


def run_loop(ctx: EmitContext, plan: LoopPlan) -> Dict[str, Tensor]:
    """Runs the loop; returns the stacked values of `plan.collect` by name, masked past each sequence's end."""
    body, time = plan.body, plan.time
    prev_layers = {path: body.get_layer(path, None, "from") for path in plan.initial_prev}
    stateful = [layer for layer in body.layers.values() if has_step_state(layer)]
    initial_own = {}
    for layer in stateful:
        state = layer.initial_step_state(LayerInputs(ctx, layer))
        if state is not None:
            initial_own[layer.name] = state
    until_end = plan.end is not None
    sizes = None if until_end else ctx.run.size(time)
    length = None if until_end else ctx.run.dim_value(time)
    zero = rf.convert_to_tensor(0, dtype="int32")
    stacked = {name: layer for name, layer in plan.collect.items() if name not in plan.moved}
    state = {"i": zero, "prev": dict(plan.initial_prev), "own": initial_own,
             "stacks": {name: rf.step_stack(layer.output) for name, layer in stacked.items()}}
    if until_end:
        state.update(ended=rf.full([batch_dim], False, dtype="bool"), lengths=rf.zeros([batch_dim], dtype="int32"))

    def more(s):
        if not until_end:
            return s["i"] < (length if isinstance(length, int) else Tensor(zero.data, length))
        going = rf.reduce(rf.cast(s["ended"], "int32"), mode="min", axis=batch_dim) < 1
        return going if plan.max_len is None else going & (s["i"] < plan.max_len)

    def step(s):
        i = s["i"]
        frame = {key: rf.gather(value, indices=i, axis=time) for key, value in plan.frames.items()}
        step_ctx = ctx.loop_step(body, frame, s["prev"], i, s["own"])
        for name, value in plan.moved.items():
            step_ctx.preset(body.layers[name], lambda value=value: rf.gather(value, indices=i, axis=time))
        for layer in stateful:
            step_ctx.value(layer)
        new = {"i": i + 1,
               "prev": {path: step_ctx.value(layer) for path, layer in prev_layers.items()},
               "own": _new_step_states(step_ctx, stateful, initial_own),
               "stacks": {name: rf.step_stack_write(s["stacks"][name], i, step_ctx.value(layer))
                          for name, layer in stacked.items()}}
        if until_end:
            valid = rf.logical_not(s["ended"] | step_ctx.value(plan.end))
            new.update(ended=rf.logical_not(valid), lengths=s["lengths"] + rf.cast(valid, "int32"))
        else:
            valid = None if isinstance(sizes, int) else i < sizes
        if valid is not None:
            new["prev"] = {path: _keep_past_end(valid, value, s["prev"][path]) for path, value in new["prev"].items()}
            new["own"] = {name: _keep_nest_past_end(valid, value, s["own"][name], _frozen(body.layers[name]))
                          for name, value in new["own"].items()}
        return new

    final = rf.while_loop(more, step, state)
    if until_end:
        ctx.run.set_size(time, final["lengths"])
    out = {name: rf.masked(rf.step_stack_stack(stack, time), [time], 0) for name, stack in final["stacks"].items()}
    out.update({name: rf.masked(plan.moved[name], [time], 0) for name in plan.collect if name in plan.moved})
    return out


def _new_step_states(step_ctx: EmitContext, stateful: List[Any], initial_own: Dict[str, Any]) -> Dict[str, Any]:
    new = step_ctx.loop_state.new_own
    missing = [name for name in initial_own if name not in new]
    if missing:
        raise TemplateMismatchError(f"layer '{missing[0]}' carries a step state but did not set the new one "
                                    f"(netcompiler bug: its emit must call inputs.set_step_state)")
    return {name: new[name] for name in initial_own}


def _frozen(layer) -> bool:
    return getattr(layer, "step_state_frozen_past_end", True)


def _keep_past_end(valid: Tensor, new: Tensor, old: Tensor) -> Tensor:
    """`new` where the sequence is still running, else `old` (Tensors without the batch dim: `new`)."""
    if batch_dim not in new.dims:
        return new
    return rf.permute(rf.where(valid, new, old), old.dims)


def _keep_nest_past_end(valid: Tensor, new: Any, old: Any, frozen: bool) -> Any:
    if not frozen:
        return new
    if isinstance(new, Tensor):
        return _keep_past_end(valid, new, old)
    if isinstance(new, dict):
        return {key: _keep_nest_past_end(valid, new[key], old[key], frozen) for key in new}
    return type(new)(_keep_nest_past_end(valid, a, b, frozen) for a, b in zip(new, old))
