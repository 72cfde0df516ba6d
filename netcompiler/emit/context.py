"""`EmitContext`: one forward pass of one network, its layers' outputs as Tensors, computed on demand.

A layer's `emit(inputs)` gets a `LayerInputs`: its (concatenated) input, its
sources, its parameters and other layers' values, all as Tensors. A nested
network (a subnetwork; each step of a loop body) runs in a context of its own whose
parent is the context of the network around it; `value()` of a layer of
another network goes to that network's context. The run's sizes and masks are
in the `RunContext` (`netcompiler.frontend.run_ctx`) that the pass runs in.
"""

from __future__ import annotations

import functools
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

from .. import frontend as rf
from ..errors import TemplateMismatchError
from ..tensor import Data, Tensor


_RELEASE_PLANS: "weakref.WeakKeyDictionary[Any, tuple]" = weakref.WeakKeyDictionary()


def _release_plan(network, keep_only) -> Dict[int, List[int]]:
    """For `emit_all`: build-order index -> ids of the layers (not in `keep_only`) whose last reader that layer is;
    made once per network and `keep_only` (an eager step asks every step)."""
    keep = frozenset(id(layer) for layer in keep_only)
    known = _RELEASE_PLANS.get(network)
    if known is not None and known[0] == keep:
        return known[1]
    last_reader = {}
    if network.is_flat():
        for index, layer in enumerate(network.layers.values()):
            for dep in layer.dependencies():
                if id(dep) not in keep and dep.network is network:
                    last_reader[id(dep)] = index
    plan: Dict[int, List[int]] = {}
    for dep, index in last_reader.items():
        plan.setdefault(index, []).append(dep)
    _RELEASE_PLANS[network] = (keep, plan)
    return plan


@dataclass
class LoopState:
    """What one step of a loop body sees besides its frame input: "prev:x" values (by x's local path), ":i",
    and the step states of the layers that carry one (by layer name: `own` of the step before, `new_own` set
    in this step)."""

    prev: Dict[str, Tensor]
    step_index: Tensor
    own: Dict[str, Any] = field(default_factory=dict)
    new_own: Dict[str, Any] = field(default_factory=dict)


@dataclass
class SearchStep:
    """One step of beam search (every Tensor [batch x beam]): what the `choice` layer reads and what it sets."""

    beam: int
    scores: Tensor
    """Each hypothesis' summed score so far."""
    ended: Tensor
    lengths: Tensor
    after_choice: frozenset
    """Ids of the body's layers that read the choice of this step (directly or not): their values are in the
    order of the new hypotheses, the others' in the order of the step before."""
    rows: Optional[Tensor] = None
    """Set by the choice: the hypothesis (row) of the step before that each new one extends."""
    new_scores: Optional[Tensor] = None

    def in_new_order(self, layer, value: Tensor) -> Tensor:
        """`layer`'s value in the order of the new hypotheses (a value from before the choice is reordered)."""
        if self.rows is None or id(layer) in self.after_choice:
            return value
        return rf.gather_batch(value, self.rows)


