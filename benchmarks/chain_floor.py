"""What a TF chain of N linear layers (width 64, ReLU, dropout 0.1, Adam) costs to build in plain TensorFlow, without
netcompiler: where the 5000-layer goal (< 60 s, < 2 GB) stands against TF's own floor.

    python benchmarks/chain_floor.py floor 5000    # only the variables and one Adam update of each (no layers)
    python benchmarks/chain_floor.py inline 2000   # the layers' ops written out in the step, as usual
    python benchmarks/chain_floor.py shared 2000   # every layer a call of one shared tf.function (not inlined)
    python benchmarks/chain_floor.py stacked 2000  # inline, but all weights in one variable, all biases in another
    python benchmarks/chain_floor.py eager 5000    # inline, run eagerly: no tf.function, no graph
    python benchmarks/chain_floor.py grouped 5000  # stacked and shared: one variable per role, one layer function
    python benchmarks/chain_floor.py grouped 400 3200  # the steps on 3200 frames (run.py's 16 x 200 batch)

Each prints the process CPU seconds and resident MB after the variables, the trace, the first step (one sequence
of 10 frames as run.py's --scaling chain, or the frames given third) and a second step, the peak, and the step
graph's node count. Adam is TF's fused ResourceApplyAdam per variable with its two slots, as netcompiler's fused
updates; no non-finite check. See benchmarks/README.md (sessions 19 and 20).
"""

import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from measure import status_mb  # noqa: E402

WIDTH, FRAMES = 64, 10
MODES = ("floor", "inline", "shared", "stacked", "eager", "grouped")
STACKED = ("stacked", "grouped")
"""Modes whose weights are one [n, WIDTH, WIDTH] variable and biases one [n, WIDTH] variable."""
SHARED = ("shared", "grouped")
"""Modes whose layers are calls of one traced, not inlined function."""


def layer(x, w, b, seed):
    keep = tf.random.stateless_uniform(tf.shape(x), seed=seed) >= 0.1
    return tf.nn.relu(tf.where(keep, x * (1 / 0.9), 0.0) @ w + b)


def main(mode, n, frames=FRAMES):
    rng = np.random.RandomState(0)
    clock = time.process_time()

    def lap(phase):
        nonlocal clock
        print(f"{phase:<11} {time.process_time() - clock:7.1f} s CPU  {status_mb('VmRSS'):7.0f} MB resident", flush=True)
        clock = time.process_time()

    print(f"{'imports':<11} {status_mb('VmRSS'):17.0f} MB resident", flush=True)
    if mode in STACKED:
        weights = [tf.Variable(rng.uniform(-0.2, 0.2, (n, WIDTH, WIDTH)).astype(np.float32))]
        biases = [tf.Variable(np.zeros((n, WIDTH), np.float32))]
    else:
        weights = [tf.Variable(rng.uniform(-0.2, 0.2, (WIDTH, WIDTH)).astype(np.float32)) for _ in range(n)]
        biases = [tf.Variable(np.zeros(WIDTH, np.float32)) for _ in range(n)]
    variables = weights + biases
    slots = [(tf.Variable(tf.zeros_like(v)), tf.Variable(tf.zeros_like(v))) for v in variables]
    lap("variables")
    signature = [tf.TensorSpec([None, WIDTH]), tf.TensorSpec([WIDTH, WIDTH]), tf.TensorSpec([WIDTH]),
                 tf.TensorSpec([2], tf.int32)]
    shared = tf.function(layer, autograph=False, experimental_attributes={"_noinline": True}) \
        .get_concrete_function(*signature) if mode in SHARED else layer

    def step(x, seed):
        if mode == "floor":
            ones = {shape: tf.ones(shape) for shape in {tuple(v.shape) for v in variables}}
            grads = [ones[tuple(v.shape)] for v in variables]
            loss = tf.reduce_sum(x)
        else:
            with tf.GradientTape() as tape:
                layer_weights, layer_biases = weights, biases
                if mode in STACKED:
                    layer_weights, layer_biases = tf.unstack(weights[0]), tf.unstack(biases[0])
                for i in range(n):
                    x = shared(x, layer_weights[i], layer_biases[i], seed + tf.constant([i, 0]))
                loss = tf.reduce_sum(x * x)
            grads = tape.gradient(loss, variables)
        hyper = [tf.constant(h) for h in (0.9, 0.999, 1e-3, 0.9, 0.999, 1e-8)]
        updates = [tf.raw_ops.ResourceApplyAdam(var=v.handle, m=m.handle, v=s.handle, beta1_power=hyper[0],
                                                beta2_power=hyper[1], lr=hyper[2], beta1=hyper[3], beta2=hyper[4],
                                                epsilon=hyper[5], grad=g)
                   for v, g, (m, s) in zip(variables, grads, slots)]
        with tf.control_dependencies(updates):
            return tf.identity(loss)

    nodes = 0
    if mode != "eager":
        step = tf.function(step, input_signature=[tf.TensorSpec([None, WIDTH]), tf.TensorSpec([2], tf.int32)],
                           autograph=False)
        graph = step.get_concrete_function().graph.as_graph_def()
        nodes = len(graph.node) + sum(len(f.node_def) for f in graph.library.function)
    lap("trace")
    for phase in ("first step", "next step"):
        float(step(tf.constant(rng.randn(frames, WIDTH).astype(np.float32)), tf.constant([1, 2])))
        lap(phase)
    print(f"{mode} chain of {n}: peak {status_mb('VmHWM'):.0f} MB, {nodes} graph nodes ({nodes / n:.1f} per layer)")


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4) or sys.argv[1] not in MODES:
        sys.exit(__doc__)
    main(sys.argv[1], *(int(arg) for arg in sys.argv[2:]))
