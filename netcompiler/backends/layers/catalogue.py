"""Which catalogue layer a recorded op call is, where one computes the same thing: `catalogue_entry`.

Only calls whose Tensor arguments are exactly the layer's inputs map (a number in `x * 2.0` makes it generic).
The dict builder still compares the catalogue layer's inferred template with the recorded one and falls back
to the generic layer where they differ.
"""

from __future__ import annotations

import inspect
from typing import Any, Dict, Optional

from ...tensor import Dim
from .recorder import InputRef, RecordedOp

ACTIVATION_OPS = frozenset({
    "relu", "tanh", "sigmoid", "exp", "log", "sqrt", "rsqrt", "square", "sin", "cos", "erf", "sign", "softplus",
    "silu", "gelu", "elu", "log_sigmoid", "abs",
})
"""Frontend ops of one Tensor that the `activation` layer applies by the same name."""
COMBINE_KINDS = frozenset({"add", "sub", "mul", "truediv", "maximum", "minimum", "squared_difference"})
EVAL_OPERATORS = {"add": "+", "sub": "-", "mul": "*", "truediv": "/"}
"""Combine kinds that an `eval` layer writes as a Python operator when one side is a number."""
REDUCE_OPS = {"reduce_sum": "sum", "reduce_mean": "mean", "reduce_max": "max", "reduce_min": "min",
              "reduce_argmax": "argmax"}
COMPARE_KINDS = frozenset({"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"})


def _bound(op: RecordedOp) -> Optional[Dict[str, Any]]:
    try:
        bound = inspect.signature(op.op).bind(*op.args, **op.kwargs)
    except TypeError:
        return None
    bound.apply_defaults()
    return dict(bound.arguments)


def _is_input(value: Any, index: int) -> bool:
    return isinstance(value, InputRef) and value.index == index


def _number_expression(a: Any, operator: str, b: Any) -> Optional[str]:
    """"source(0) * 2.0" for an input and a float (either side), else None (an int or bool number keeps the
    input's integer dtype in the op, which `eval` would not promise)."""
    sides = []
    for side in (a, b):
        if _is_input(side, 0):
            sides.append("source(0)")
        elif isinstance(side, float):
            sides.append(repr(side))
        else:
            return None
    return f"{sides[0]} {operator} {sides[1]}" if "source(0)" in sides and len(set(sides)) == 2 else None


def _same_batch_dims(a, b) -> bool:
    """Whether both templates have the same batch dims: `dot` cannot name a batch dim as a var axis, so x W with
    a weight without batch is no `dot` (it stays generic)."""
    return [d for d in a.dims if d.is_batch] == [d for d in b.dims if d.is_batch]


def catalogue_entry(op: RecordedOp) -> Optional[Dict[str, Any]]:
    """The catalogue layer dict for `op`, or None where none fits (see the module docstring)."""
    if op.output_path != ():
        return None
    args = _bound(op)
    if args is None:
        return None
    name = op.op_name
    if name in ACTIVATION_OPS and len(op.inputs) == 1 and _is_input(args.get("x"), 0):
        return {"class": "activation", "activation": name, "from": op.inputs}
    if name == "neg" and len(op.inputs) == 1 and _is_input(args.get("x"), 0):
        return {"class": "activation", "activation": "negative", "from": op.inputs}
    if name == "activation" and len(op.inputs) == 1 and args.get("func") in ACTIVATION_OPS:
        return {"class": "activation", "activation": args["func"], "from": op.inputs}
    if name == "combine" and len(op.inputs) == 2 and _is_input(args.get("a"), 0) and _is_input(args.get("b"), 1) \
            and args.get("kind") in COMBINE_KINDS and args.get("dim_order") is None:
        return {"class": "combine", "kind": args["kind"], "from": op.inputs}
    if name == "combine" and len(op.inputs) == 1 and args.get("kind") in EVAL_OPERATORS \
            and args.get("dim_order") is None:
        expression = _number_expression(args["a"], EVAL_OPERATORS[args["kind"]], args["b"])
        if expression is not None:
            return {"class": "eval", "eval": expression, "from": op.inputs}
    if name == "dropout" and len(op.inputs) == 1 and _is_input(args.get("x"), 0) \
            and isinstance(args.get("drop_prob"), float) and 0.0 < args["drop_prob"] < 1.0:
        entry = {"class": "dropout", "dropout": args["drop_prob"], "dropout_on_forward": bool(args["on_forward"]),
                 "from": op.inputs}
        axis = args.get("axis")
        if axis is not None and axis is not False:
            varying = [axis] if isinstance(axis, Dim) else list(axis)
            entry["dropout_noise_shape"] = {d: 1 for d in op.input_templates[0].dims if d not in varying}
        return entry
    if name == "compare" and len(op.inputs) == 2 and _is_input(args.get("a"), 0) and _is_input(args.get("b"), 1) \
            and args.get("kind") in COMPARE_KINDS and args.get("dim_order") is None:
        return {"class": "compare", "kind": args["kind"], "from": op.inputs}
    if name == "cast" and len(op.inputs) == 1:
        return {"class": "cast", "dtype": args["dtype"], "from": op.inputs}
    if name == "matmul" and len(op.inputs) == 2 and args.get("use_mask") is True and isinstance(args.get("reduce"), Dim) \
            and _same_batch_dims(*op.input_templates):
        a, b, red = op.input_templates[0], op.input_templates[1], args["reduce"]
        return {"class": "dot", "from": op.inputs, "red1": red, "red2": red, "add_var2_if_empty": False,
                "var1": [d for d in a.dims if d not in b.dims and d != red and not d.is_batch],
                "var2": [d for d in b.dims if d not in a.dims and d != red and not d.is_batch]}
    if name in ("reduce",) + tuple(REDUCE_OPS) and len(op.inputs) == 1 and args.get("use_mask") is True:
        mode = args["mode"] if name == "reduce" else REDUCE_OPS[name]
        return {"class": "reduce", "mode": mode, "axis": args["axis"], "from": op.inputs}
    if name in ("softmax", "log_softmax") and len(op.inputs) == 1 and isinstance(args.get("axis"), Dim):
        log = bool(args.get("log")) or name == "log_softmax"
        axis = args["axis"]
        if axis.is_dynamic and args.get("use_mask") is True and op.input_templates[0].dims[-1] == axis:
            # (softmax_over_spatial moves its axis last, as in RETURNN: the same order only if it is last)
            return {"class": "softmax_over_spatial", "axis": axis, "log_space": log, "from": op.inputs}
        if axis == op.input_templates[0].feature_dim:
            return {"class": "activation", "activation": "log_softmax" if log else "softmax", "from": op.inputs}
    return None
