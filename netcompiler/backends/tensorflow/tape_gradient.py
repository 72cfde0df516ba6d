"""An op sequence with a gradient of its own, recorded on TensorFlow's gradient tape as one op.

`tf.custom_gradient` traces an Identity per output and an IdentityN per call (for ``tf.gradients``), and
its graph-mode bookkeeping costs about 2 ms per call; a chain of thousands of dropout layers pays that per layer.
Here the forward ops run with the tape paused and one tape entry maps the output to the input's gradient.
``tf.gradients``, which differentiates `while_loop_raw` bodies, does not read the tape: in a loop body (traced
once, so the bookkeeping is paid once) the gradient is given with ``tf.custom_gradient``, which it reads."""

from __future__ import annotations

from typing import Any, Callable

import tensorflow as tf

from .loop_invariant import in_loop_body

try:  # TensorFlow's tape API behind tf.custom_gradient (not exported under tf.*)
    from tensorflow.python.eager import record as _record
except ImportError:  # pragma: no cover - an older or newer TF without it: tf.custom_gradient instead
    _record = None


def with_tape_gradient(name: str, forward: Callable[[Any], Any], x: Any, backward: Callable[[Any], Any]) -> Any:
    """`forward(x)`, whose gradient on the tape is `backward(dy)` (dx for the output's gradient dy); a variable
    given as `x` is read once, here, on the tape: it is what the gradient reaches."""
    x = tf.convert_to_tensor(x)
    if _record is None or in_loop_body():
        @tf.custom_gradient
        def recorded(t):
            return forward(t), backward
        return recorded(x)
    with _record.stop_recording():
        y = forward(x)
    _record.record_operation(name, [y], [x], lambda dy: [backward(dy)])
    return y


__all__ = ["with_tape_gradient"]
