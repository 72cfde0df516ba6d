"""The blstm model of train_step.py by process CPU time, with its share of the CPU's fp32 matmul bound.

    python benchmarks/lstm_cpu.py                 # netcompiler, netcompiler with the autodiff scan LSTM, tf-scan-lstm
    python benchmarks/lstm_cpu.py --reps 9 --variants tf-scan-lstm,keras-lstm

Sides: netcompiler's train step (as train_step.py builds it); the same network with the TF backend's LSTM
replaced, while the step is traced, by `RecurrentOps.lstm_scan` (a `tf.scan` differentiated by autodiff: the
LSTM before lstm_loop.py); the hand-written variants of train_step.py. Timing is train_step.py's `time_sides`
(warm-up pass, then alternating passes) with loop_step.py's `cpu_timed` (process CPU time of all threads per
step: the machine is shared, so wall time mostly measures the other users).

FLOPs: the matmuls and convolutions per padded frame, forward (LSTM input and recurrent matmuls of both
directions of both layers, output layer, both convs), times 3 for forward + backward. "of the bound" divides
FLOP per CPU-second by the fp32 bound per CPU-second, and FLOP per wall second by the bound per wall second: both
measured at the start on 2048^2 float32 matmuls (`matmul_bound`; until session 23 a constant, 193 GFLOP/s for the
2 cores of the AMD CPU of sessions 1-17).
"""

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path[:0] = [os.path.dirname(os.path.abspath(__file__)), os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
import tensorflow as tf  # noqa: E402

import train_step  # noqa: E402
from loop_step import cpu_timed  # noqa: E402
from netcompiler.backends.tensorflow.recurrent import RecurrentOps  # noqa: E402
from netcompiler.builtin import load_builtin_layers  # noqa: E402

SIZE, IN, CLASSES = 256, 640, 1000


def matmul_bound(n=2048, calls=20):
    """(FLOP per CPU-second, FLOP per wall second) of TF's float32 n x n matmul with TF's default threads, after a
    warm-up call: the CPU's fp32 bound."""
    a = tf.random.normal([n, n])
    tf.linalg.matmul(a, a).numpy()
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(calls):
        tf.linalg.matmul(a, a).numpy()
    flops = 2 * n ** 3 * calls
    return flops / (time.process_time() - cpu), flops / (time.perf_counter() - wall)


def forward_flops_per_frame(n=SIZE):
    lstm = 2 * (2 * (IN + n) * 4 * n) + 2 * (2 * (2 * n + n) * 4 * n)  # 2 directions of layer 0 and of layer 1
    return lstm + 2 * 2 * n * CLASSES + 2 * 9 * 32 * 40 + 2 * 9 * 32 * 64 * 20  # output layer, conv0, conv1


def with_scan_lstm(step):
    """`step` traced (and run) with the autodiff scan as the TF backend's LSTM."""
    def run(*args):
        current = RecurrentOps.__dict__["lstm_raw"]
        RecurrentOps.lstm_raw = classmethod(lambda cls, *a: RecurrentOps.lstm_scan(*a))
        try:
            return step(*args)
        finally:
            RecurrentOps.lstm_raw = current
    return run


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--variants", default="tf-scan-lstm", help="hand-written variants of train_step.py")
    args = parser.parse_args()
    load_builtin_layers()
    bound_cpu, bound_wall = matmul_bound()
    print(f"fp32 bound (2048^2 matmul): {bound_cpu / 1e9:.0f} GFLOP per CPU-second, {bound_wall / 1e9:.0f} GFLOP/s")
    tf.random.set_seed(42)
    config, batches = train_step.blstm_config(), train_step.make_batches("blstm", False)
    frames = sum(int(b[2].numpy().sum()) for b in batches)
    padded = sum(int(b[0].shape[0] * b[0].shape[1]) for b in batches)
    model, step = train_step.netcompiler_side(config)
    sides = {"netcompiler": step, "nc-scan-autodiff": with_scan_lstm(train_step.netcompiler_side(config)[1])}
    for variant in args.variants.split(","):
        hand_model, sides[variant], hand_loss = train_step.hand_side(config, train_step.HAND["blstm"][variant])
        train_step.check_same_model(model, hand_model, hand_loss, batches[0])
    cpu = {name: [] for name in sides}
    times = train_step.time_sides({name: cpu_timed(s, cpu[name]) for name, s in sides.items()}, batches, args.reps)
    k = len(batches)  # per timed pass, the warm-up pass left out
    cpu_pass = {name: statistics.median(sum(c[i:i + k]) for i in range(k, len(c), k)) for name, c in cpu.items()}
    flops = 3 * forward_flops_per_frame() * padded
    print(f"blstm: {k} batches, {frames} valid / {padded} padded frames per pass, {flops / 1e9:.1f} GFLOP per pass "
          f"(3 x forward), median of {args.reps}")
    for name in sides:
        wall, cpu_s = statistics.median(times[name]), cpu_pass[name]
        print(f"  {name:<17} CPU {cpu_s * 1e3:6.0f} ms/pass = {frames / cpu_s:5.0f} frames/CPU-s, "
              f"{flops / cpu_s / bound_cpu:4.0%} of the bound per CPU-second;  wall {wall * 1e3:6.0f} ms/pass = "
              f"{frames / wall:5.0f} frames/s, {flops / wall / bound_wall:4.0%} of the bound")
    for name in sides:
        if name != "netcompiler":
            print(f"  ratio netcompiler / {name}: CPU {cpu_pass[name] / cpu_pass['netcompiler']:.3f}, wall "
                  f"{statistics.median(times[name]) / statistics.median(times['netcompiler']):.3f}")


if __name__ == "__main__":
    main()
