"""Train-step throughput of loop bodies (a `rec` layer with a `unit` dict), two comparisons:

  (a) lstm:      an LSTM written as a loop body (configs/12ax-loop-lstm.py's unit, resized) against the built-in
                 {"class": "rec", "unit": "lstm"} of the same size, both compiled by netcompiler;
  (b) attention: configs/attention-copy.py's encoder-decoder against a hand-written TF2 model of the same
                 architecture (the decoder a tf.scan over the target steps with teacher forcing).

    python benchmarks/loop_step.py            # full run (about a minute on 2 cores)
    python benchmarks/loop_step.py --quick    # smoke run: one small batch, one repetition (< 30 s)
    python benchmarks/loop_step.py --ops      # also count the ops in the while-loop bodies of every side

See benchmarks/README.md ("loop_step.py") for what is measured and how to read it.
"""

import argparse, collections, os, re, statistics, sys, time  # noqa: E401

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from netcompiler.builtin import load_builtin_layers  # noqa: E402
from netcompiler.config import load_config  # noqa: E402
from netcompiler.engine.optimizers import gradient_clipping, make_optimizer  # noqa: E402
from train_step import (ROOT, HandModel, check_same_model, glorot, netcompiler_side, random_batches,  # noqa: E402
                        scan_lstm, time_sides)

TARGETS = {"lstm": 0.7, "attention": 0.9}


# --- (a) the loop-body LSTM and the built-in unit ---------------------------------------------------------------
def lstm_configs(size, in_dim, classes):
    """{"loop-body": configs/12ax-loop-lstm.py with gates of `size`, "builtin": rec unit "lstm" of `size`}, both
    reading `in_dim`-dim frames and trained with CE on `classes` classes, Adam as that config sets it."""
    configs = {}
    for name in ("loop-body", "builtin"):
        config = load_config(os.path.join(ROOT, "configs", "12ax-loop-lstm.py"))
        config.values.update(num_inputs=in_dim, num_outputs=classes)
        net = config.values["network"]
        if name == "builtin":
            net["cell"] = {"class": "rec", "unit": "lstm", "n_out": size, "from": "data"}
        else:
            for layer in net["cell"]["unit"].values():
                if "n_out" in layer:
                    layer["n_out"] = size
        configs[name] = config
    return configs


