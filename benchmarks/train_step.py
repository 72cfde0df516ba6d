"""Train-step throughput: compile-net's compiled train step against hand-written TF2 steps of the same models.

    python benchmarks/train_step.py            # full run (several minutes on 2 cores)
    python benchmarks/train_step.py --quick    # smoke run: small batches, one repetition, no memory children

See benchmarks/README.md ("train_step.py") for what is measured and how to read it.
"""

import argparse, json, os, resource, statistics, subprocess, sys, time  # noqa: E401

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from netcompiler.builtin import load_builtin_layers  # noqa: E402
from netcompiler.config import load_config  # noqa: E402
from netcompiler.emit.equal_layers import min_layers_setting  # noqa: E402
from netcompiler.emit.model import CompiledNetwork  # noqa: E402
from netcompiler.engine.collector_pause import collector_paused  # noqa: E402
from netcompiler.engine.optimizers import clip_gradients_fn, gradient_clipping, make_optimizer  # noqa: E402
from netcompiler.engine.session import set_up_process  # noqa: E402
from netcompiler.engine.trainer import Trainer  # noqa: E402
from netcompiler.network import build_network  # noqa: E402

from models import asr_config as blstm_config  # noqa: E402  (TF-free: torch_step.py's conv model reads it too)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = 0.95


# --- the models, scaled down from the shipped configs (same architecture) ---------------------------------------
def transformer_config():
    """configs/transformer-enc.py as shipped (d_model 256, 4 heads, FF 1024, 2 blocks)."""
    return load_config(os.path.join(ROOT, "configs", "transformer-enc.py"))


MODELS = {"blstm": blstm_config, "transformer": transformer_config}


class HandModel(tf.Module):
    """A hand-written model: variables `v` under netcompiler's parameter names (so weights can be copied)."""

    def variables_list(self):
        return list(self.v.values())

    def drop(self, x, training):
        return tf.nn.dropout(x, self.dropout) if training else x


def glorot(shape):
    return tf.keras.initializers.GlorotUniform()(shape)


def smoothed_ce(logits, labels, smoothing):
    """Per frame CE against the smoothed one-hot target (1 - s on the target, s / (C - 1) elsewhere) minus that
    target's entropy (as netcompiler and RETURNN: a perfect output has loss 0; the gradient is the same), FER."""
    classes = logits.shape[-1]
    dist = tf.one_hot(labels, classes, on_value=1.0 - smoothing, off_value=smoothing / (classes - 1))
    entropy = -sum(p * np.log(p) * k for p, k in ((1.0 - smoothing, 1), (smoothing / (classes - 1), classes - 1)) if p)
    errors = tf.not_equal(tf.argmax(logits, -1, output_type=tf.int32), labels)
    return tf.nn.softmax_cross_entropy_with_logits(dist, logits) - entropy, tf.cast(errors, tf.float32)


