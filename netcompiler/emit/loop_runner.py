"""Running a loop body step by step: one `rf.while_loop` for every kind of loop.

`run_loop(ctx, plan)` runs the `LoopBody` of `plan` in `ctx` (the context of
the network around the loop). Each step is a context of its own
(`EmitContext.loop_step`) that sees the step's frames of the loop's inputs,
the "prev:" values, ":i" and the step states of the layers that carry one.

A loop runs over a known length (the sizes of its dim: an input's or a
target's), or until its `end` layer was true once for every sequence (bounded
by `max_len`); then the sizes of its dim are what the loop found. Past a
sequence's end the step computes on (a batch runs as long as its longest
sequence); the layers in `plan.collect` are stacked over the loop's dim and
zero past each sequence's end.

Step states: a layer whose `initial_step_state(inputs)` returns a nest of
Tensors (called once before the loop, in the outer context) reads its state of
the step before as `inputs.step_state` and sets the new one with
`inputs.set_step_state(...)` at every step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Union

from .. import frontend as rf
from ..errors import TemplateMismatchError
from ..layer_base import has_step_state
from ..tensor import Data, Dim, Tensor, batch_dim
from .context import EmitContext, LayerInputs, SearchStep


@dataclass
class SearchPlan:
    choice: Any
    """The body's choice layer that searches."""
    beam: int


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
    search: Optional["SearchPlan"] = None
    """Beam search in this loop (its choice layer and beam size); None: one hypothesis per sequence."""
    name: str = "loop"
    """The loop's name (the rec layer's): the key of its beam in `ctx.search_results`."""
    moved: Dict[str, Tensor] = field(default_factory=dict)
    """Name of a body layer -> its values of all steps (with `time`), computed outside the loop: in a step, the
    layer's value is their frame; stacked over the loop, they are used as they are."""
    after: Optional[Callable[[Dict[str, Tensor]], Dict[str, Tensor]]] = None
    """Computes layers of the body once after the loop: from the stacked values (of `collect`, by name) to theirs
    over all steps (by name; masked past each sequence's end like the stacked ones)."""


def run_loop(ctx: EmitContext, plan: LoopPlan) -> Dict[str, Tensor]:
    """Runs the loop; returns the stacked values of `plan.collect` by name, masked past each sequence's end.
    In search: those of the best hypothesis of each sequence (the whole beam is in `ctx.search_results`)."""
    return _LoopRun(ctx, plan).run()


