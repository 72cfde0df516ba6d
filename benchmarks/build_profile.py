"""Build to first train step: where compile-net's time goes, against a hand-written TF2 step of the same model.

    python benchmarks/build_profile.py                 # N = 100, 400; 3 repetitions (a few minutes on 2 cores)
    python benchmarks/build_profile.py --quick         # N = 10, 40; 1 repetition (CI smoke)
    python benchmarks/build_profile.py --sizes 100,400,1600 --reps 5 --no-grappler

The model is a chain of N `linear` layers (relu, dropout 0.1 on each layer's input, `--dim` units) and a softmax
output with CE; Adam as `make_optimizer` makes it (the same Keras class and settings on both sides). Every
(side, N, repetition) runs in a fresh child process, so nothing traced or cached carries over; the phases are
timed in process CPU seconds (all threads), which a busy shared machine disturbs less than wall time.
See benchmarks/README.md ("build_profile.py") for the phases and how to read them.
"""

import argparse, json, math, os, statistics, subprocess, sys, tempfile, time  # noqa: E401

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # netcompiler from this checkout

TARGET_RATIO = 1.2   # build to first train step, netcompiler / hand-written TF2
TARGET_GROWTH = 1.1  # exponent of the build-to-first-step time in N
FEATURES, CLASSES, BATCH, FRAMES = 40, 10, 16, 200


def chain_config(n, dim):
    """The config text of a chain of n linear layers (relu, input dropout 0.1) and a softmax output."""
    net = {}
    prev = "data"
    for i in range(n):
        net[f"l{i}"] = {"class": "linear", "activation": "relu", "n_out": dim, "dropout": 0.1, "from": prev}
        prev = f"l{i}"
    net["output"] = {"class": "softmax", "n_out": CLASSES, "loss": "ce", "from": prev}
    return (f"extern_data = {{'data': {{'dim': {FEATURES}}}, 'classes': {{'dim': {CLASSES}, 'sparse': True}}}}\n"
            f"optimizer = {{'class': 'adam', 'epsilon': 1e-8}}\nlearning_rate = 1e-3\nnetwork = {net!r}\n")


def batch():
    import numpy as np
    rng = np.random.RandomState(0)
    lengths = rng.randint(FRAMES // 2, FRAMES + 1, size=BATCH).astype(np.int32)
    lengths[0] = FRAMES
    x = rng.randn(BATCH, FRAMES, FEATURES).astype(np.float32)
    y = rng.randint(0, CLASSES, size=(BATCH, FRAMES)).astype(np.int32)
    return x, y, lengths


class Clock:
    """Process CPU and wall seconds per named phase."""

    def __init__(self):
        self.phases, self._cpu, self._wall = {}, time.process_time(), time.perf_counter()

    def lap(self, name):
        cpu, wall = time.process_time(), time.perf_counter()
        self.phases[name] = (cpu - self._cpu, wall - self._wall)
        self._cpu, self._wall = cpu, wall


def count_ops(concrete):
    """Ops of the traced step: its graph plus every function in its library (cond branches, gradients)."""
    graph_def = concrete.graph.as_graph_def()
    return len(graph_def.node) + sum(len(f.node_def) for f in graph_def.library.function)


def netcompiler_child(n, dim, clock, nonfinite_check=True):
    from netcompiler.builtin import load_builtin_layers
    from netcompiler.config import load_config
    from netcompiler.emit.model import CompiledNetwork
    from netcompiler.engine.optimizers import clip_gradients_fn, make_optimizer
    from netcompiler.engine.collector_pause import collector_paused
    from netcompiler.engine.trainer import Trainer
    from netcompiler.network import build_network
    load_builtin_layers()
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(chain_config(n, dim))
    clock.lap("imports")
    config = load_config(f.name)
    os.unlink(f.name)
    clock.lap("config")
    network = build_network(config)
    clock.lap("build_network")
    with collector_paused():  # as compile-net's Session builds the model and the trainer
        model = CompiledNetwork(network)
        optimizer = make_optimizer(config.values)  # as compile-net's Session.train
        trainer = Trainer(model, optimizer, None, clip_gradients_fn(config.values),
                          stop_on_nonfinite=nonfinite_check, log=open(os.devnull, "w"))
    clock.lap("variables")
    with collector_paused():  # as the step's first call traces (graph_passes.SizedStep)
        concrete = trainer.train_step.get_concrete_function()
    clock.lap("trace")
    x, y, lengths = batch()

    def step():
        return float(trainer.train_step({"data": x, "classes": y}, {"data": lengths, "classes": lengths})[1])
    return concrete, step


def hand_child(n, dim, clock, nonfinite_check=True):
    import tensorflow as tf
    from netcompiler.engine.optimizers import make_optimizer
    clock.lap("imports")
    clock.lap("config")
    clock.lap("build_network")
    glorot = tf.keras.initializers.GlorotUniform()
    sizes = [FEATURES] + [dim] * n + [CLASSES]
    weights = [(tf.Variable(glorot((a, b))), tf.Variable(tf.zeros([b]))) for a, b in zip(sizes, sizes[1:])]
    variables = [v for pair in weights for v in pair]
    optimizer = make_optimizer({"optimizer": {"class": "adam", "epsilon": 1e-8}, "learning_rate": 1e-3})
    optimizer.build(variables)
    clock.lap("variables")

    @tf.function(input_signature=[tf.TensorSpec([None, None, FEATURES]), tf.TensorSpec([None, None], tf.int32),
                                  tf.TensorSpec([None], tf.int32)], autograph=False)
    def train_step(x, y, lengths):
        with tf.GradientTape() as tape:
            h = tf.reshape(x, [-1, FEATURES])
            for i, (w, b) in enumerate(weights):
                if i < n:
                    h = tf.nn.relu(tf.nn.dropout(h, 0.1) @ w + b)
                else:
                    h = h @ w + b
            mask = tf.reshape(tf.sequence_mask(lengths, tf.shape(x)[1]), [-1])
            ce = tf.nn.sparse_softmax_cross_entropy_with_logits(tf.boolean_mask(tf.reshape(y, [-1]), mask),
                                                                tf.boolean_mask(h, mask))
            loss = tf.reduce_sum(ce)
        grads = tape.gradient(loss, variables)
        optimizer.apply_gradients(zip(grads, variables))
        return loss

    concrete = train_step.get_concrete_function()
    clock.lap("trace")
    x, y, lengths = batch()
    return concrete, lambda: float(train_step(x, y, lengths))


def child(side, n, dim, no_grappler, nonfinite_check):
    clock = Clock()
    import tensorflow as tf
    if no_grappler:
        tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})
    clock.lap("import_tf")
    concrete, step = (netcompiler_child if side == "netcompiler" else hand_child)(n, dim, clock,
                                                                                       nonfinite_check)
    step()
    clock.lap("first_call")
    step()
    clock.lap("second_call")
    with open("/proc/self/status") as f:
        peak = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024
    print(json.dumps({"phases": clock.phases, "ops": count_ops(concrete), "peak_mb": peak}))


