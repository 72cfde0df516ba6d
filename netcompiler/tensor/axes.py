"""Resolving the axis descriptions that configs use ("T", "F", "except_time", ...).

This is the one place where a description becomes axes of a template. The
forms, each case-insensitive where it is a letter:

* ``"B"``/``"batch"``, ``"T"``/``"time"``, ``"F"``/``"feature"``; ``"T?"`` is time
  if there is one, else nothing; letter combinations such as ``"BT"``, ``"TF"``;
* ``"spatial"`` (all but batch and feature), ``"spatial_except_time"``,
  ``"except_time"`` (all but batch and time), ``"except_batch"``, ``"*"`` (all),
  ``"static"`` / ``"dynamic"`` (every non-batch axis of static / dynamic size);
* ``"stag:NAME"`` (the dim whose description is NAME, or ends in ``:NAME``; RETURNN's names of extern
  data dims, ``"stag:extern_data:data"``/``"stag:time:var:extern_data:data"``, find ``time:data``),
  ``"dim:N"`` (the axis of static size N), ``"spatial:i"``, ``"dyn:i"``,
  ``"static:i"`` (the i-th such axis, negative from the end; ``"s:i"`` is ``"spatial:i"``);
* an int (the axis index, counting the batch axis; negative from the end);
* a `Dim` object; a list or tuple of any of these (their union, in order).
"""

from __future__ import annotations

import re
from typing import Any, List, Optional

from ..errors import AxisError
from .data import Data
from .dim import Dim

_NAMED = {"b": "B", "batch": "B", "t": "T", "time": "T", "f": "F", "feature": "F"}


_NO_TIME_AXIS = ("it has no time axis (as in RETURNN, only a dynamic axis is a time axis); name a static axis "
                 "by 'spatial:0', 'static:0', 'dim:N' or an int")


class _AxisProblem(Exception):
    """Internal: raised while resolving, turned into an AxisError with context."""


def _single_role(data: Data, letter: str) -> List[int]:
    if letter == "B":
        if data.batch_dim_axis is None:
            raise _AxisProblem("it has no batch axis")
        return [data.batch_dim_axis]
    if letter == "T":
        if data.time_dim_axis is None:
            raise _AxisProblem(_NO_TIME_AXIS)
        return [data.time_dim_axis]
    if data.feature_dim_axis is None:
        raise _AxisProblem("it has no feature axis")
    return [data.feature_dim_axis]


def _indexed(axes: List[int], index: int, what: str) -> List[int]:
    if not -len(axes) <= index < len(axes):
        raise _AxisProblem(f"it has {len(axes)} {what} axes, so index {index} is out of range")
    return [axes[index]]


def _named(data: Data, name: str) -> List[int]:
    """The axes whose dim is named `name`; if none, those whose name ends in `:name`."""
    exact = [i for i, d in enumerate(data.dims) if d.description == name]
    return exact or [i for i, d in enumerate(data.dims) if d.description.endswith(":" + name)]


# RETURNN's names of extern data dims -> ours: its time dim 'time:var:extern_data:KEY' (also found as
# 'extern_data:KEY') is 'time:KEY' here, its feature dim 'feature:KEY' is 'KEY:feature'
_RETURNN_NAMES = ((re.compile(r"^(?:time:var:)?extern_data:(.+)$"), "time:{}"),
                  (re.compile(r"^feature:(?:extern_data:)?(.+)$"), "{}:feature"))


def _ours_of_returnn_name(name: str) -> str:
    for pattern, ours in _RETURNN_NAMES:
        match = pattern.match(name)
        if match:
            return ours.format(match.group(1))
    return name


