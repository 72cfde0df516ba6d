"""`OpRecorder`: the outermost frontend op calls of one run, as the layers of a network dict to be.

It is set as the frontend's op recorder (`frontend._dispatch.set_op_recorder`) while a model runs once on a
probe batch. It knows which layer each Tensor of the run is: the run's inputs ("data", "data:KEY"), the model's
parameters (a `variable` layer each, made when first read) and the results of recorded ops. A recorded op keeps
its arguments with every Tensor replaced by an `InputRef` to its position in the layer's inputs.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

from ...errors import ConfigError
from ...tensor import Data, Dim, Tensor

UNSUPPORTED_OPS = frozenset({
    "while_loop", "cond", "map_tensors", "step_frame", "step_frames", "step_stack", "step_stack_stack",
    "step_stack_write", "with_dependencies", "parameter_assign", "backtrack", "beam_step", "assert_equal",
})
"""Ops the layer-dict backend cannot turn into layers yet (loops, conditions, side effects such as updating
running statistics with `Parameter.assign`). `rf.scan` becomes a `rec` layer (`loop_recorder.py`)."""


class LayerDictUnsupported(ConfigError):
    """The model does something the layer-dict backend cannot express as a layer dict (yet)."""


@dataclass(frozen=True)
class InputRef:
    """Stands for the `index`-th input layer of a recorded op in its recorded arguments."""

    index: int

    def __repr__(self):
        return f"<input {self.index}>"


@dataclass
class RecordedOp:
    """One outermost op call: `op(*args, **kwargs)` on the outputs of the layers `inputs`; the layer's value is
    the result's element at `output_path` (() for a single Tensor), laid out as `template`."""

    name: str
    op: Callable
    inputs: List[str]
    args: tuple
    kwargs: Dict[str, Any]
    output_path: Tuple[int, ...]
    template: Data
    input_templates: List[Data] = field(default_factory=list)
    call: int = 0
    """Which recorded call this is (the layers of the outputs of one call share it: the call runs once)."""
    entry: Optional[Dict[str, Any]] = None
    """The layer dict itself where the layer is no op run again (the `rec` layer of an `rf.scan`)."""

    @property
    def op_name(self) -> str:
        return self.op.__name__

    def call_text(self) -> str:
        """The call as dump-net shows it: `rf.matmul(data, layer1.weight, reduce='in'(9))` (inputs by layer)."""
        def input_name(value: Any) -> Optional[str]:
            return self.inputs[value.index] if isinstance(value, InputRef) else None

        path = "".join(f"[{i}]" for i in self.output_path)
        return _call_text(self.op_name, self.args, self.kwargs, input_name) + path

    @property
    def op_path(self) -> str:
        """"module:function", as the generic layer's `op` option names it."""
        return f"{self.op.__module__}:{self.op.__name__}"


@dataclass
class RecordedParam:
    """A model parameter that an op read: its checkpoint name, template and trainability."""

    layer: str
    name: str
    template: Data
    trainable: bool


