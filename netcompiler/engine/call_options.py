"""TensorFlow's per-call function options (`context().function_call_options`): what a `tf.function` call hands
grappler, so a step's graph rewrites (`graph_passes`' reduced pass set, `precision`'s bfloat16 rewrite) hold for
that step's calls only and other functions of the process run as before. TensorFlow is imported on use."""

from __future__ import annotations

import contextlib
from typing import Any, Callable


def call_options_with(edit: Callable[[Any], None]):
    """The current per-call function options with `edit(rewrite_options)` applied to a copy of their grappler
    `RewriterConfig`; the executor and every other option kept."""
    import tensorflow as tf
    from tensorflow.python.eager import context

    base = context.context().function_call_options
    config = tf.compat.v1.ConfigProto()
    config.ParseFromString(base.config_proto_serialized)
    edit(config.graph_options.rewrite_options)
    return context.FunctionCallOptions(executor_type=base.executor_type, config_proto=config)


@contextlib.contextmanager
def calls_with(options):
    """Function calls inside run with `options` (from `call_options_with`); the previous options are put back
    after."""
    from tensorflow.python.eager import context

    ctx = context.context()
    before = ctx.function_call_options
    ctx.function_call_options = options
    try:
        yield
    finally:
        ctx.function_call_options = before


__all__ = ["call_options_with", "calls_with"]
