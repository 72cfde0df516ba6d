"""Python's cyclic garbage collector paused while a model is built and its step traced.

Building a network of thousands of layers makes millions of Python objects (TensorFlow's graph ops and tensors,
layer templates, variables) that live as long as the model. Python's collector walks all of them at each full
collection, and it starts one whenever the objects have grown by a quarter: on a chain of 1600 linear layers that
was 12% of tracing the train step and 18% of creating the variables (benchmarks/README.md, "Session 10"). Nothing
made there is garbage the collector would find, so it is off until the build ends; cycles the build did leave are
found by the next collection after it. The same for torch's first optimizer, which imports ``torch._dynamo``: its
collections walked the 5000-layer chain's objects (its build ~2.9 -> ~2.6 s wall).
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Callable, Iterator


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off inside (as it was after, also on an error). Reference counting still
    frees everything that is not part of a cycle."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def first_call_paused(fn: Callable) -> Callable:
    """`fn`, its first call run with the collector paused: a `tf.function`'s first call traces its graph and
    instantiates it."""
    called = False

    def call(*args):
        nonlocal called
        if called:
            return fn(*args)
        called = True
        with collector_paused():
            return fn(*args)
    return call


__all__ = ["collector_paused", "first_call_paused"]