@dataclass
class OpRecorder:
    """See the module docstring. `params`: checkpoint name -> raw parameter; `param_layer_name` maps a checkpoint
    name to its layer's name; `is_trainable(raw)` says whether a parameter is trained."""

    params: Dict[str, Any]
    param_layer_name: Callable[[str], str]
    is_trainable: Callable[[Any], bool] = lambda raw: True
    module_paths: Dict[int, str] = field(default_factory=dict)
    """id(module) -> its attribute path in the model ("layer1"): an op called in that module's code is named
    "layer1.matmul" (the innermost module on the call stack names it; ops outside every module keep the op's
    name)."""
    ops: Dict[str, RecordedOp] = field(default_factory=dict)
    used_params: Dict[str, RecordedParam] = field(default_factory=dict)
    _by_tensor: Dict[int, Tuple[Tensor, str]] = field(default_factory=dict)
    _by_raw: Dict[int, List[Tuple[Any, str, Data]]] = field(default_factory=dict)
    _counts: Dict[str, int] = field(default_factory=dict)
    parent: Optional["OpRecorder"] = None
    """The recorder of the run around a loop's step: values it knows are "base:<its layer>" here."""
    delegate: Optional["OpRecorder"] = None
    """While a loop's step is recorded, the recorder its op calls go to."""
    unit_ops: Dict[str, Dict[str, RecordedOp]] = field(default_factory=dict)
    """Loop layer -> the recorded ops of its unit."""
    calls: List[str] = field(default_factory=list)
    """Every recorded call as text, with its arguments (Tensors as "<T>"), also those that returned an input
    (dropout outside training): what two runs of the same model code must have in common."""

    def __post_init__(self):
        self._params_by_raw = {id(raw): (name, raw) for name, raw in self.params.items()}

    # --- what the run starts from -----------------------------------------------------------------------
    def add_input(self, key: str, tensor: Tensor) -> None:
        """Extern data `key` of the run: the layer "data" (key "data") or "data:KEY"."""
        self._remember(tensor, "data" if key == "data" else f"data:{key}")

    def templates(self) -> Dict[str, Data]:
        """Layer name -> its recorded template, for every op layer."""
        return {name: op.template for name, op in self.ops.items()}

    # --- the recording ---------------------------------------------------------------------------------------
    def __call__(self, op: Callable, args: tuple, kwargs: Dict[str, Any], result: Any) -> Any:
        """Records one outermost op call (see `frontend._dispatch.set_op_recorder`); returns its result."""
        if self.delegate is not None:
            return self.delegate(op, args, kwargs, result)
        if op.__name__ == "scan" and self.parent is not None:
            raise LayerDictUnsupported(
                "rf.scan inside the step of an rf.scan (a nested loop) is not supported on the layer-dict backend "
                "yet", subject="the model's train_step",
                suggestion="run this model with backend 'torch', or on TensorFlow without the layer dict")
        if op.__name__ == "scan":
            from .loop_recorder import record_scan

            self.calls.append("rf.scan")
            record_scan(self, op, args, kwargs, result)
            return result
        if op.__name__ == "parameter_assign":
            raise self._parameter_assign_refusal(args, kwargs)
        if op.__name__ in UNSUPPORTED_OPS:
            raise LayerDictUnsupported(
                f"rf.{op.__name__} is not supported on the layer-dict backend yet (loops of unknown length, "
                f"conditions and in-place updates do not become layers; rf.scan over a dim does: a rec layer)",
                subject="the model's train_step",
                suggestion="run this model with backend 'torch', or on TensorFlow without the layer dict")
        outputs = list(_tensor_leaves(result, ()))
        if not outputs:
            return result
        self._check_functions(op, (args, kwargs))
        self.calls.append(_call_text(op.__name__, _map_tensors(args, lambda t: _TENSOR),
                                     _map_tensors(kwargs, lambda t: _TENSOR), lambda v: None))
        given = {id(t) for _, t in _tensor_leaves((args, kwargs), ())}
        inputs: List[str] = []
        templates: List[Data] = []
        args = _map_tensors(args, lambda t: self._input_ref(t, inputs, templates, op))
        kwargs = _map_tensors(kwargs, lambda t: self._input_ref(t, inputs, templates, op))
        for path, tensor in outputs:
            if id(tensor) in self._by_tensor or id(tensor) in given:
                continue  # the op returned one of its inputs (e.g. a cast to the same dtype)
            name = self._new_name(self._module_prefix() + op.__name__)
            self.ops[name] = RecordedOp(name, op, list(inputs), args, kwargs, path, tensor.data, list(templates),
                                        len(self.calls))
            self._remember(tensor, name)
        return result

    def _parameter_assign_refusal(self, args: tuple, kwargs: Dict[str, Any]) -> LayerDictUnsupported:
        """Why an in-place parameter update (`Parameter.assign`, e.g. rf.BatchNorm's running statistics) keeps the
        model off the layer dict: which parameter, where, and what to do."""
        param = args[0] if args else kwargs.get("param")
        known = self._params_by_raw.get(id(getattr(param, "raw", None)))
        name = repr(known[0]) if known else "a parameter"
        where = self._module_prefix().rstrip(".")
        return LayerDictUnsupported(
            f"rf.parameter_assign is not supported on the layer-dict backend: model code{f' in {where!r}' if where else ''} "
            f"updates {name} in place (as rf.BatchNorm does with its running statistics in training). A layer dict "
            f"has no in-place updates of variable layers, and such a module also computes other things in training "
            f"(the batch's statistics) than in evaluation (the running ones), which one layer dict cannot hold",
            subject="the model's train_step",
            suggestion="compile-net then runs the model directly on TensorFlow (the same numbers); for the layer dict "
                       "use rf.BatchNorm(..., track_running_stats=False) (always the batch's statistics) or "
                       "rf.LayerNorm")

    @staticmethod
    def _check_functions(op: Callable, nest: Any) -> None:
        """A function passed to an op is kept in the layer and called again at each run: only functions that a
        frontend module holds by their name (rf.sigmoid) can be; model code's functions (lambdas, closures) could
        read values of the probe run, so they are refused."""
        for value in _leaves(nest):
            if not callable(value) or isinstance(value, (type, Dim, Tensor)):
                continue
            module, qualname = getattr(value, "__module__", "") or "", getattr(value, "__qualname__", "")
            home = sys.modules.get(module) if module.startswith("netcompiler.frontend") else None
            held = getattr(home, getattr(value, "__name__", ""), None) if home is not None else None
            if held is None or value not in (held, getattr(held, "__recorded_op__", None)):  # (wrapped or not)
                raise LayerDictUnsupported(
                    f"rf.{op.__name__} is given the function {qualname or value!r} of model code, which the "
                    f"layer-dict backend cannot keep in a layer (it could read values of the recording run)",
                    subject="the model's train_step",
                    suggestion="apply the function to the op's result instead, or pass a function of rf")

    def layer_of(self, tensor: Tensor, what: str = "a value") -> str:
        """The layer that `tensor` (a Tensor of this run) is; a LayerDictUnsupported error if none is."""
        entry = self._by_tensor.get(id(tensor))
        if entry is not None:
            return entry[1]
        raw = tensor.raw
        known = self._by_raw.get(id(raw))
        if known:
            for _, name, data in known:  # the same value with other roles (Tensor.copy(feature_dim=...))
                if data.dims == tensor.dims and data.dtype == tensor.dtype and data.sparse_dim == tensor.sparse_dim:
                    return name
            _, name, data = known[0]
            raise LayerDictUnsupported(
                f"{what} {tensor.data.describe()} is the value of layer '{name}' {data.describe()} with other dims "
                f"(made with Tensor.copy/with_data, not with an op)", subject="the model's train_step",
                suggestion="change dims with rf.replace_dim or rf.permute")
        param = self._params_by_raw.get(id(raw))
        if param is not None:
            return self._param_layer(param[0], tensor)
        if self.parent is not None:
            return "base:" + self.parent.layer_of(tensor, what)
        raise LayerDictUnsupported(
            f"{what} {tensor.data.describe()} was not made by a frontend op (e.g. a Tensor made from a raw "
            f"framework tensor), so it is no layer", subject="the model's train_step",
            suggestion="compute it with rf ops from the inputs and parameters")

    def _input_ref(self, tensor: Tensor, inputs: List[str], templates: List[Data], op: Callable):
        if tensor.raw is None:
            return tensor  # a template: stays an argument
        name = self.layer_of(tensor, f"an input of rf.{op.__name__}")
        inputs.append(name)
        templates.append(tensor.data)
        return InputRef(len(inputs) - 1)

    def _param_layer(self, name: str, tensor: Tensor) -> str:
        layer = self.param_layer_name(name)
        if layer not in self.used_params:
            self.used_params[layer] = RecordedParam(layer, name, tensor.data, self.is_trainable(tensor.raw))
            self._remember(tensor, layer)
        return layer

    def _module_prefix(self) -> str:
        """"<path>." of the innermost model module whose method is on the call stack, else ""."""
        if not self.module_paths:
            return ""
        frame = sys._getframe(1)
        while frame is not None:
            owner = frame.f_locals.get("self")
            path = self.module_paths.get(id(owner)) if owner is not None else None
            if path:
                return f"{path}."
            frame = frame.f_back
        return ""

    def _remember(self, tensor: Tensor, name: str) -> None:
        self._by_tensor[id(tensor)] = (tensor, name)
        if tensor.raw is not None:
            self._by_raw.setdefault(id(tensor.raw), []).append((tensor.raw, name, tensor.data))

    def _new_name(self, base: str) -> str:
        count = self._counts.get(base, 0)
        self._counts[base] = count + 1
        return base if count == 0 else f"{base}_{count}"