class _LoopRun:
    """One run of a loop: its state from step to step, the step, and what the loop gives back."""

    def __init__(self, ctx: EmitContext, plan: LoopPlan):
        self.ctx, self.plan, self.body, self.time = ctx, plan, plan.body, plan.time
        self.prev_layers = {path: self.body.get_layer(path, None, "from") for path in plan.initial_prev}
        self.stateful = {layer.name: layer for layer in self.body.layers.values() if has_step_state(layer)}
        self.stacked = {name: layer for name, layer in plan.collect.items() if name not in plan.moved}
        self.until_end = plan.end is not None
        self.searching = plan.search is not None
        self.beam = plan.search.beam if self.searching else 1
        # read one frame per step (rf.step_frame: a gather's gradient would be all frames at every step)
        self.frames = {key: rf.step_frames(rf.tile_batch(value, self.beam), self.time)
                       for key, value in plan.frames.items()}
        self.moved_frames = {name: rf.step_frames(value, self.time) for name, value in plan.moved.items()}
        self.after_choice = _after_choice(self.body, plan.search.choice) if plan.search is not None else frozenset()

    # --- the state ------------------------------------------------------------------------------------
    def initial_state(self) -> Dict[str, Any]:
        ctx, plan = self.ctx, self.plan
        own = {}
        for layer in self.stateful.values():
            value = layer.initial_step_state(LayerInputs(ctx, layer))
            if value is not None:
                own[layer.name] = value
        state = {"i": rf.convert_to_tensor(0, dtype="int32"), "prev": dict(plan.initial_prev), "own": own}
        if self.until_end or self.searching:
            state.update(ended=rf.full([batch_dim], False, dtype="bool"), lengths=rf.zeros([batch_dim], dtype="int32"))
        if self.searching:  # every hypothesis starts as its sequence
            state = rf.map_tensors(lambda t: rf.tile_batch(t, self.beam), state)
            state["scores"] = rf.initial_scores(self.beam)
        state["stacks"] = {name: rf.step_stack(layer.output) for name, layer in self.stacked.items()}
        if self.searching:
            state["stacks"]["<rows>"] = rf.step_stack(Data("beam_rows", [batch_dim], "int32"))
        return state

    def more(self, s) -> Tensor:
        if not self.until_end:
            length = self.length
            return s["i"] < (length if isinstance(length, int) else Tensor(s["i"].data, length))
        going = rf.reduce(rf.cast(s["ended"], "int32"), mode="min", axis=batch_dim) < 1
        return going if self.plan.max_len is None else going & (s["i"] < self.plan.max_len)

    # --- one step ---------------------------------------------------------------------------------------
    def step(self, s) -> Dict[str, Any]:
        plan, body, i = self.plan, self.body, s["i"]
        frame = {key: rf.step_frame(frames, i) for key, frames in self.frames.items()}
        search = None
        if self.searching:
            search = SearchStep(self.beam, s["scores"], s["ended"], s["lengths"], self.after_choice)
        step_ctx = self.ctx.loop_step(body, frame, s["prev"], i, s["own"], search=search)
        for name, frames in self.moved_frames.items():
            step_ctx.preset(body.layers[name], lambda frames=frames: rf.step_frame(frames, i))
        if search is not None:
            step_ctx.value(plan.search.choice)  # the new hypotheses: values after it are in their order
        for layer in self.stateful.values():
            step_ctx.value(layer)

        def new_value(layer) -> Tensor:
            return self._in_new_order(layer, step_ctx.value(layer), search)

        old = s if search is None else rf.map_tensors(lambda t: rf.gather_batch(t, search.rows),
                                                    {k: s[k] for k in ("prev", "own", "ended", "lengths")})
        new = {"i": i + 1,
               "prev": {path: new_value(layer) for path, layer in self.prev_layers.items()},
               "own": {name: self._own_in_new_order(name, value, search)
                       for name, value in _new_step_states(step_ctx, s["own"]).items()},
               "stacks": {name: rf.step_stack_write(s["stacks"][name], i, new_value(layer))
                          for name, layer in self.stacked.items()}}
        if search is not None:
            new["scores"] = search.new_scores
            new["stacks"]["<rows>"] = rf.step_stack_write(s["stacks"]["<rows>"], i, search.rows)
        if "ended" in s:  # (a sequence's values past its end are computed on, and masked in the result)
            if self.until_end:
                running = rf.logical_not(old["ended"] | new_value(plan.end))
            elif isinstance(self.sizes, int):
                running = rf.full([batch_dim], True, dtype="bool")
            else:
                running = i < rf.tile_batch(self.sizes, self.beam)
            new.update(ended=rf.logical_not(running), lengths=old["lengths"] + rf.cast(running, "int32"))
        return new

    def _own_in_new_order(self, name: str, state: Any, search: Optional[SearchStep]) -> Any:
        layer = self.stateful[name]

        def reorder(value: Tensor) -> Tensor:
            return self._in_new_order(layer, value, search)

        return rf.map_tensors(reorder, state)

    @staticmethod
    def _in_new_order(layer, value: Tensor, search: Optional[SearchStep]) -> Tensor:
        return value if search is None else search.in_new_order(layer, value)

    # --- the result ---------------------------------------------------------------------------------------
    def run(self) -> Dict[str, Tensor]:
        plan, time = self.plan, self.time
        if not self.until_end:  # computed before the loop: sizes made inside it cannot be read after it
            self.sizes, self.length = self.ctx.run.size(time), self.ctx.run.dim_value(time)
        for dim in _dims_read_from_outside(self.body):
            self.ctx.run.keep_mask(dim)  # made once, not at every step
        final = rf.while_loop(self.more, self.step, self.initial_state())
        stacks = {name: rf.step_stack_stack(stack, time) for name, stack in final["stacks"].items()}
        if self.searching:
            stacks = self._best_hypotheses(final, stacks)
        elif self.until_end:
            self.ctx.run.set_size(time, final["lengths"])
        out = {name: rf.masked(value, [time], 0) for name, value in stacks.items()}
        out.update({name: rf.masked(plan.moved[name], [time], 0) for name in plan.collect if name in plan.moved})
        if plan.after is not None and not self.searching:
            out.update({name: rf.masked(value, [time], 0) for name, value in plan.after(out).items()})
        return out

    def _best_hypotheses(self, final: Dict[str, Any], stacks: Dict[str, Tensor]) -> Dict[str, Tensor]:
        """Follows each final hypothesis back through the steps; records the sorted beam in
        `ctx.search_results[plan.name]` and returns the best hypothesis of each sequence (setting the sizes
        of the loop's dim to its lengths)."""
        beam, time = self.beam, self.time
        choice = self.plan.search.choice
        rank = final["scores"]
        if choice.opts["length_normalization"]:
            labels = final["lengths"] + rf.cast(final["ended"], "int32")  # the end label was scored too
            rank = rank / rf.maximum(rf.cast(labels, "float32"), 1.0) ** float(
                choice.opts["length_normalization_exponent"])
        order = rf.sort_beams(rank, beam)
        path = rf.backtrack(stacks.pop("<rows>"), time, final["i"], order)
        beams = {name: rf.gather(value, indices=path, axis=batch_dim) for name, value in stacks.items()}
        lengths, scores = rf.gather_batch(final["lengths"], order), rf.gather_batch(final["scores"], order)
        self.ctx.search_results[self.plan.name] = {"values": beams, "lengths": lengths, "scores": scores,
                                                   "beam": beam, "time": time}
        best = rf.best_rows(beam)
        self.ctx.run.set_size(time, rf.gather_batch(lengths, best))
        return {name: rf.gather_batch(value, best) for name, value in beams.items()}


def _dims_read_from_outside(body) -> List[Dim]:
    """The dynamic dims (not batch) of the values the body's layers read from outside the loop."""
    dims: List[Dim] = []
    for layer in body.layers.values():
        for dep in layer.dependencies():
            if dep.network is body or getattr(dep.network, "parent", None) is body:
                continue
            dims.extend(d for d in dep.output.dims if d.size is None and not d.is_batch and d not in dims)
    return dims


def _after_choice(body, choice) -> frozenset:
    """Ids of the body's layers that read `choice` in the same step (directly or through others), and its own."""
    found = {id(choice)}
    for layer in body.layers.values():  # in build order: a layer's inputs come before it
        if any(id(dep) in found for dep in layer.dependencies()):
            found.add(id(layer))
    return frozenset(found)


def _new_step_states(step_ctx: EmitContext, own: Dict[str, Any]) -> Dict[str, Any]:
    new = step_ctx.loop_state.new_own
    missing = [name for name in own if name not in new]
    if missing:
        raise TemplateMismatchError(f"layer '{missing[0]}' carries a step state but did not set the new one "
                                    f"(netcompiler bug: its emit must call inputs.set_step_state)")
    return {name: new[name] for name in own}
