"""TensorFlow initializers from the forms configs use (read by `netcompiler.initializer_spec`, which
also checks them at template time): a number is a constant, anything else a Keras initializer."""

from __future__ import annotations

import inspect
from typing import Any, Optional

import tensorflow as tf

from ...errors import InvalidOptionError
from ...initializer_spec import parse_initializer


def make_initializer(spec: Any, layer: str, option: str, seed: Optional[int] = None):
    """A callable (shape, dtype) -> tensor for the initializer `spec` of `layer`'s parameter; random ones use
    `seed` (unless the spec gives one), so that the same config initialises the same way every run."""
    if isinstance(spec, (int, float)) and not isinstance(spec, bool):
        return tf.keras.initializers.Constant(float(spec))
    keras_name, args = parse_initializer(spec, layer, option)
    initializer_class = getattr(tf.keras.initializers, keras_name)
    if seed is not None and "seed" in inspect.signature(initializer_class).parameters:
        args.setdefault("seed", seed)
    try:
        return initializer_class(**args)
    except (TypeError, ValueError) as exc:
        raise InvalidOptionError(f"initializer {spec!r}: {exc}", layer=layer, option=option) from None
