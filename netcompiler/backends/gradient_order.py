"""Whether the gradients being computed will be differentiated again (RETURNN's `maximize_grad_norm`).

Both backends' LSTM recurrences have a hand-written backward pass whose forward is not recorded, so it cannot
be differentiated a second time; within `second_order_gradients()` they run the plain, autodiffed loop instead.
The trainers enter it around the forward pass of a training step that needs it.
"""

from __future__ import annotations

import contextlib
import contextvars

_SECOND_ORDER = contextvars.ContextVar("second_order_gradients", default=False)


@contextlib.contextmanager
def second_order_gradients(enabled: bool = True):
    """Within (when `enabled`): gradients of what is computed will be differentiated again."""
    token = _SECOND_ORDER.set(enabled)
    try:
        yield
    finally:
        _SECOND_ORDER.reset(token)


def second_order_needed() -> bool:
    return _SECOND_ORDER.get()
