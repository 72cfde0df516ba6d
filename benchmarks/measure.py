"""One side of one benchmark model, measured in a process of its own (`run.py` starts `run.py --child ...`, which
calls `measure_side` and prints its result as one JSON line after RESULT_MARK):

* build: wall and process CPU time from before the config is loaded to the end of the first train step
  (config load, built-in layer registry, network build, optimizer, tracing and graph optimisation, first step);
  the imports of the framework and of netcompiler come before and are not counted (they are the same for both
  sides and a per-process constant);
* throughput: one warm-up pass over the batches, then `reps` timed passes (each over the batches as many times as
  take `MIN_PASS_CPU_S`, judged by the warm-up pass); frames per process CPU-second
  (user + sys of all threads, from `time.process_time`, because the machine is shared: wall time measures the
  other sessions as much as this one) and per wall-second, by the median pass;
* memory: the process's peak resident set (VmHWM of /proc/self/status) at the end, and the resident set after
  the imports (the part both sides share).

netcompiler's sides run their steps as compile-net's training does: with the objects that exist after the build
frozen out of Python's garbage collections (`gc.freeze`, training_task's `_frozen_heap`). On a chain of 5000
torch layers the collections of the objects the step makes walked the model's ~430k objects: 0.82 s per step
without, 0.62 s with (hand-written PyTorch 0.60 s); on the benchmark models the difference is within the noise.

Sides: nc-tf (compile-net's Trainer.train_step, train_step.netcompiler_side), hand-tf (train_step.hand_side of
the model's hand-written TF2 model), nc-torch (hand_torch.netcompiler_torch_side) and hand-torch (torch_step.py's
hand-written model and step; its weight-copied agreement check is torch_step.py's, not repeated here). After its measures the hand-tf
child also builds netcompiler's model, copies its weights into the hand-written one and compares loss and gradient
norm (train_step.check_same_model: an AssertionError, i.e. a crash of the child, when they differ).
"""

import functools
import gc
import json
import math
import os
import statistics
import subprocess
import sys
import time

import numpy as np

RESULT_MARK = "RESULT "
MIN_PASS_CPU_S = 0.3
"""A timed pass goes over the batches as many times as make it last about this long (process CPU seconds)."""


@functools.lru_cache(maxsize=None)  # once per process
def compile_bytecode():
    """Writes the bytecode of this tree's netcompiler and layer catalogue (and of the benchmark modules) where Python
    looks for it, as `pip install` does for an installed package. With PYTHONDONTWRITEBYTECODE set (this machine sets
    it) every child would otherwise compile the catalogue's ~70 modules inside its timed build (~0.2 s, session 23);
    the hand-written sides import their modules before the timer."""
    import compileall

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for folder in ("netcompiler", "layers", "benchmarks"):
        compileall.compile_dir(os.path.join(root, folder), quiet=1)


def child_result(script, args):
    """Runs `script --child ARGS` in a fresh process (TF's C++ log quiet, the benchmark modules and this tree's
    netcompiler importable, their bytecode compiled); the dict it printed after RESULT_MARK, or
    {"error": "exit N: <its output's end>"}."""
    compile_bytecode()
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=os.pathsep.join(
        [here, os.path.dirname(here), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, os.path.abspath(script), "--child"] + [str(a) for a in args],
                          capture_output=True, text=True, env=env)
    lines = [line for line in proc.stdout.splitlines() if line.startswith(RESULT_MARK)]
    if proc.returncode or not lines:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-6:])
        return {"error": f"exit {proc.returncode}: {tail}"}
    return json.loads(lines[-1][len(RESULT_MARK):])


def status_mb(key):
    """A /proc/self/status entry (VmHWM, VmRSS) in MB."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(key + ":")) / 1024


def numpy_batches(spec, seed=0):
    """The model's `spec.count` batches (x, y, lengths) as NumPy: random features, random targets, full length."""
    rng = np.random.RandomState(seed)
    shape = (spec.size, spec.frames)
    return [(rng.randn(*shape, spec.dim).astype(np.float32), rng.randint(0, spec.classes, shape).astype(np.int32),
             np.full([spec.size], spec.frames, np.int32)) for _ in range(spec.count)]


def _tf_side(model, side):
    """(build function -> (parameter count, step), batch converter) of a TensorFlow side."""
    import tensorflow as tf
    from netcompiler.builtin import load_builtin_layers
    from train_step import hand_side, netcompiler_side

    tf.random.set_seed(42)

    def build():
        load_builtin_layers()
        config = model.config()
        if side == "nc-tf":
            nc_model, step = netcompiler_side(config)
            return sum(int(np.prod(v.shape)) for v in nc_model.trainable_params), step
        hand_model, step, _loss = hand_side(config, model.hand_tf)
        return sum(int(np.prod(v.shape)) for v in hand_model.variables_list()), step

    return build, lambda batch: tuple(tf.constant(a) for a in batch)


