"""`record_scan`: an outermost `rf.scan` call as a `rec` layer whose `unit` dict holds the step's recorded ops.

The step function runs once more with a recorder of its own (`OpRecorder` with `parent`): the carried state as
"prev:state<k>" (initial value: the layer of the initial state, `initial_output`), the first scanned input's
frame as "data:source" (the rec layer's `from`, iterated over `spatial_dim` by its `axis`), any further scanned
input read at the step with a gather at ":i", and every other value (parameters, layers of the model) as
"base:<layer>". Unit layer "state<k>" is the new state in the initial state's dim order (an output layer of
the unit, so that the loop body builds it before "scan/state<k>" is read from outside); "output" is state0.

`rf.scan` keeps a sequence's state past its length, the rec layer gives zeros there: each of scan's results
(final and stacked state) is a `frontend_scan_state` layer (`layers/frontend_op.py`) that rebuilds it from the
rec layer's stacked state, exactly. Supported: any nest of state Tensors and scanned Tensors over a dim of the
run; the step may call any recorded op, but no loop, condition or in-place update (refused as outside).
"""

from __future__ import annotations

from typing import Any, Dict, List

from ...tensor import Tensor
from ...tensor.nest import pack_tensors
from .dict_builder import generic_entry
from .recorder import InputRef, LayerDictUnsupported, OpRecorder, RecordedOp, _tensor_leaves

SCAN_STATE_CLASS = "frontend_scan_state"
"""The layer class that makes one of scan's results from the rec layer's stacked state."""


def _arguments(args: tuple, kwargs: Dict[str, Any]):
    names = ("step", "xs", "spatial_dim", "initial")
    bound = dict(zip(("step",), args))
    bound.update(kwargs)
    missing = [n for n in names if n not in bound]
    if missing:
        raise LayerDictUnsupported(f"rf.scan called without {missing}", subject="the model's train_step",
                                   suggestion="call rf.scan(step, xs=..., spatial_dim=..., initial=...)")
    return [bound[n] for n in names]


def record_scan(recorder: OpRecorder, op, args: tuple, kwargs: Dict[str, Any], result: Any) -> None:
    """Adds the rec layer of one `rf.scan` call and a layer per Tensor of its result to `recorder`."""
    from ...backends import backend_of

    step, xs, spatial_dim, initial = _arguments(args, kwargs)
    frames = [t for _, t in _tensor_leaves(xs, ())]
    states = list(_tensor_leaves(initial, ()))
    if not frames:
        raise LayerDictUnsupported("rf.scan over no Tensor", subject="the model's train_step",
                                   suggestion="give rf.scan the Tensor(s) to scan as xs")
    name = recorder._new_name(recorder._module_prefix() + "scan")
    outer = [recorder.layer_of(x, "a scanned input of rf.scan") for x in frames]
    init_layers = [recorder.layer_of(s, "an initial state of rf.scan") for _, s in states]
    backend = backend_of(frames[0].raw)
    zero = backend.convert_to_raw(0, "int32")

    unit_rec = OpRecorder({}, recorder.param_layer_name, recorder.is_trainable, recorder.module_paths,
                          parent=recorder)
    frame_tensors = []
    unit: Dict[str, Dict[str, Any]] = {}
    for j, x in enumerate(frames):
        frame = Tensor(x.data.copy_without_dims([spatial_dim]), backend.gather_raw(x.raw, zero, x.axis_of(spatial_dim), 0))
        frame_tensors.append(frame)
        if j == 0:
            unit_rec.add_input("source", frame)
            continue
        unit[f"frame{j}"] = {"class": "frontend_op", "from": [f"base:{outer[j]}", ":i"],
                             "op": "netcompiler.frontend.array:gather", "args": [InputRef(0)],
                             "kwargs": {"indices": InputRef(1), "axis": spatial_dim}, "template": frame.data}
        unit_rec._remember(frame, f"frame{j}")
    prev = []
    for k, (_, s) in enumerate(states):
        tensor = Tensor(s.data, backend.stop_gradient_raw(s.raw))
        unit_rec._remember(tensor, f"prev:state{k}")
        prev.append(tensor)
    new = _run_step(recorder, unit_rec, step, xs, initial, frame_tensors, prev, [p for p, _ in states])
    recorder.calls.extend(f"  step: {call}" for call in unit_rec.calls)
    for k, ((_, s), value) in enumerate(zip(states, new)):
        source = unit_rec.layer_of(value, f"the new state {k} of rf.scan's step")
        unit[f"state{k}"] = {"class": "frontend_op", "from": [source], "op": "netcompiler.frontend.array:permute",
                             "args": [InputRef(0), list(s.dims)], "kwargs": {}, "template": s.data,
                             "initial_output": f"base:{init_layers[k]}", "is_output_layer": True}
    for unit_name, unit_op in unit_rec.ops.items():
        unit[unit_name] = generic_entry(unit_op)
    unit["output"] = {"class": "copy", "from": ["state0"]}
    reads = sorted({ref[len("base:"):] for entry in unit.values() for ref in entry.get("from", [])
                    if ref.startswith("base:")} | set(init_layers) | set(outer))
    rec_entry = {"class": "rec", "from": [outer[0]], "axis": spatial_dim, "unit": unit}
    recorder.ops[name] = RecordedOp(name, op, reads, args, kwargs, (), frames[0].data, [], len(recorder.calls),
                                    entry=rec_entry)
    recorder.unit_ops[name] = unit_rec.ops
    for path, tensor in _tensor_leaves(result, ()):
        which, sub = path[0], path[1:]
        k = next(i for i, (p, _) in enumerate(states) if p == sub)
        out = recorder._new_name(f"{name}_{'final' if which == 0 else 'stacked'}")
        entry = {"class": SCAN_STATE_CLASS, "from": [name, f"{name}/state{k}", init_layers[k]], "spatial_dim": spatial_dim,
                 "final": which == 0, "template": tensor.data}
        recorder.ops[out] = RecordedOp(out, op, [name, init_layers[k]], args, kwargs, path, tensor.data, [],
                                       len(recorder.calls), entry=entry)
        recorder._remember(tensor, out)


def _run_step(recorder: OpRecorder, unit_rec: OpRecorder, step, xs, initial, frames: List[Tensor],
              prev: List[Tensor], paths: List[tuple]) -> List[Tensor]:
    """The step run once on (prev, frames) with the op calls going to `unit_rec`: the new state, in the order
    of `paths` (where each state Tensor is in the nest)."""
    recorder.delegate = unit_rec
    try:
        out = step(pack_tensors(initial, prev), pack_tensors(xs, frames))
    finally:
        recorder.delegate = None
    new = dict(_tensor_leaves(out, ()))
    if set(new) != set(paths):
        raise LayerDictUnsupported(f"rf.scan's step returned a state with Tensors at {sorted(new)}, the initial "
                                   f"state has them at {sorted(paths)}", subject="the model's train_step",
                                   suggestion="return a state of the initial state's structure")
    return [new[p] for p in paths]