def _tensor_leaves(value: Any, path: Tuple[int, ...]):
    """(path, Tensor) of every Tensor with a value in a nest of lists, tuples and dicts (dicts by sorted key)."""
    if isinstance(value, Tensor):
        if value.raw is not None:
            yield path, value
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _tensor_leaves(item, path + (i,))
    elif isinstance(value, dict):
        for key in sorted(value):  # the order of tensor.nest (rf.scan packs its state so)
            yield from _tensor_leaves(value[key], path + (key,))


class _TensorMark:
    def __repr__(self):
        return "<T>"


_TENSOR = _TensorMark()


def _call_text(op_name: str, args: tuple, kwargs: Dict[str, Any], special: Callable[[Any], Optional[str]]) -> str:
    """`rf.NAME(arg, key=value)`: Dims by their short form, nests as lists, `special(value)` where it gives text."""
    def text(value: Any) -> str:
        shown = special(value)
        if shown is not None:
            return shown
        if isinstance(value, Dim):
            return value.short_repr()
        if isinstance(value, (list, tuple)):
            return "[" + ", ".join(text(v) for v in value) + "]"
        return repr(value)

    parts = [text(a) for a in args] + [f"{k}={text(v)}" for k, v in kwargs.items()]
    return f"rf.{op_name}({', '.join(parts)})"