def _torch_side(model, side):
    import torch
    from hand_torch import netcompiler_torch_side
    from torch_step import hand_step_fn, make_model

    torch.set_num_threads(1)
    torch.manual_seed(42)
    if side == "nc-torch":  # netcompiler's imports before the timer, as on TF
        import netcompiler.emit.model, netcompiler.engine.torch_trainer, netcompiler.network  # noqa: E401, F401

    def build():
        if side == "nc-torch":
            from netcompiler.builtin import load_builtin_layers

            load_builtin_layers()
            return netcompiler_torch_side(model.config())
        config, hand, _mapping, (_dim, classes) = make_model(*model.torch)
        hand.train()
        return sum(p.numel() for p in hand.parameters() if p.requires_grad), hand_step_fn(hand, config, classes)[0]

    return build, lambda batch: tuple(torch.from_numpy(a) for a in batch)


def one_pass(step, batches):
    """(wall s, process CPU s) of one pass of `step` over the batches."""
    wall, cpu = time.perf_counter(), time.process_time()
    for batch in batches:
        float(step(*batch))
    return time.perf_counter() - wall, time.process_time() - cpu


def side_builder(model, side):
    """(build, convert) of one side: build() -> (parameter count, step), convert(NumPy batch) -> the side's tensors.
    On netcompiler's sides the objects build() made are frozen out of garbage collections, as compile-net trains."""
    build, convert = (_torch_side if side.endswith("torch") else _tf_side)(model, side)

    def built():
        params, step = build()
        if side.startswith("nc-"):
            gc.freeze()
        return params, step
    return built, convert


def measure_side(model, side, reps, check_model=True):
    """The measures of one side (see the module docstring) as a dict."""
    build, convert = side_builder(model, side)
    batches = [convert(b) for b in numpy_batches(model.batches)]
    rss_imports = status_mb("VmRSS")
    wall, cpu = time.perf_counter(), time.process_time()
    params, step = build()
    float(step(*batches[0]))
    result = {"params": params, "build_wall": time.perf_counter() - wall, "build_cpu": time.process_time() - cpu}
    if reps:
        warm = one_pass(step, batches)[1]  # warm-up: the other batches' first allocations
        # a pass of a tiny model (12AX: ~20 ms) is within the noise of process CPU time: its batches go round
        # until a pass takes ~MIN_PASS_CPU_S
        batches = batches * max(1, int(math.ceil(MIN_PASS_CPU_S / max(warm, 1e-6))))
        passes = [one_pass(step, batches) for _ in range(reps)]
        frames = len(batches) * model.batches.size * model.batches.frames
        result.update(frames_per_cpu_s=frames / statistics.median(c for _, c in passes),
                      frames_per_s=frames / statistics.median(w for w, _ in passes), frames_per_pass=frames)
    result.update(peak_mb=status_mb("VmHWM"), rss_imports_mb=rss_imports, tensorflow_loaded="tensorflow" in sys.modules)
    if side == "hand-tf" and check_model:  # after the measures: the netcompiler model built here changes nothing above
        result["agree"] = check(model) == params
    return result


def check(model):
    """Same parameter count, same eval loss and gradient norm with netcompiler's weights in the hand-written model."""
    import tensorflow as tf
    from netcompiler.builtin import load_builtin_layers
    from train_step import check_same_model, hand_side, netcompiler_side

    load_builtin_layers()
    config = model.config()
    nc_model, _ = netcompiler_side(config)
    hand_model, _, hand_loss = hand_side(config, model.hand_tf)
    x, y, lengths = numpy_batches(model.batches, seed=1)[0]
    lengths[1:] = np.random.RandomState(2).randint(lengths[0] // 2, lengths[0] + 1, size=len(lengths) - 1)
    x[np.arange(x.shape[1])[None, :] >= lengths[:, None]] = 0.0  # ragged: padding frames must not count
    params = check_same_model(nc_model, hand_model, hand_loss, tuple(tf.constant(a) for a in (x, y, lengths)))
    return params


def child_main(model, side, reps, check_model):
    """Entry of a child process: measures and prints the JSON result line."""
    print(RESULT_MARK + json.dumps(measure_side(model, side, reps, check_model)), flush=True)
    os._exit(0)  # skip TF's and torch's teardown (seconds, and not part of any measure)