class EmitContext:
    """The values of one network's layers in one forward pass (or in one step of a loop body)."""

    def __init__(self, network, run: rf.RunContext, params: Dict[str, Tensor], extern: Dict[str, Tensor],
                 parent: Optional["EmitContext"] = None, loop_state: Optional[LoopState] = None,
                 search: Optional[SearchStep] = None, shared=None):
        self.network = network
        self.shared = shared
        """The `equal_layers.SharedPass` of this pass's network (top level only), or None."""
        self.run = run
        self.params = params
        self.extern = extern
        """Extern data key -> Tensor; inside a nested network, what its "data" and "data:KEY" are."""
        self.parent = parent
        self.loop_state = loop_state
        self.search: Optional[SearchStep] = search if search is not None else \
            (parent.search if parent is not None and loop_state is None else None)
        self._outer: frozenset = frozenset(parent._contexts) if search is not None else \
            (parent._outer if parent is not None and loop_state is None else frozenset())
        """In beam search: the networks outside the loop (their values are per sequence, tiled per hypothesis)."""
        self._tiled: Dict[int, Tensor] = {} if search is not None or parent is None or loop_state is not None \
            else parent._tiled
        self._values: Dict[int, Tensor] = {}
        self.search_results: Dict[str, Dict[str, Any]] = {} if parent is None else parent.search_results
        """Loop name -> its beam after search (values [time, batch x beam] best first, lengths, scores)."""
        self._logits: Dict[int, Tensor] = {}
        self.logits_suffice: frozenset = frozenset()
        """Ids of softmax layers whose probabilities nothing in this pass reads (only their loss, from the logits):
        such a layer's value is its logits, under its output's template (set for eager train/eval steps)."""
        self._presets: Dict[int, Callable[[], Tensor]] = {}
        if loop_state is None:
            self._contexts: Dict[int, EmitContext] = {} if parent is None else parent._contexts
        else:  # every step is a context of its own; the body's layers resolve to this step's
            self._contexts = dict(parent._contexts)
        self._contexts[id(network)] = self

    @property
    def training(self) -> bool:
        return self.run.training

    def release(self) -> None:
        """Drops the layer outputs of this pass (of every network in it). A context refers to itself through
        `_contexts`, a reference cycle: without this, a train step's outputs stay in memory after the step
        until Python's cycle collector runs. (The autograd graph keeps what a backward pass needs.)"""
        for ctx in list(self._contexts.values()):
            ctx._values.clear()
            ctx._logits.clear()
            ctx._tiled.clear()
        self._contexts.clear()

    # --- values ------------------------------------------------------------------------------
    def value(self, layer) -> Tensor:
        """The output of `layer` (of this network or another one of the pass), emitting it if not done yet."""
        ctx = self._context_of(layer.network)
        if ctx is not self:
            if self.search is not None and id(layer.network) in self._outer:
                if id(layer) not in self._tiled:
                    self._tiled[id(layer)] = rf.tile_batch(ctx.value(layer), self.search.beam)
                return self._tiled[id(layer)]
            return ctx.value(layer)
        key = id(layer)
        if key not in self._values:
            if rf.current_run_ctx() is not self.run:
                with self.run:
                    return self.value(layer)
            backend = self.run.backend
            with backend.emission_scope_raw(), backend.name_scope_raw(_scope_name(layer.name)):
                y = self._presets[key]() if key in self._presets else self._emit(layer)
            self._values[key] = conform_to_template(layer, y, self.run.backend)
        return self._values[key]

    def _emit(self, layer) -> Tensor:
        if self.shared is not None and self.shared.covers(layer):
            y = self.shared.emit(self, layer)
            if y is not None:
                return y
        return layer.emit(LayerInputs(self, layer))

    def preset(self, layer, make_value: Callable[[], Tensor]) -> None:
        """Makes `make_value()` (called when first needed) the value of `layer` (of this network) instead of its
        emission: e.g. the frame of a loop layer computed outside the loop."""
        self._presets[id(layer)] = make_value

    def emit_all(self, keep_only=None) -> None:
        """Emits this network's layers in build order (dependencies first, so no deep recursion). With
        `keep_only` (layers; eager training), every other layer's output is dropped after its last reader
        (`dependencies`) ran, so that only what the backward pass saved stays in memory (on the torch
        Transformer 1.87 -> 1.46 GB peak); not in a network with nested networks (their layers read outer
        layers lazily). A dropped output asked for again is emitted again."""
        release = {} if keep_only is None else _release_plan(self.network, keep_only)
        for index, layer in enumerate(self.network.layers.values()):
            self.value(layer)
            for dep in release.get(index, ()):
                self._values.pop(dep, None)

    def nested(self, network, extern: Dict[str, Tensor]) -> "EmitContext":
        """The context of a network nested in this one (its extern data given), made on first use."""
        ctx = self._contexts.get(id(network))
        if ctx is None:
            ctx = EmitContext(network, self.run, self.params, extern, parent=self)
        return ctx

    def loop_step(self, body, frame: Dict[str, Tensor], prev: Dict[str, Tensor], step_index: Tensor,
                  own: Optional[Dict[str, Any]] = None, search: Optional[SearchStep] = None) -> "EmitContext":
        """A context for one step of the loop body `body` (a LoopBody nested in this network): "data:KEY" are the
        step's `frame` inputs, "prev:x" the values in `prev`, ":i" is `step_index`, `own` the step states of the
        step before; it runs in a child run context (sizes the step makes stay in the step; the outer sizes
        are seen). In beam search (`search`), the batch dim stands for batch x beam, and values from outside
        the loop are repeated per hypothesis."""
        run = self.run.child(beam=search.beam if search is not None else 1)
        return EmitContext(body, run, self.params, frame, parent=self,
                           loop_state=LoopState(prev, step_index, dict(own or {})), search=search)

    def value_for(self, user, layer) -> Tensor:
        """`layer`'s value as `user` reads it: in beam search, a value from before this step's choice is put in
        the order of the new hypotheses for a user after the choice."""
        value = self.value(layer)
        search = self.search
        if search is None or id(user) not in search.after_choice or layer.network is not self.network:
            return value
        return search.in_new_order(layer, value)

    def _context_of(self, network) -> "EmitContext":
        ctx = self._contexts.get(id(network))
        if ctx is not None:
            return ctx
        owner = getattr(network, "owner", None)
        if owner is None:
            raise TemplateMismatchError(f"network {network.prefix!r} is not part of this forward pass")
        self.value(owner)  # emitting the owner makes the nested context
        ctx = self._contexts.get(id(network))
        if ctx is None:
            raise TemplateMismatchError(f"layer {owner.name!r} did not run its nested network")
        return ctx

    def extern_value(self, key: str) -> Tensor:
        """The Tensor of extern data `key` (inside a nested network: what the owner gave it, else the parent's)."""
        if key in self.extern:
            return self.extern[key]
        if self.parent is not None:
            return self.parent.extern_value(key)
        raise TemplateMismatchError(f"no input was fed for extern data '{key}'")

    def param(self, layer, name: str) -> Tensor:
        """Parameter `name` of `layer`, with the dims of the layer's own spec (a parameter shared by
        `reuse_params` has the same sizes but its owner's dims)."""
        tensor = self.params[layer.param_full_name(name)]
        dims = tuple(layer.params[name].shape)
        return tensor if tensor.dims == dims else Tensor(Data(tensor.data.name, dims, tensor.dtype), tensor.raw)

    # --- logits of softmax outputs, for stable losses -------------------------------------------------
    def record_logits(self, layer, logits: Tensor) -> None:
        self._logits[id(layer)] = logits

    def logits_of(self, layer) -> Optional[Tensor]:
        ctx = self._context_of(layer.network)
        return ctx._logits.get(id(layer))