def _leaves(value: Any):
    """Every non-container value in a nest of lists, tuples and dicts."""
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from _leaves(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    else:
        yield value


def _map_nest(value: Any, is_leaf: Callable[[Any], bool], fn: Callable[[Any], Any]) -> Any:
    """`value` with every leaf (`is_leaf`) replaced by fn(leaf); lists, tuples (named too) and dicts are rebuilt."""
    if is_leaf(value):
        return fn(value)
    if isinstance(value, (list, tuple)):
        items = [_map_nest(item, is_leaf, fn) for item in value]
        return type(value)(items) if not hasattr(value, "_fields") else type(value)(*items)
    if isinstance(value, dict):
        return {key: _map_nest(item, is_leaf, fn) for key, item in value.items()}
    return value


def _map_tensors(value: Any, fn: Callable[[Tensor], Any]) -> Any:
    """`value` with every Tensor replaced by fn(Tensor)."""
    return _map_nest(value, lambda v: isinstance(v, Tensor), fn)


def pick(value: Any, path: Tuple[Any, ...]) -> Any:
    """The element of a nested result at `path`."""
    for key in path:
        value = value[key]
    return value


def substitute_inputs(value: Any, inputs: List[Tensor]) -> Any:
    """Recorded arguments with each `InputRef` replaced by the input Tensor it stands for."""
    return _map_nest(value, lambda v: isinstance(v, InputRef), lambda ref: inputs[ref.index])
