"""TensorFlow initializers from the forms configs use.

A number (constant), a name ("glorot_uniform", "xavier", "zeros", "orthogonal",
...), a call string with literal keyword arguments
("random_normal_initializer(mean=0.0, stddev=0.1)",
"variance_scaling_initializer(scale=2.0, mode='fan_in')"), or a dict
{"class": NAME, **kwargs}.
"""

from __future__ import annotations

import ast
import inspect
from typing import Any, Dict, Optional, Tuple

import tensorflow as tf

from ...errors import InvalidOptionError, closest_match

_KERAS_NAMES = {
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

# RETURNN/TF1 argument spellings -> Keras
_ARG_NAMES = {"factor": "scale", "uniform": None, "dtype": None, "seed": "seed"}


def _parse(spec: Any) -> Tuple[str, Dict[str, Any]]:
    if isinstance(spec, dict):
        spec = dict(spec)
        name = spec.pop("class", None)
        return str(name), spec
    text = str(spec).strip()
    if "(" not in text:
        return text, {}
    call = ast.parse(text, mode="eval").body
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name) or call.args:
        raise ValueError("expected NAME(key=value, ...)")
    return call.func.id, {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords}


def make_initializer(spec: Any, layer: str, option: str, seed: Optional[int] = None):
    """A callable (shape, dtype) -> tensor for the initializer `spec` of `layer`'s parameter; random ones use
    `seed` (unless the spec gives one), so that the same config initialises the same way every run."""
    if isinstance(spec, (int, float)) and not isinstance(spec, bool):
        return tf.keras.initializers.Constant(float(spec))
    try:
        name, kwargs = _parse(spec)
    except (ValueError, SyntaxError) as exc:
        raise InvalidOptionError(f"initializer {spec!r} cannot be read ({exc})", layer=layer, option=option,
                                 suggestion="write e.g. 'glorot_uniform' or 'random_normal_initializer(stddev=0.1)'")
    keras_name = _KERAS_NAMES.get(name)
    if keras_name is None:
        guess = closest_match(name, _KERAS_NAMES)
        raise InvalidOptionError(f"unknown initializer '{name}'", layer=layer, option=option,
                                 suggestion=f"did you mean '{guess}'?" if guess else None)
    args = {}
    for key, value in kwargs.items():
        key = _ARG_NAMES.get(key, key)
        if key is not None:
            args[key] = value
    initializer_class = getattr(tf.keras.initializers, keras_name)
    if seed is not None and "seed" in inspect.signature(initializer_class).parameters:
        args.setdefault("seed", seed)
    try:
        return initializer_class(**args)
    except (TypeError, ValueError) as exc:
        raise InvalidOptionError(f"initializer {spec!r}: {exc}", layer=layer, option=option) from None