# --- (b) the attention model, hand-written --------------------------------------------------------------------
class HandAttention(HandModel):
    """configs/attention-copy.py in plain TF2: embedding, BLSTM (a tf.scan LSTM each way, the backward one on the
    reversed sequences), keys; the decoder one tf.scan over the target steps (teacher forcing): state
    tanh([embed(prev label), prev att, prev state] W + b), additive attention over the keys with padded frames
    masked, att the weighted encoder frames. The previous-label embedding, the readout and the output layer do not
    depend on the step and run once over all steps, outside the scan. Time-major; variables named as
    netcompiler's parameters. attend="einsum": the energy a tensordot with the [att, 1] weight, the context an
    einsum over the frames; attend="mul": both broadcast products summed with reduce_sum."""

    def __init__(self, attend="einsum", symbols=10, embed=32, enc=64, att=64, state=64, readout=64):
        super().__init__()
        self.attend, self.sizes = attend, {"enc": enc, "state": state}
        d = "output/rec/"
        spec = {"enc_embed/W": [symbols, embed], "enc_keys/W": [2 * enc, att],
                d + "target_embed/W": [symbols, embed], d + "state/W": [embed + 2 * enc + state, state],
                d + "state/b": [state], d + "query/W": [state, att], d + "energy/W": [att, 1],
                d + "readout/W": [state + 2 * enc + embed, readout], d + "readout/b": [readout],
                d + "output_prob/W": [readout, symbols], d + "output_prob/b": [symbols]}
        for name in ("enc_fw", "enc_bw"):
            rec = name + "/rec/"  # the rec units' parameter names
            spec.update({rec + "W": [embed, 4 * enc], rec + "W_re": [enc, 4 * enc], rec + "b": [4 * enc]})
        self.v = {k: tf.Variable(glorot(s) if len(s) > 1 else tf.zeros(s), name=k.replace("/", "_"))
                  for k, s in spec.items()}

    def load(self, params):
        for name, var in self.v.items():
            var.assign(params[name])

    def run_lstm(self, x, name):
        """x: [T, B, in] -> h: [T, B, n]."""
        v = {p: self.v[f"{name}/rec/{p}"] for p in ("W", "W_re", "b")}
        return scan_lstm(x, v["W"], v["W_re"], v["b"], name=name)

    def logits(self, x, y, lengths, training):
        """[B, S, symbols] for inputs x [B, T] and targets y [B, S] (teacher forcing on y)."""
        v, d, B, T = self.v, "output/rec/", tf.shape(x)[0], tf.shape(x)[1]
        rev = lambda t: tf.reverse_sequence(t, lengths, seq_axis=0, batch_axis=1)  # noqa: E731
        embed = tf.gather(v["enc_embed/W"], tf.transpose(x))  # [T, B, E]
        enc = tf.concat([self.run_lstm(embed, "enc_fw"), rev(self.run_lstm(rev(embed), "enc_bw"))], -1)
        enc = tf.transpose(enc, [1, 0, 2])  # [B, T, 2 enc]
        keys = tf.tensordot(enc, v["enc_keys/W"], 1)  # [B, T, att]
        key_bias = tf.where(tf.sequence_mask(lengths, T), 0.0, float("-inf"))  # [B, T]
        prev_labels = tf.concat([tf.zeros([1, B], tf.int32), tf.transpose(y)[:-1]], 0)  # [S, B], label 0 first
        target_embed = tf.gather(v[d + "target_embed/W"], prev_labels)  # [S, B, E]

        def step(carry, embed_t):
            state, att = carry
            state = tf.tanh(tf.concat([embed_t, att, state], -1) @ v[d + "state/W"] + v[d + "state/b"])
            energy_in = tf.tanh(keys + (state @ v[d + "query/W"])[:, None, :])  # [B, T, att]
            if self.attend == "einsum":
                energy = tf.squeeze(tf.tensordot(energy_in, v[d + "energy/W"], 1), -1) + key_bias  # [B, T]
                return state, tf.einsum("bt,btf->bf", tf.nn.softmax(energy), enc)
            energy = tf.reduce_sum(energy_in * v[d + "energy/W"][:, 0], -1) + key_bias
            return state, tf.reduce_sum(tf.nn.softmax(energy)[:, :, None] * enc, 1)

        initial = (tf.zeros([B, self.sizes["state"]]), tf.zeros([B, 2 * self.sizes["enc"]]))
        states, atts = tf.scan(step, target_embed, initializer=initial, name="decoder")  # [S, B, .]
        readout = tf.tanh(tf.tensordot(tf.concat([states, atts, target_embed], -1), v[d + "readout/W"], 1)
                          + v[d + "readout/b"])
        logits = tf.tensordot(readout, v[d + "output_prob/W"], 1) + v[d + "output_prob/b"]
        return tf.transpose(logits, [1, 0, 2])


def attention_config():
    return load_config(os.path.join(ROOT, "configs", "attention-copy.py"))