class HandBLSTM(HandModel):
    """conv(3x3,32)+maxpool(1,2), conv(3x3,64)+maxpool(1,2) -> 2 BLSTM layers -> softmax; dropout as the config.

    lstm="block": tf.raw_ops.BlockLSTM (TF's fused kernel, V1: gates i c f o, one kernel [in + n, 4n], its
    registered gradient); lstm="scan": x W + b for all frames in one matmul, then tf.scan over h W_re and the
    gates; both time-major from the conv front-end to the output layer. lstm="keras": keras.layers.LSTM, masked."""

    def __init__(self, lstm="block", n=256, classes=1000, dropout=0.1, layers=2):
        super().__init__()
        self.kind, self.n, self.dropout, self.layers = lstm, n, dropout, layers
        spec = {"conv0/W": [3, 3, 1, 32], "conv1/W": [3, 3, 32, 64],  # conv: no bias before behavior_version 10
                "output/W": [2 * n if layers else 640, classes], "output/b": [classes]}
        self.lstm = {}
        for name, in_dim in ((f"lstm{i}_{d}", 640 if i == 0 else 2 * n) for i in range(layers) for d in ("fw", "bw")):
            if lstm == "keras":
                self.lstm[name] = tf.keras.layers.LSTM(n, return_sequences=True, go_backwards=name.endswith("bw"))
                self.lstm[name].build((None, None, in_dim))
            elif lstm == "block":
                spec.update({name + "/kernel": [in_dim + n, 4 * n], name + "/b": [4 * n]})
            else:
                spec.update({name + "/W": [in_dim, 4 * n], name + "/W_re": [n, 4 * n], name + "/b": [4 * n]})
        self.v = {k: tf.Variable(glorot(s) if len(s) > 1 else tf.zeros(s), name=k.replace("/", "_"))
                  for k, s in spec.items()}

    def variables_list(self):
        return super().variables_list() + [w for layer in self.lstm.values() for w in layer.trainable_weights]

    def load(self, params):
        """Takes netcompiler's parameter values (same names without the rec units' "rec/"; for "block" kernels
        joined, gates reordered)."""
        params = {name.replace("/rec/", "/"): value for name, value in params.items()}
        for name, var in self.v.items():
            layer, p = name.split("/")
            w = np.concatenate([params[layer + "/W"], params[layer + "/W_re"]]) if p == "kernel" else params[name]
            if self.kind == "block" and layer.startswith("lstm"):
                w = gates_reordered(w, (1, 0, 2, 3))  # gates cifo -> icfo
            var.assign(w)
        for name, layer in self.lstm.items():
            for var, p in zip(layer.trainable_weights, ("W", "W_re", "b")):
                var.assign(gates_reordered(params[f"{name}/{p}"], (1, 2, 0, 3)))  # gates cifo -> Keras's ifco

    def logits(self, x, lengths, training):
        v, mask = self.v, tf.sequence_mask(lengths, tf.shape(x)[1])
        h = tf.nn.relu(tf.nn.conv2d(x[..., None], v["conv0/W"], 1, "SAME"))
        h = tf.where(mask[:, :, None, None], h, 0.0)  # zero padding frames: conv1 must see zeros after a sequence
        h = tf.nn.max_pool2d(h, (1, 2), (1, 2), "SAME")
        h = tf.nn.max_pool2d(tf.nn.relu(tf.nn.conv2d(h, v["conv1/W"], 1, "SAME")), (1, 2), (1, 2), "SAME")
        h = tf.reshape(h, [tf.shape(h)[0], tf.shape(h)[1], 640])
        time_major = self.kind != "keras"
        h = tf.transpose(h, [1, 0, 2]) if time_major else h
        rev = lambda t: tf.reverse_sequence(t, lengths, seq_axis=0, batch_axis=1)  # noqa: E731
        for i in range(self.layers):
            fw_in, bw_in = (self.drop(h, training), self.drop(h, training)) if i else (h, h)
            if self.kind == "keras":
                fw = self.lstm[f"lstm{i}_fw"](fw_in, mask=mask)
                bw = tf.reverse(self.lstm[f"lstm{i}_bw"](bw_in, mask=mask), [1])
            else:  # padded frames after a sequence's end cannot reach its frames: no masking needed
                fw = self.run_lstm(fw_in, f"lstm{i}_fw")
                bw = rev(self.run_lstm(rev(bw_in), f"lstm{i}_bw"))
            h = tf.concat([fw, bw], -1)
        logits = tf.tensordot(self.drop(h, training), v["output/W"], 1) + v["output/b"]
        return tf.transpose(logits, [1, 0, 2]) if time_major else logits

    def run_lstm(self, x, name):
        v, zeros = self.v, tf.zeros([tf.shape(x)[1], self.n])
        if self.kind == "block":
            no_peephole = tf.zeros([self.n])
            return tf.raw_ops.BlockLSTM(seq_len_max=tf.cast(tf.shape(x)[0], tf.int64), x=x, cs_prev=zeros,
                                        h_prev=zeros, w=v[name + "/kernel"], wci=no_peephole, wcf=no_peephole,
                                        wco=no_peephole, b=v[name + "/b"], forget_bias=0.0, cell_clip=-1.0,
                                        use_peephole=False)[6]

        return scan_lstm(x, v[name + "/W"], v[name + "/W_re"], v[name + "/b"])


def gates_reordered(w, blocks):
    """`w` with its 4 LSTM gate blocks (last axis) taken in the order of the indices `blocks`."""
    return np.concatenate([np.split(w, 4, axis=-1)[k] for k in blocks], -1)