class LayerInputs:
    """What a layer's `emit` computes from: its input Tensors, its parameters, other layers' values."""

    def __init__(self, ctx: EmitContext, layer):
        self.ctx = ctx
        self.layer = layer

    @property
    def training(self) -> bool:
        return self.ctx.training

    @property
    def run(self) -> rf.RunContext:
        return self.ctx.run

    @property
    def loop_state(self) -> Optional[LoopState]:
        """In a step of a loop body: its "prev:" values and ":i"; else None."""
        return self.ctx.loop_state

    @property
    def step_state(self) -> Any:
        """In a loop step: this layer's step state of the step before (its `initial_step_state` at the first)."""
        state = self.loop_state
        if state is None or self.layer.name not in state.own:
            raise TemplateMismatchError(f"layer '{self.layer.name}' has no step state here (netcompiler bug: only a "
                                        f"layer in a loop body whose initial_step_state gave one has it)")
        return state.own[self.layer.name]

    def set_step_state(self, new: Any) -> None:
        """In a loop step: this layer's step state for the next step (the same nest as its initial one)."""
        self.loop_state.new_own[self.layer.name] = new

    @property
    def sources(self) -> List[Tensor]:
        return [self.ctx.value_for(self.layer, src) for src in self.layer.sources]

    @property
    def x(self) -> Tensor:
        """The sources concatenated on the feature dim (laid out as `layer.input_data`), with the layer's
        `dropout` applied in training."""
        layer = self.layer
        data = layer.input_data
        sources = self.sources
        if len(sources) == 1:
            x = sources[0]
        else:
            x = rf.concat(*[(s, s.feature_dim) for s in sources], out_dim=data.feature_dim)
            x = rf.permute(x, data.dims)
        return dropout(layer, x.with_data(data))

    def value(self, layer) -> Tensor:
        return self.ctx.value_for(self.layer, layer)

    @property
    def search(self) -> Optional[SearchStep]:
        """In a step of beam search: its state (the `choice` layer sets the new hypotheses there); else None."""
        return self.ctx.search

    def param(self, name: str) -> Tensor:
        return self.ctx.param(self.layer, name)

    def extern(self, key: str) -> Tensor:
        return self.ctx.extern_value(key)

    def set_size(self, dim, size: Tensor) -> None:
        """Records the sizes of a new dynamic dim this layer makes."""
        self.ctx.run.set_size(dim, size)

    def record_logits(self, logits: Tensor) -> None:
        self.ctx.record_logits(self.layer, logits)

    @property
    def logits_suffice(self) -> bool:
        """Whether this (softmax) layer may give its logits as its value: nothing in the pass reads the
        probabilities (`EmitContext.logits_suffice`)."""
        return id(self.layer) in self.ctx.logits_suffice

    def nested(self, network, extern: Dict[str, Tensor]) -> EmitContext:
        return self.ctx.nested(network, extern)


