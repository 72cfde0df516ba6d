"""The learning-rate config keys checked one by one: the control rule's name (`KINDS`, RETURNN's other spellings
too), rates, decay, error measure; each bad value gives an InvalidOptionError naming the key."""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, List, Mapping, Optional, Union

from ..errors import InvalidOptionError, closest_match
from ..limits import is_int, is_number

KINDS = ("constant", "newbob", "newbob_rel", "newbob_abs", "newbob_multi_epoch")
# Other spellings RETURNN accepts for the same rules.
_ALIASES = {"newbob_relative": "newbob_rel", "newbob": "newbob_rel"}

Decay = Union[float, Callable[[float], float]]


def _key_error(key: str, message: str, suggestion: Optional[str] = None) -> InvalidOptionError:
    return InvalidOptionError(message, subject=f"config key '{key}'", option=key, suggestion=suggestion)


def _as_float(key: str, value: Any, *, minimum: Optional[float] = None) -> float:
    if not is_number(value):
        raise _key_error(key, f"expected a number, got {value!r}",
                         suggestion=f"give {key} a number, or leave it out for its default")
    value = float(value)
    if math.isnan(value) or (minimum is not None and value < minimum):
        bound = f" >= {minimum}" if minimum is not None else " (not NaN)"
        raise _key_error(key, f"expected a number{bound}, got {value!r}",
                         suggestion=f"write {key} = {minimum} or more" if minimum is not None
                         else f"give {key} a finite number")
    return value


def _as_int(key: str, value: Any, *, minimum: int = 1) -> int:
    if not is_int(value) or value < minimum:
        raise _key_error(key, f"expected a whole number >= {minimum}, got {value!r}",
                         suggestion=f"write {key} = {minimum} or more")
    return int(value)


def _check_kind(kind: Any) -> str:
    if not isinstance(kind, str) or (kind not in KINDS and kind not in _ALIASES):
        near = closest_match(str(kind), list(KINDS) + list(_ALIASES))
        choices = ", ".join(repr(k) for k in KINDS)
        suggestion = f"did you mean {near!r}?" if near else f"use one of {choices}"
        raise _key_error("learning_rate_control", f"unknown learning-rate control {kind!r} (known: {choices})",
                         suggestion=suggestion)
    return _ALIASES.get(kind, kind)


def _check_decay(value: Any, key: str = "newbob_learning_rate_decay") -> Decay:
    """A factor (a number >= 0) or a function rate -> new rate (`key` is named in the error)."""
    if callable(value):
        return value
    return _as_float(key, value, minimum=0.0)


def _check_learning_rates(value: Any) -> Dict[int, float]:
    key = "learning_rates"
    if value is None:
        return {}
    if isinstance(value, (list, tuple)):
        items = list(enumerate(value, start=1))
    elif isinstance(value, Mapping):
        items = list(value.items())
    else:
        raise _key_error(key, f"expected a list of rates (epoch 1, 2, ...) or a dict epoch -> rate, got {value!r}")
    result = {}
    for epoch, rate in items:
        if not is_int(epoch) or epoch < 1:
            raise _key_error(key, f"epochs are whole numbers >= 1, got {epoch!r}")
        result[int(epoch)] = _as_float(key, rate, minimum=0.0)
    return result


def _check_error_measure(value: Any) -> Optional[List[str]]:
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
        return list(value)
    raise _key_error("learning_rate_control_error_measure",
                     f"expected a score name such as 'dev_score_output' (or a list of them), got {value!r}")
