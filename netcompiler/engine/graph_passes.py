"""Grappler's pass set for very large step graphs: the passes whose cost grows fastest with the graph are switched
off for a train/eval step of more than `LARGE_GRAPH_OPS` traced ops (deep chains of hundreds of layers).

TensorFlow optimizes a `tf.function`'s graph with grappler when the function first runs. On a chain of N linear
layers that was half of the first call and grew faster than N: at 1600 layers (default passes) the dependency
optimizer alone took 15 s (0.85 s at 400: quadratic), the memory optimizer (which finds nothing to do on CPU) 8 s,
constant folding, layout, arithmetic and the TFG passes 4-6 s each (see benchmarks/README.md, "build_profile.py").
The steps measured as fast without them (frames per CPU-second, TF's passes / these, one process each:
linear-400 1302 / 1282, Transformer 2424-2453 / 2467-2477, BLSTM 5966 / 6099, conv 12784 / 12279, linear-100
5116 / 5004; the build of linear-400 went 19.5 -> 15.8 CPU s, the Transformer's 8.4-9.1 -> 6.7-7.3 s), so above
the threshold the step runs with:

* off: layout, constant folding, shape, arithmetic and dependency optimization, the remapper, the memory
  optimizer, the TFG (MLIR) passes and conditional code motion; one meta-optimizer iteration instead of two;
* kept: model pruning, common subgraph elimination, function inlining, the loop optimizer and implementation
  selection.

The remapper fuses e.g. MatMul + BiasAdd + activation into one kernel; netcompiler's linear map reshapes between
the MatMul and the bias, so it found little to fuse, and with it off the steps measured the same (frames per
CPU-second, on / off, with the reduced set forced for the smaller ones: Transformer 4889, 4882 / 4899, 4923,
linear-400 2694, 2703 / 2802, 2726, conv 23890, 24267 / 24344, 24037, BLSTM 10133, 10218 / 10182, 10443), while
it was 17% of the first call of a 2000-layer chain (build 24.5 -> 22.1 s, peak 1756 -> 1537 MB).

Smaller graphs keep TensorFlow's defaults (traced ops of the benchmark models: 12AX 434, conv 425, BLSTM 1455,
linear-100 4498, Transformer 8952, linear-400 ~17k: about 43 per linear layer). The options are set for the
step's own calls (TF's per-call function options), so other functions in the process are not affected; not with
``tf_amp`` (its bfloat16 rewrite sets the call options itself) nor ``tf_jit`` (XLA bypasses grappler).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from .call_options import call_options_with, calls_with
from .collector_pause import first_call_paused

LARGE_GRAPH_OPS = 8000
"""Traced ops of a step above which it runs with the reduced grappler pass set."""

_OFF = ("layout_optimizer", "constant_folding", "shape_optimization", "arithmetic_optimization",
        "dependency_optimization", "remapping", "experimental_conditional_code_motion")
"""RewriterConfig toggles switched off for large graphs (see the module doc)."""


def large_graph_call_options():
    """The current per-call function options with the expensive grappler passes off (the other options kept)."""
    from tensorflow.core.protobuf import rewriter_config_pb2

    rewriter = rewriter_config_pb2.RewriterConfig

    def edit(options):
        for name in _OFF:
            setattr(options, name, rewriter.OFF)
        options.memory_optimization = rewriter.NO_MEM_OPT
        options.disable_tfg_optimizer = True
        options.meta_optimizer_iterations = rewriter.ONE
    return call_options_with(edit)


class SizedStep:
    """A compiled step (a `tf.function`, or precision's bfloat16 wrapper) that, on its first call, counts the
    traced graph's ops and, above `LARGE_GRAPH_OPS`, runs every call with `large_graph_call_options`. The first
    call (trace and instantiation) runs with Python's garbage collector paused (`collector_pause`).

    `function` is the `tf.function` (for its concrete function); `reduce` False keeps TF's defaults always
    (``tf_amp``, ``tf_jit``). `on_large(ops)` is called once when the reduced passes are chosen."""

    def __init__(self, step: Callable, function: Any, reduce: bool = True,
                 on_large: Optional[Callable[[int], None]] = None, threshold: Optional[int] = None):
        self.step = step
        self.function = function
        self.reduce = reduce
        self.on_large = on_large
        self.threshold = LARGE_GRAPH_OPS if threshold is None else threshold
        self.options = None
        """The call options in use (None: TF's defaults); decided at the first call."""
        self.graph_ops: Optional[int] = None
        self._call = first_call_paused(self._sized_call)

    def get_concrete_function(self, *args, **kwargs):
        return self.function.get_concrete_function(*args, **kwargs)

    def _decide(self, args) -> None:
        self.graph_ops = len(self.function.get_concrete_function(*args).graph.get_operations())
        if self.graph_ops > self.threshold:
            self.options = large_graph_call_options()
            if self.on_large is not None:
                self.on_large(self.graph_ops)

    def __call__(self, *args):
        return self._call(*args)

    def _sized_call(self, *args):
        if self.graph_ops is None and self.reduce:
            self._decide(args)
        if self.options is None:
            return self.step(*args)
        with calls_with(self.options):
            return self.step(*args)


__all__ = ["LARGE_GRAPH_OPS", "SizedStep", "large_graph_call_options"]