def hand_attention_side(config, attend):
    """(model, step, loss) of HandAttention(attend), trained as compile-net trains the config: summed CE over the
    valid target frames, the config's optimizer (make_optimizer) and its gradient clipping."""
    model, optimizer = HandAttention(attend), make_optimizer(config.values)
    clip = gradient_clipping(config.values)
    assert not clip["norm"], "the hand-written step clips by value and global norm only"
    variables = model.variables_list()

    def loss(x, y, lengths, training):
        mask = tf.sequence_mask(lengths, tf.shape(y)[1])
        logits = tf.boolean_mask(model.logits(x, y, lengths, training), mask)
        labels = tf.boolean_mask(y, mask)
        errors = tf.not_equal(tf.argmax(logits, -1, output_type=tf.int32), labels)
        ce = tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
        return tf.reduce_sum(ce), tf.reduce_sum(tf.cast(errors, tf.float32))

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32)] * 2 + [tf.TensorSpec([None], tf.int32)],
                 autograph=False)  # plain TF calls, as netcompiler's Trainer traces its step
    def step(x, y, lengths):
        with tf.GradientTape() as tape:
            loss_sum, _errors = loss(x, y, lengths, True)
        grads = tape.gradient(loss_sum, variables)
        if clip["value"]:
            grads = [tf.clip_by_value(g, -clip["value"], clip["value"]) for g in grads]
        if clip["global_norm"]:
            grads, _ = tf.clip_by_global_norm(grads, clip["global_norm"])
        optimizer.apply_gradients(zip(grads, variables))
        return loss_sum

    return model, step, loss


def symbol_batches(count, size, lo, hi, symbols, seed=0):
    """Random copy-task batches: symbol sequences (0-padded), the target the same sequence."""
    rng, batches = np.random.RandomState(seed), []
    for _ in range(count):
        lengths = rng.randint(lo, hi + 1, size=size).astype(np.int32)
        x = rng.randint(0, symbols, size=(size, lengths.max())).astype(np.int32)
        x[np.arange(lengths.max())[None, :] >= lengths[:, None]] = 0
        batches.append((tf.constant(x), tf.constant(x), tf.constant(lengths)))
    return batches


# --- op counts in the loop bodies ----------------------------------------------------------------------------
def while_bodies(concrete):
    """[(body function name, Counter of op types)] of every While loop in a concrete function's graph and in the
    functions it calls (the forward loops and their gradient loops)."""
    graph_def = concrete.graph.as_graph_def()
    functions = {f.signature.name: f for f in graph_def.library.function}
    bodies = []
    for nodes in [graph_def.node] + [f.node_def for f in functions.values()]:
        for node in nodes:
            if node.op in ("While", "StatelessWhile") and node.attr["body"].func.name in functions:
                body = functions[node.attr["body"].func.name]
                bodies.append((body.signature.name, collections.Counter(n.op for n in body.node_def)))
    return sorted(bodies)


def print_ops(name, step_fn):
    concrete = getattr(step_fn, "compiled", step_fn).get_concrete_function()
    for body, ops in while_bodies(concrete):
        loop = re.sub(r"_body_\d+", "_body", re.sub(r"_(\d+_)?rewritten$|(?<=_grad)_\d+$", "", body))
        top = ", ".join(f"{op} {n}" for op, n in ops.most_common(10))
        print(f"    {name:<14} {loop:<40} {sum(ops.values()):4d} ops  ({top})")


def cpu_timed(step, seconds):
    """`step`, appending the process CPU time (all threads) of each call to `seconds`: on a busy machine it
    changes less than wall time."""
    def timed(*args):
        start = time.process_time()
        out = step(*args)
        seconds.append(time.process_time() - start)
        return out

    timed.compiled = getattr(step, "compiled", step)
    return timed


