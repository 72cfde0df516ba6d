"""bfloat16 mixed precision and compiled steps: train frames per process CPU-second of compile-net's train step with
`tf_amp`/`torch_amp` = "bfloat16", `tf_jit` and `torch_compile` against the float32 step of the same model.

    python benchmarks/mixed_precision.py                     # both Transformers and the linear chain, TF and torch
    python benchmarks/mixed_precision.py --quick             # CI smoke: one small batch, one repetition
    python benchmarks/mixed_precision.py --models transformer --backends tensorflow --reps 9
    python benchmarks/mixed_precision.py --torch-compile     # also torch.compile (slow to compile on CPU)
    python benchmarks/mixed_precision.py --models transformer-full --no-xla --reps 3   # the issue's 38M Transformer

See benchmarks/README.md ("mixed_precision.py") for what is measured and the results.
"""

import argparse, os, resource, statistics, subprocess, sys, time  # noqa: E401

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]  # train_step.py beside it; netcompiler without installing
import numpy as np  # noqa: E402

from train_step import random_batches, tf  # noqa: E402  (imports TensorFlow)
from models import TRANSFORMER_SIZES, linear_config, transformer_config  # noqa: E402
from netcompiler.builtin import load_builtin_layers  # noqa: E402
from netcompiler.emit.model import CompiledNetwork  # noqa: E402
from netcompiler.engine.precision import StepCompute  # noqa: E402
from netcompiler.network import build_network  # noqa: E402

TARGET = 1.6  # issue 12 goal 4: the Transformer's bf16 train throughput over its fp32 one


MODELS = {  # configs of models.py (benchmarks/run.py's models) at these sizes
    "transformer": ("configs/transformer-enc.py as shipped (2 blocks, d 256, 4 heads, FF 1024)",
                    lambda: transformer_config(2, 256, 4, 1024)),
    "transformer-512": ("transformer-enc.py with d 512, 8 heads, FF 2048", lambda: transformer_config(2, 512, 8, 2048)),
    "transformer-full": ("the issue's Transformer (run.py --full's): 12 blocks of d 512, 4 heads, FF 2048, 38M "
                         "parameters", lambda: transformer_config(*TRANSFORMER_SIZES["full"])),
    "linear": ("8 linear layers x 1024, ReLU, dropout 0.1, 500-class softmax",
               lambda: linear_config(8, 1024, dim=80, classes=500)),
}

DEFAULT_MODELS = ["transformer", "transformer-512", "linear"]  # transformer-full when asked: 5x the CPU


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def tf_side(config, compute):
    from netcompiler.engine.optimizers import clip_gradients_fn, make_optimizer
    from netcompiler.engine.trainer import Trainer

    model = CompiledNetwork(build_network(config), seed=1)
    optimizer = make_optimizer(config.values)  # built by the Trainer
    trainer = Trainer(model, optimizer, None, clip_gradients_fn(config.values), log=open(os.devnull, "w"),
                      compute=compute)
    return lambda x, y, n: trainer.train_step({"data": x, "classes": y}, {"data": n, "classes": n})[1]


def torch_side(config, compute):
    import torch
    from netcompiler.engine.torch_optimizers import make_torch_optimizer
    from netcompiler.engine.torch_trainer import TorchTrainer

    model = CompiledNetwork(build_network(config), seed=1, backend="torch")
    trainer = TorchTrainer(model, make_torch_optimizer(config.values, model.trainable_params), None,
                           log=open(os.devnull, "w"), compute=compute)

    def step(x, y, n):
        x, y, n = (torch.from_numpy(np.array(a)) for a in (x, y, n))
        return trainer.train_step({"data": x, "classes": y}, {"data": n, "classes": n})[1]
    return step


def one_pass(step, batches):
    """(CPU seconds, wall seconds) of one train step per batch."""
    cpu, wall = cpu_seconds(), time.perf_counter()
    for x, y, lengths in batches:
        float(step(x, y, lengths))
    return cpu_seconds() - cpu, time.perf_counter() - wall