def _resolve_string(data: Data, desc: str) -> List[int]:
    lowered = desc.lower()
    if lowered in _NAMED:
        return _single_role(data, _NAMED[lowered])
    if lowered == "t?":
        return [] if data.time_dim_axis is None else [data.time_dim_axis]
    not_batch = [i for i, d in enumerate(data.dims) if not d.is_batch]
    if lowered == "*":
        return list(range(data.batch_ndim))
    if lowered == "except_batch":
        return not_batch
    if lowered == "except_time":
        return [i for i in not_batch if i != data.time_dim_axis]
    if lowered == "spatial":
        return [i for i in not_batch if i != data.feature_dim_axis]
    if lowered == "spatial_except_time":
        return [i for i in not_batch if i not in (data.feature_dim_axis, data.time_dim_axis)]
    if lowered == "static":
        return [i for i in not_batch if not data.dims[i].is_dynamic]
    if lowered in ("dynamic", "dyn"):
        return [i for i in not_batch if data.dims[i].is_dynamic]
    prefix, sep, rest = desc.partition(":")
    if sep:
        prefix = prefix.lower()
        if prefix == "stag":
            found = _named(data, rest) or _named(data, _ours_of_returnn_name(rest))
            if len(found) != 1:
                raise _AxisProblem(f"{'no' if not found else 'more than one'} dim is named {rest!r}")
            return found
        prefix = {"s": "spatial"}.get(prefix, prefix)
        if prefix in ("dim", "spatial", "dyn", "static"):
            try:
                number = int(rest)
            except ValueError:
                raise _AxisProblem(f"{prefix!r} needs an integer after the colon") from None
            if prefix == "dim":
                found = [i for i in not_batch if data.dims[i].size == number]
                if len(found) != 1:
                    raise _AxisProblem(f"{'no' if not found else 'more than one'} axis has static size {number}")
                return found
            if prefix == "spatial":
                return _indexed([i for i in not_batch if i != data.feature_dim_axis], number, "spatial")
            if prefix == "dyn":
                return _indexed([i for i in not_batch if data.dims[i].is_dynamic], number, "dynamic")
            return _indexed([i for i in not_batch if not data.dims[i].is_dynamic], number, "static")
    if desc and all(c in "btfBTF" for c in desc):
        result: List[int] = []
        for c in desc.upper():
            for axis in _single_role(data, c):
                if axis not in result:
                    result.append(axis)
        return result
    raise _AxisProblem("this is not an axis description")


def _resolve(data: Data, desc: Any) -> List[int]:
    if isinstance(desc, Dim):
        found = [i for i, d in enumerate(data.dims) if d == desc]
        if not found:
            raise _AxisProblem(f"it has no dim {desc.short_repr()}")
        return found
    if isinstance(desc, bool):
        raise _AxisProblem("a bool is not an axis")
    if isinstance(desc, int):
        if not -data.batch_ndim <= desc < data.batch_ndim:
            raise _AxisProblem(f"axis {desc} is out of range for {data.batch_ndim} axes")
        return [desc % data.batch_ndim]
    if isinstance(desc, str):
        return _resolve_string(data, desc)
    if isinstance(desc, (list, tuple)):
        result: List[int] = []
        for item in desc:
            for axis in _resolve(data, item):
                if axis not in result:
                    result.append(axis)
        return result
    raise _AxisProblem(f"expected a string, int, Dim or list of these, not {type(desc).__name__}")


def _error(data: Data, desc: Any, problem: str, layer: Optional[str], option: Optional[str]) -> AxisError:
    where = f"option '{option}' " if option else ""
    return AxisError(
        f"{where}axis {desc!r} does not apply to input {data.name!r} {data.describe()}: {problem}",
        layer=layer, option=option,
        suggestion="use one of 'B', 'T', 'F', 'spatial', 'static', 'except_time', 'except_batch', 'spatial:i', "
                   "'stag:NAME', 'dim:N', an int or a list",
    )


def resolve_axes(data: Data, desc: Any, *, layer: Optional[str] = None, option: Optional[str] = None) -> List[int]:
    """All axes of `data` that `desc` names, in the order named."""
    try:
        return _resolve(data, desc)
    except _AxisProblem as problem:
        raise _error(data, desc, str(problem), layer, option) from None


def resolve_axis(data: Data, desc: Any, *, layer: Optional[str] = None, option: Optional[str] = None) -> int:
    """The single axis of `data` that `desc` names; an AxisError if it names none or several."""
    axes = resolve_axes(data, desc, layer=layer, option=option)
    if len(axes) != 1:
        found = ", ".join(data.dim_label(data.dims[a]) for a in axes) or "none"
        raise _error(data, desc, f"it must name exactly one axis, but names {found}", layer, option)
    return axes[0]


def resolve_dims(data: Data, desc: Any, **context) -> List[Dim]:
    """Like `resolve_axes`, returning the Dims."""
    return [data.dims[a] for a in resolve_axes(data, desc, **context)]


def resolve_dim(data: Data, desc: Any, **context) -> Dim:
    """Like `resolve_axis`, returning the Dim."""
    return data.dims[resolve_axis(data, desc, **context)]