# --- the comparisons ------------------------------------------------------------------------------------------
def report(title, sides, batches, reps, references, target, ops, quick):
    """Times the sides, prints frames/s per side and the ratio sides[0] / the fastest of `references` with its
    target; the op counts of the loop bodies with `ops` or when the target is missed."""
    frames = sum(int(b[2].numpy().sum()) for b in batches)
    cpu = {name: [] for name in sides}
    times = time_sides({name: cpu_timed(step, cpu[name]) for name, step in sides.items()}, batches, reps)
    fps = {name: frames / statistics.median(t) for name, t in times.items()}
    cpu_ms = {name: statistics.median(sum(c[i:i + len(batches)]) for i in range(len(batches), len(c), len(batches)))
              * 1e3 for name, c in cpu.items()}  # per timed pass (the warm-up pass left out)
    first, reference = next(iter(sides)), max(references, key=fps.get)
    ratio = fps[first] / fps[reference]
    print(f"\n{title}\n  {len(batches)} batches of B={batches[0][0].shape[0]} ({frames} valid frames per pass), "
          f"median of {reps}")
    for name in sides:
        spread = f"{min(times[name]) * 1e3:.0f}..{max(times[name]) * 1e3:.0f} ms/pass"
        print(f"  {name:<14} {fps[name]:9.0f} frames/s   ({spread}; CPU {cpu_ms[name]:.0f} ms/pass)")
    ok = ratio >= target
    print(f"  ratio {first} / {reference} = {ratio:.3f}   target >= {target}: {'OK' if ok else 'MISSED'}"
          f"   (by the fastest pass: {min(times[reference]) / min(times[first]):.3f}; "
          f"by CPU time: {cpu_ms[reference] / cpu_ms[first]:.3f})")
    if ops or not (ok or quick):
        print("  while-loop bodies (forward and gradient loops), op counts:")
        for name, step in sides.items():
            print_ops(name, step)
    return ratio / target


def bench_lstm(args):
    size, in_dim, classes = (64, 16, 10) if args.quick else (args.lstm_size, 64, 10)
    batches = (random_batches(1, 8, 10, 20, in_dim, classes) if args.quick
               else random_batches(3, 32, 20, 40, in_dim, classes))
    sides, counts = {}, {}
    for name, config in lstm_configs(size, in_dim, classes).items():
        model, sides[name] = netcompiler_side(config)
        counts[name] = sum(int(np.prod(v.shape)) for v in model.trainable_params)
    assert counts["loop-body"] == counts["builtin"], f"parameter counts differ: {counts}"
    title = f"lstm (a): loop-body LSTM vs built-in unit 'lstm', n={size}, input {in_dim}, {counts['builtin']:,} params"
    return report(title, sides, batches, args.reps, ["builtin"], TARGETS["lstm"], args.ops, args.quick)


def bench_attention(args):
    config = attention_config()
    symbols = config.values["num_symbols"]
    batches = (symbol_batches(1, 8, 5, 10, symbols) if args.quick
               else symbol_batches(3, 32, 10, 20, symbols))
    nc_model, nc_step = netcompiler_side(config)
    sides = {"netcompiler": nc_step}
    for attend in ("einsum", "mul"):
        hand_model, sides["tf-scan-" + attend], hand_loss = hand_attention_side(config, attend)
        params = check_same_model(nc_model, hand_model, hand_loss, batches[0])  # same size, loss and gradients
    title = f"attention (b): configs/attention-copy.py vs hand-written TF2 (tf.scan decoder), {params:,} params"
    return report(title, sides, batches, args.reps, list(sides)[1:], TARGETS["attention"], args.ops, args.quick)


def main():
    load_builtin_layers()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smoke run (< 30 s)")
    parser.add_argument("--reps", type=int, default=None, help="timed repetitions per side (default 11; quick 1)")
    parser.add_argument("--models", default="lstm,attention")
    parser.add_argument("--lstm-size", type=int, default=128, help="LSTM size of comparison (a) (default 128)")
    parser.add_argument("--ops", action="store_true", help="print the op counts of the while-loop bodies")
    parser.add_argument("--threads", type=int, default=0, help="TF intra- and inter-op threads (default: TF's)")
    args = parser.parse_args()
    if args.threads:
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
        tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    args.reps = args.reps or (1 if args.quick else 11)
    tf.random.set_seed(42)
    print(f"TF {tf.__version__}, {os.cpu_count()} CPUs; loop-body train steps (ratio: higher is better)")
    bench = {"lstm": bench_lstm, "attention": bench_attention}
    margins = [bench[m](args) for m in args.models.split(",")]
    return 1 if min(margins) < 1.0 and not args.quick else 0


if __name__ == "__main__":
    sys.exit(main())