def measure(sides, batches, reps):
    """{side: (warm-up CPU s, [CPU s per pass], [wall s per pass])}; sides alternate their order each repetition."""
    first = {name: one_pass(step, batches)[0] for name, step in sides.items()}  # tracing, compiling per shape
    cpu = {name: [] for name in sides}
    wall = {name: [] for name in sides}
    for rep in range(reps):
        for name in (list(sides) if rep % 2 == 0 else list(sides)[::-1]):
            c, w = one_pass(sides[name], batches)
            cpu[name].append(c)
            wall[name].append(w)
    return {name: (first[name], cpu[name], wall[name]) for name in sides}


def benchmark(model_name, backends, reps, quick, torch_compile, xla):
    description, make_config = MODELS[model_name]
    config = make_config()
    count, size, lo, hi = (1, 4, 20, 30) if quick else (3, 16, 100, 300)
    batches = random_batches(count, size, lo, hi, 80, 500)
    frames = sum(int(np.sum(n)) for _, _, n in batches)
    sides = {}
    if "tensorflow" in backends:
        sides.update({"tf fp32": tf_side(config, StepCompute()),
                      "tf bf16": tf_side(config, StepCompute(amp_dtype="bfloat16"))})
        if xla:
            sides["tf xla"] = tf_side(config, StepCompute(jit=True))
    if "torch" in backends:
        from netcompiler.engine.torch_trainer import configure_torch

        configure_torch(42, 1)  # as compile-net; 1 thread: see benchmarks/README.md (frontend_paths.py)
        sides.update({"torch fp32": torch_side(config, StepCompute()),
                      "torch bf16": torch_side(config, StepCompute(amp_dtype="bfloat16"))})
        if torch_compile:
            sides["torch compile"] = torch_side(config, StepCompute(jit=True))
    print(f"\n{model_name}: {description}; {count} batches of B={size}, T {lo}..{hi} ({frames} valid frames per "
          f"pass), median of {reps}")
    results = measure(sides, batches, reps)
    print(f"  {'side':14s} {'frames/CPU-s':>12s} {'frames/s':>9s}  {'first pass CPU s':>16s}  "
          "ratio vs fp32 (CPU, wall)")
    missed = False
    for name, (first, cpu, wall) in results.items():
        base = results[name.split()[0] + " fp32"]
        ratio_cpu = statistics.median(base[1]) / statistics.median(cpu)
        ratio_wall = statistics.median(base[2]) / statistics.median(wall)
        goal = ""
        if name.endswith("bf16") and model_name.startswith("transformer"):
            ok = ratio_cpu >= TARGET
            missed |= not ok
            goal = f"   target >= {TARGET}: {'OK' if ok else 'MISSED'}"
        print(f"  {name:14s} {frames / statistics.median(cpu):12.0f} {frames / statistics.median(wall):9.0f}  "
              f"{first:16.1f}  {ratio_cpu:.2f}, {ratio_wall:.2f}{goal}")
    return missed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", nargs="+", choices=list(MODELS), default=DEFAULT_MODELS)
    parser.add_argument("--backends", nargs="+", choices=["tensorflow", "torch"], default=["tensorflow", "torch"])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="one small batch, one repetition (CI smoke)")
    parser.add_argument("--torch-compile", action="store_true", help="also time torch_compile (slow to compile)")
    parser.add_argument("--no-xla", action="store_true", help="leave out tf_jit (XLA compiles each batch shape: "
                        "minutes for transformer-full)")
    args = parser.parse_args()
    if len(args.models) > 1:  # one process per model: all sides of the big models in one process ran out of memory
        options = ["--reps", str(args.reps), "--backends", *args.backends] + ["--quick"] * args.quick \
            + ["--torch-compile"] * args.torch_compile + ["--no-xla"] * args.no_xla
        codes = [subprocess.call([sys.executable, os.path.abspath(__file__), "--models", model] + options)
                 for model in args.models]
        sys.exit(max(codes))
    load_builtin_layers()
    tf.get_logger().setLevel("ERROR")  # each side is a new Trainer: TF's warning about many traced functions
    reps = 1 if args.quick else args.reps
    missed = [benchmark(m, args.backends, reps, args.quick, args.torch_compile, not args.no_xla) for m in args.models]
    if any(missed) and not args.quick:
        sys.exit(1)


if __name__ == "__main__":
    main()
