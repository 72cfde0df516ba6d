"""An op sequence with a gradient of its own, recorded on TensorFlow's gradient tape as one op.

`tf.custom_gradient` traces an Identity per output and an IdentityN per call (for ``tf.gradients``), and
its graph-mode bookkeeping costs about 2 ms per call; a chain of thousands of dropout layers pays that per layer.
Here the forward ops run with the tape paused and one tape entry maps the output to the input's gradient.
``tf.gradients``, which differentiates `while_loop_raw` bodies, does not read the tape: in a loop body (traced
once, so the bookkeeping is paid once) the gradient is given with ``tf.custom_gradient``, which it reads."""

from __future__ import annotations

from typing import Any, Callable, List, Sequence

import tensorflow as tf

from .loop_invariant import in_loop_body

try:  # TensorFlow's tape API behind tf.custom_gradient (not exported under tf.*)
    from tensorflow.python.eager import record as _record
except ImportError:  # pragma: no cover - an older or newer TF without it: tf.custom_gradient instead
    _record = None


def with_tape_gradient(name: str, forward: Callable[[Any], Any], x: Any, backward: Callable[[Any], Any]) -> Any:
    """`forward(x)`, whose gradient on the tape is `backward(dy)` (dx for the output's gradient dy)."""
    return with_tape_gradients(name, forward, [x], lambda dy, _: [backward(dy)])


def with_tape_gradients(name: str, forward: Callable[..., Any], xs: Sequence[Any],
                        backward: Callable[[Any, List[Any]], List[Any]]) -> Any:
    """`forward(*xs)`, whose gradient on the tape is `backward(dy, xs)`: one gradient per input, for the
    output's gradient dy (`xs` as tensors: a variable given is read once, here)."""
    xs = [tf.convert_to_tensor(x) for x in xs]  # a variable is read here, on the tape: it is what the gradient reaches
    if _record is None or in_loop_body():
        @tf.custom_gradient
        def recorded(*ts):
            return forward(*ts), lambda dy: backward(dy, list(ts))
        return recorded(*xs)
    with _record.stop_recording():
        y = forward(*xs)
    _record.record_operation(name, [y], xs, lambda dy: backward(dy, xs))
    return y


__all__ = ["with_tape_gradient", "with_tape_gradients"]