PHASES = ("config", "build_network", "variables", "trace", "first_call", "second_call")
BUILD = ("config", "build_network", "variables", "trace", "first_call")  # build to first train step


def run_child(side, n, dim, no_grappler, nonfinite_check):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", side, str(n), "--dim", str(dim)]
    cmd += (["--no-grappler"] if no_grappler else []) + ([] if nonfinite_check else ["--no-nonfinite-check"])
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"child {side} N={n} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.splitlines()[-1])


def median_phases(results, index):
    return {p: statistics.median(r["phases"][p][index] for r in results) for p in PHASES}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="N = 10, 40, one repetition (smoke)")
    parser.add_argument("--sizes", default=None, help="comma-separated N (default 100,400)")
    parser.add_argument("--dim", type=int, default=128, help="units per linear layer")
    parser.add_argument("--reps", type=int, default=None, help="child processes per side and N (default 3)")
    parser.add_argument("--sides", default="netcompiler,hand-tf2")
    parser.add_argument("--no-grappler", action="store_true", help="switch TF's graph optimizer off (its share)")
    parser.add_argument("--no-nonfinite-check", action="store_true",
                        help="netcompiler without stop_on_nonfinite_train_score (the check's share)")
    parser.add_argument("--child", nargs=2, metavar=("SIDE", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child[0], int(args.child[1]), args.dim, args.no_grappler, not args.no_nonfinite_check)
    sizes = [int(s) for s in (args.sizes or ("10,40" if args.quick else "100,400")).split(",")]
    reps = args.reps or (1 if args.quick else 3)
    sides = args.sides.split(",")
    print(f"chain of N linear layers ({args.dim} units, relu, dropout 0.1) + softmax CE, Adam; batch "
          f"{BATCH} x {FRAMES} frames; median of {reps} fresh processes; CPU seconds"
          + (" (grappler off)" if args.no_grappler else "")
          + (" (netcompiler without the non-finite check)" if args.no_nonfinite_check else ""))
    header = "  ".join(f"{p:>13}" for p in PHASES)
    print(f"{'side':<12} {'N':>5}  {header}  {'build total':>11}  {'ops':>7}  {'peak MB':>7}")
    build = {}
    for n in sizes:
        results = {side: [] for side in sides}
        for rep in range(reps):
            for side in (sides if rep % 2 == 0 else sides[::-1]):
                results[side].append(run_child(side, n, args.dim, args.no_grappler, not args.no_nonfinite_check))
        for side in sides:
            cpu = median_phases(results[side], 0)
            build[side, n] = sum(cpu[p] for p in BUILD)
            ops = statistics.median(r["ops"] for r in results[side])
            peak = statistics.median(r["peak_mb"] for r in results[side])
            cells = "  ".join(f"{cpu[p]:13.3f}" for p in PHASES)
            print(f"{side:<12} {n:>5}  {cells}  {build[side, n]:11.2f}  {ops:7.0f}  {peak:7.0f}")
    failed = False
    if "netcompiler" in sides and "hand-tf2" in sides:
        for n in sizes:
            ratio = build["netcompiler", n] / build["hand-tf2", n]
            ok = ratio <= TARGET_RATIO
            failed |= not ok
            print(f"N={n}: build to first step netcompiler / hand-tf2 = {ratio:.2f}   target <= {TARGET_RATIO}: "
                  f"{'OK' if ok else 'MISSED'}")
    for side in sides:
        for a, b in zip(sizes, sizes[1:]):
            exponent = math.log(build[side, b] / build[side, a]) / math.log(b / a)
            ok = exponent <= TARGET_GROWTH or side != "netcompiler"
            failed |= not ok
            print(f"{side}: growth exponent N={a}->{b} = {exponent:.2f}"
                  + (f"   target <= {TARGET_GROWTH}: {'OK' if ok else 'MISSED'}" if side == "netcompiler" else ""))
    return 1 if failed and not args.quick else 0


if __name__ == "__main__":
    sys.exit(main())