def scan_lstm(x, w, w_re, b, name=None):
    """An LSTM over time-major x [T, B, in] from zero states: x W + b for all frames in one matmul, then tf.scan
    over h W_re and the gates (c, i, f, o as netcompiler's LSTM). Returns h [T, B, n]."""
    zeros = tf.zeros([tf.shape(x)[1], w_re.shape[0]])

    def step(state, xw_t):
        c, i, f, o = tf.split(xw_t + state[0] @ w_re, 4, axis=-1)
        cell = tf.sigmoid(f) * state[1] + tf.sigmoid(i) * tf.tanh(c)
        return tf.sigmoid(o) * tf.tanh(cell), cell

    return tf.scan(step, tf.tensordot(x, w, 1) + b, initializer=(zeros, zeros), name=name)[0]


class HandTransformer(HandModel):
    """Pre-norm Transformer encoder as configs/transformer-enc.py, with plain TF ops (einsum attention)."""

    def __init__(self, blocks=2, d=256, heads=4, ff=1024, in_dim=80, classes=500, dropout=0.1):
        super().__init__()
        self.blocks, self.d, self.heads, self.dropout = blocks, d, heads, dropout
        spec = {"input/W": [in_dim, d], "input/b": [d], "final_ln/scale": [d], "final_ln/bias": [d],
                "output/W": [d, classes], "output/b": [classes]}
        for i in range(1, blocks + 1):
            p = f"block{i}_"
            spec.update({p + "q/W": [d, d], p + "k/W": [d, d], p + "v/W": [d, d], p + "att_out/W": [d, d],
                         p + "att_out/b": [d], p + "ff1/W": [d, ff], p + "ff1/b": [ff], p + "ff2/W": [ff, d],
                         p + "ff2/b": [d]})
            spec.update({f"{p}{ln}/{k}": [d] for ln in ("att_ln", "ff_ln") for k in ("scale", "bias")})
        self.v = {k: tf.Variable(glorot(s) if len(s) == 2 else tf.ones(s) if k.endswith("scale") else tf.zeros(s),
                                 name=k.replace("/", "_")) for k, s in spec.items()}

    def load(self, params):
        for name, var in self.v.items():
            var.assign(params[name])

    def ln(self, x, name):
        mean, var = tf.nn.moments(x, [-1], keepdims=True)
        return tf.nn.batch_normalization(x, mean, var, self.v[name + "/bias"], self.v[name + "/scale"], 1e-6)

    def logits(self, x, lengths, training):
        v, B, T = self.v, tf.shape(x)[0], tf.shape(x)[1]
        key_bias = tf.where(tf.sequence_mask(lengths, T), 0.0, float("-inf"))[:, None, None, :]  # [B, 1, 1, T']
        heads = lambda t: tf.reshape(t, [B, T, self.heads, self.d // self.heads])  # noqa: E731
        h = self.drop(x @ v["input/W"] + v["input/b"], training)
        for i in range(1, self.blocks + 1):
            p = f"block{i}_"
            a = self.ln(h, p + "att_ln")
            q, k, val = (heads(a @ v[p + n + "/W"]) for n in "qkv")
            energy = tf.einsum("bthd,bshd->bhts", q, k) * (self.d // self.heads) ** -0.5 + key_bias
            weights = self.drop(tf.nn.softmax(energy), training)
            context = tf.reshape(tf.einsum("bhts,bshd->bthd", weights, val), [B, T, self.d])
            h = h + self.drop(context @ v[p + "att_out/W"] + v[p + "att_out/b"], training)
            f = tf.nn.relu(self.ln(h, p + "ff_ln") @ v[p + "ff1/W"] + v[p + "ff1/b"])
            h = h + self.drop(self.drop(f, training) @ v[p + "ff2/W"] + v[p + "ff2/b"], training)
        return self.ln(h, "final_ln") @ v["output/W"] + v["output/b"]


HAND = {"blstm": {"tf-blocklstm": lambda: HandBLSTM("block"), "tf-scan-lstm": lambda: HandBLSTM("scan"),
                  "keras-lstm": lambda: HandBLSTM("keras")},
        "transformer": {"tf-einsum": HandTransformer}}


# --- the train steps --------------------------------------------------------------------------------------------
def netcompiler_side(config):
    set_up_process()  # as compile-net's Session
    with collector_paused():  # as Session builds the model and the trainer
        model = CompiledNetwork(build_network(config), equal_layers_min=min_layers_setting(config.values))
        optimizer = make_optimizer(config.values)  # as compile-net's Session.train
        trainer = Trainer(model, optimizer, None, clip_gradients_fn(config.values),
                          stop_on_nonfinite=bool(config.get("stop_on_nonfinite_train_score", True)),
                          log=open(os.devnull, "w"))

    def step(x, y, n):
        return trainer.train_step({"data": x, "classes": y}, {"data": n, "classes": n})[1]

    step.compiled = trainer.train_step  # the tf.function, for looking at its graph
    return model, step


def hand_side(config, make):
    model = make()
    optimizer = make_optimizer(config.values)
    clip = gradient_clipping(config.values)["global_norm"]
    smoothing = config.values["network"]["output"].get("loss_opts", {}).get("label_smoothing", 0.0)
    variables = model.variables_list()

    def loss(x, y, lengths, training):
        mask = tf.sequence_mask(lengths, tf.shape(x)[1])
        losses, errors = smoothed_ce(tf.boolean_mask(model.logits(x, lengths, training), mask),
                                     tf.boolean_mask(y, mask), smoothing)
        return tf.reduce_sum(losses), tf.reduce_sum(errors)

    @tf.function(input_signature=[tf.TensorSpec([None, None, config.values["extern_data"]["data"]["dim"]]),
                                  tf.TensorSpec([None, None], tf.int32), tf.TensorSpec([None], tf.int32)])
    def step(x, y, lengths):
        with tf.GradientTape() as tape:
            loss_sum, _errors = loss(x, y, lengths, True)  # the summed loss, as compile-net's objective
        grads = tape.gradient(loss_sum, variables)
        grads, _ = tf.clip_by_global_norm(grads, clip) if clip else (grads, None)
        optimizer.apply_gradients(zip(grads, variables))
        return loss_sum

    return model, step, loss


def make_batches(model_name, quick, seed=0):
    """Identical random ragged batches (zero-padded features, class targets) for every side."""
    dim, classes, size = (40, 1000, 8) if model_name == "blstm" else (80, 500, 16)
    lo, hi, count = (40, 80, 1) if quick else (100, 300, 3)
    return random_batches(count, size, lo, hi, dim, classes, seed)


def random_batches(count, size, lo, hi, dim, classes, seed=0):
    """`count` batches (x, y, lengths) of `size` sequences, lengths in lo..hi: random `dim`-dim frames
    (zero-padded), random targets of `classes` classes with the same lengths."""
    rng, batches = np.random.RandomState(seed), []
    for _ in range(count):
        lengths = rng.randint(lo, hi + 1, size=size).astype(np.int32)
        x = rng.randn(size, lengths.max(), dim).astype(np.float32)
        x[np.arange(lengths.max())[None, :] >= lengths[:, None]] = 0.0
        y = rng.randint(0, classes, size=(size, lengths.max())).astype(np.int32)
        batches.append(tuple(tf.constant(a) for a in (x, y, lengths)))
    return batches


def run(step, batches):
    start = time.perf_counter()
    for x, y, lengths in batches:
        float(step(x, y, lengths))
    return time.perf_counter() - start


def time_sides(sides, batches, reps):
    """{side: [seconds per pass over `batches`] * reps}: every side runs one pass as warm-up (tracing, graph
    optimisation, first allocations), then `reps` passes, the order of the sides alternating to cancel drift."""
    times = {name: [] for name in sides}
    for step in sides.values():
        run(step, batches)
    for rep in range(reps):
        for name in (list(sides) if rep % 2 == 0 else list(sides)[::-1]):
            times[name].append(run(sides[name], batches))
    return times


def check_same_model(nc_model, hand_model, hand_loss, batch):
    """Same parameter count; same eval loss and gradients with netcompiler's weights copied over."""
    n_nc = sum(int(np.prod(v.shape)) for v in nc_model.trainable_params)
    n_hand = sum(int(np.prod(v.shape)) for v in hand_model.variables_list())
    assert n_nc == n_hand, f"parameter counts differ: netcompiler {n_nc}, hand-written {n_hand}"
    hand_model.load({name: v.numpy() for name, v in nc_model.params.items()})
    x, y, lengths = batch
    with tf.GradientTape() as tape:
        ctx = nc_model.forward({"data": x, "classes": y}, {"data": lengths, "classes": lengths}, False)
        nc_loss = nc_model.objective(nc_model.losses(ctx), ctx)
    nc_norm = tf.linalg.global_norm(tape.gradient(nc_loss, nc_model.trainable_params))
    with tf.GradientTape() as tape:
        hand_loss_sum, _ = hand_loss(x, y, lengths, False)
    hand_norm = tf.linalg.global_norm(tape.gradient(hand_loss_sum, hand_model.variables_list()))
    for what, a, b in (("loss", nc_loss, hand_loss_sum), ("gradient norm", nc_norm, hand_norm)):
        assert abs(float(a) - float(b)) <= 1e-3 * abs(float(a)), f"{what} differs: {float(a)} vs {float(b)}"
    return n_nc


def memory_child(model_name, side, quick):
    """Runs one side alone (warm-up + a pass over the batches) and prints its memory as JSON."""
    config, batches = MODELS[model_name](), make_batches(model_name, quick)
    step = netcompiler_side(config)[1] if side == "netcompiler" else hand_side(config, HAND[model_name][side])[1]
    before = proc_status_mb("VmRSS")
    run(step, batches + batches)
    try:
        info = tf.config.experimental.get_memory_info("CPU:0")
        tf_peak = f"{info['peak'] / 2**20:.0f} MB" if info["peak"] else "0 (not tracked on CPU)"
    except (ValueError, RuntimeError) as exc:
        tf_peak = f"unavailable ({type(exc).__name__})"
    # ru_maxrss survives fork + exec on Linux (the child starts with the parent's high-water mark), so the peak
    # is VmHWM, this process's own high-water mark; ru_maxrss is shown too
    rusage = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KB on Linux
    print(json.dumps({"peak_mb": proc_status_mb("VmHWM"), "before_mb": before, "ru_maxrss_mb": rusage,
                      "tf_peak": tf_peak}))


def proc_status_mb(key):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(key + ":")) / 1024


def memory_of(model_name, side):
    cmd = [sys.executable, os.path.abspath(__file__), "--memory-child", model_name, side]
    return json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.splitlines()[-1])


def benchmark(model_name, reps, quick, memory):
    config, batches = MODELS[model_name](), make_batches(model_name, quick)
    frames = sum(int(b[2].numpy().sum()) for b in batches)
    nc_model, nc_step = netcompiler_side(config)
    sides = {"netcompiler": nc_step}
    for variant, make in HAND[model_name].items():
        hand_model, sides[variant], hand_loss = hand_side(config, make)
        params = check_same_model(nc_model, hand_model, hand_loss, batches[0])
    times = time_sides(sides, batches, reps)
    fps = {name: frames / statistics.median(t) for name, t in times.items()}
    best = max((n for n in sides if n != "netcompiler"), key=fps.get)
    ratio = fps["netcompiler"] / fps[best]
    print(f"\n{model_name}: {params:,} parameters, {len(batches)} batches of B={batches[0][0].shape[0]} "
          f"({frames} valid frames per pass), median of {reps}")
    for name in sides:
        spread = f"{min(times[name]) * 1e3:.0f}..{max(times[name]) * 1e3:.0f} ms/pass"
        print(f"  {name:<14} {fps[name]:9.0f} frames/s   ({spread})")
    print(f"  ratio netcompiler / {best} = {ratio:.3f}   target >= {TARGET}: {'OK' if ratio >= TARGET else 'MISSED'}")
    if memory:
        for name in ("netcompiler", best):
            m = memory_of(model_name, name)
            print(f"  memory {name:<14} peak RSS {m['peak_mb']:7.0f} MB  (RSS {m['before_mb']:.0f} MB before the "
                  f"first step: +{m['peak_mb'] - m['before_mb']:.0f} MB; ru_maxrss {m['ru_maxrss_mb']:.0f} MB), "
                  f"TF allocator peak (get_memory_info): {m['tf_peak']}")
    return ratio


def main():
    load_builtin_layers()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smoke run (< 60 s)")
    parser.add_argument("--reps", type=int, default=None, help="timed repetitions per side (default 5; quick 1)")
    parser.add_argument("--models", default="blstm,transformer")
    parser.add_argument("--no-memory", action="store_true", help="skip the memory subprocesses")
    parser.add_argument("--memory-child", nargs=2, metavar=("MODEL", "SIDE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    tf.random.set_seed(42)
    if args.memory_child:
        return memory_child(*args.memory_child, args.quick)
    reps = args.reps or (1 if args.quick else 5)
    print(f"TF {tf.__version__}, {os.cpu_count()} CPUs; train steps of compile-net vs hand-written TF2")
    ratios = [benchmark(m, reps, args.quick, not (args.quick or args.no_memory)) for m in args.models.split(",")]
    return 1 if min(ratios) < TARGET and not args.quick else 0


if __name__ == "__main__":
    sys.exit(main())