def dropout(layer, x: Tensor) -> Tensor:
    """The layer's `dropout` option on its input: `dropout_noise_shape` {axis: 1} shares the mask along an axis;
    `dropout_axis` names the axes the mask varies along (it is shared along all others)."""
    rate = float(layer.opts.get("dropout") or 0.0)
    if rate <= 0:
        return x
    varying = None
    spec = layer.opts.get("dropout_noise_shape")
    from ..tensor import resolve_dims

    if layer.opts.get("dropout_axis") is not None:  # RETURNN: the mask varies along these axes only
        varying = resolve_dims(x.data, layer.opts["dropout_axis"], layer=layer.name, option="dropout_axis")
    elif isinstance(spec, dict):
        shared = set()
        for desc, value in spec.items():
            if desc != "*" and value == 1:
                shared.update(resolve_dims(x.data, desc, layer=layer.name, option="dropout_noise_shape"))
        varying = [d for d in x.dims if d not in shared]
    return rf.dropout(x, rate, axis=varying, on_forward=bool(layer.opts.get("dropout_on_forward")))


@functools.lru_cache(maxsize=4096)
def _scope_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "_.-/" else "_" for c in name).strip("/") or "layer"


def conform_to_template(layer, y: Any, backend) -> Tensor:
    """`y` laid out as `layer.output`: its dims reordered to the template's if they are the same set, and the
    template's roles and name taken on; TemplateMismatchError if it disagrees in dims, rank, static sizes or
    dtype."""
    data: Data = layer.output
    if not isinstance(y, Tensor) or y.raw is None:
        raise TemplateMismatchError(f"layer '{layer.name}' ({layer.layer_class}) emitted {type(y).__name__}, "
                                    f"not a Tensor with a value")
    if y.dims != data.dims and set(y.dims) == set(data.dims) and len(y.dims) == len(data.dims):
        y = rf.permute(y, data.dims)
    problems = []
    if y.dims != data.dims:
        problems.append(f"dims {y.data.describe()} instead of {data.describe()}")
    shape = backend.get_known_shape_raw(y.raw)
    if len(shape) != data.batch_ndim:
        problems.append(f"rank {len(shape)} instead of {data.batch_ndim}")
    else:
        for axis, (dim, actual) in enumerate(zip(data.dims, shape)):
            if dim.size is not None and actual is not None and actual != dim.size:
                problems.append(f"axis {axis} has size {actual} instead of {dim.size} ({data.dim_label(dim)})")
    dtype = backend.dtype_name(y.raw)
    if dtype != data.dtype and not (data.dtype == "float32" and dtype == backend.autocast_dtype_name()):
        problems.append(f"dtype {dtype} instead of {data.dtype}")
    if problems:
        raise TemplateMismatchError(
            f"layer '{layer.name}' ({layer.layer_class}) disagrees with its template {data.describe()} "
            f"{data.dtype}: emitted {tuple(shape)} {dtype}: " + "; ".join(problems))
    return Tensor(data, y.raw)
