"""Initializer specs as configs write them, read without any framework: which initializer, with which arguments.

A number (a constant), a name ("glorot_uniform", "xavier", "zeros", "orthogonal", ...), a call string with
literal keyword arguments ("random_normal_initializer(mean=0.0, stddev=0.1)"), or a dict {"class": NAME,
**kwargs}. `parse_initializer` checks the name at template time (so `dump-net` refuses an unknown one); the
TensorFlow backend makes the initializer from the same parse (`backends/tensorflow/initializers.py`).
"""

from __future__ import annotations

import ast
from typing import Any, Dict, Optional, Tuple

from .errors import InvalidOptionError, closest_match

KERAS_NAMES = {
    "glorot_uniform": "GlorotUniform", "xavier": "GlorotUniform", "xavier_initializer": "GlorotUniform",
    "glorot_uniform_initializer": "GlorotUniform", "glorot_normal": "GlorotNormal",
    "glorot_normal_initializer": "GlorotNormal", "he_uniform": "HeUniform", "he_normal": "HeNormal",
    "lecun_uniform": "LecunUniform", "lecun_normal": "LecunNormal", "orthogonal": "Orthogonal",
    "orthogonal_initializer": "Orthogonal", "zeros": "Zeros", "zeros_initializer": "Zeros", "ones": "Ones",
    "ones_initializer": "Ones", "random_normal": "RandomNormal", "random_normal_initializer": "RandomNormal",
    "random_uniform": "RandomUniform", "random_uniform_initializer": "RandomUniform",
    "truncated_normal": "TruncatedNormal", "truncated_normal_initializer": "TruncatedNormal",
    "variance_scaling": "VarianceScaling", "variance_scaling_initializer": "VarianceScaling",
    "constant": "Constant", "constant_initializer": "Constant",
}
"""Initializer names configs use -> the Keras initializer class they mean."""

ARG_NAMES = {"factor": "scale", "uniform": None, "dtype": None, "seed": "seed"}
"""RETURNN/TF1 argument spellings -> Keras (None: dropped)."""


def parse_initializer(spec: Any, layer: Optional[str], option: Optional[str]) -> Tuple[str, Dict[str, Any]]:
    """(Keras class name, keyword arguments in Keras spelling) of a non-number `spec`; an InvalidOptionError
    naming `layer` and `option` for a spec that cannot be read or names no known initializer."""
    try:
        name, kwargs = _split(spec)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
        raise InvalidOptionError(f"{_of(option)}initializer {_short(spec)} cannot be read ({type(exc).__name__})", layer=layer,
                                 option=option,
                                 suggestion="write e.g. 'glorot_uniform' or 'random_normal_initializer(stddev=0.1)'"
                                 ) from None
    keras_name = KERAS_NAMES.get(name)
    if keras_name is None:
        guess = closest_match(name, KERAS_NAMES)
        raise InvalidOptionError(f"{_of(option)}unknown initializer {_short(name)}", layer=layer, option=option,
                                 suggestion=f"did you mean '{guess}'?" if guess else
                                 f"known: {', '.join(sorted(KERAS_NAMES))}")
    args = {}
    for key, value in kwargs.items():
        key = ARG_NAMES.get(key, key)
        if key is not None:
            args[key] = value
    return keras_name, args


def _split(spec: Any) -> Tuple[str, Dict[str, Any]]:
    if isinstance(spec, dict):
        spec = dict(spec)
        name = spec.pop("class", None)
        if not isinstance(name, str):
            raise ValueError("a dict initializer needs 'class': NAME")
        if not all(isinstance(key, str) for key in spec):
            raise ValueError("argument names must be strings")
        return name, spec
    if not isinstance(spec, str):
        raise TypeError(type(spec).__name__)
    text = spec.strip()
    if "(" not in text:
        return text, {}
    call = ast.parse(text, mode="eval").body
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name) or call.args \
            or any(kw.arg is None for kw in call.keywords):
        raise ValueError("expected NAME(key=value, ...)")
    return call.func.id, {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords}


def _short(value: Any) -> str:
    text = repr(value) if not isinstance(value, int) or value.bit_length() < 256 else "a huge integer"
    return text if len(text) <= 80 else text[:77] + "..."


def _of(option: Optional[str]) -> str:
    return f"option '{option}': " if option else ""
