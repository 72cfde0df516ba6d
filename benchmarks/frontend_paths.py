"""Train-step throughput of one model on netcompiler's three paths against hand-written PyTorch and TF2 code:

  torch-eager      the frontend model (rf.Module of a config) run eagerly on PyTorch (`FrontendModel` +
                   `TorchTrainer`, as compile-net trains backend "torch")
  tf-layerdict     the same frontend model turned into a layer dict, built and trained on TF (`LayerDictModel` +
                   the tf.function `Trainer`, as compile-net ++backend tensorflow)
  layerdict-torch  a layer-dict config (a network dict) of the same model trained on PyTorch (`CompiledNetwork`
                   with backend "torch" + `TorchTrainer`, as compile-net ++backend torch)
  layerdict-tf     that network dict on TF (compile-net's usual path), for comparison
  hand-torch       hand-written torch.nn code of the same model (same parameter count), torch.optim.Adam
  hand-tf          hand-written TF2 code in one tf.function, the Keras Adam compile-net makes

Models: "mlp" (demo-12ax-rf's 9 -> 50 -> 100 -> 2 MLP) and "transformer" (configs/transformer-enc-rf.py: input
projection, sinusoidal positions, 2 pre-norm blocks of 2-head self-attention d=32 and FF 64, dropout 0.1). Every
torch side runs with torch's default thread count and with 1 thread ("... 1T").

    python benchmarks/frontend_paths.py             # both models, 5 repetitions (a few minutes on 2 cores)
    python benchmarks/frontend_paths.py --quick     # one small batch, 1 repetition (CI smoke)
    python benchmarks/frontend_paths.py --models transformer --reps 9

See benchmarks/README.md ("frontend_paths.py") for what is measured and how to read it.
"""

import argparse, math, os, statistics, sys, time  # noqa: E401

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from netcompiler.builtin import load_builtin_layers  # noqa: E402
from netcompiler.config import Config, load_config  # noqa: E402
from netcompiler.emit.model import CompiledNetwork  # noqa: E402
from netcompiler.engine.frontend_layers import LayerDictModel  # noqa: E402
from netcompiler.engine.frontend_model import FrontendModel  # noqa: E402
from netcompiler.engine.optimizers import make_optimizer  # noqa: E402
from netcompiler.engine.torch_optimizers import make_torch_optimizer  # noqa: E402
from netcompiler.engine.torch_trainer import TorchTrainer  # noqa: E402
from netcompiler.network import build_network  # noqa: E402
from models import edited_config  # noqa: E402
from train_step import ROOT, glorot, netcompiler_side, random_batches  # noqa: E402

DEFAULT_THREADS = torch.get_num_threads()


# --- the models as configs ------------------------------------------------------------------------------------
def frontend_config(model_name):
    name = "demo-12ax-rf.py" if model_name == "mlp" else "transformer-enc-rf.py"
    return load_config(os.path.join(ROOT, "configs", name))


def network_config(model_name):
    """A layer-dict config of the model: for "mlp" three linear layers; for "transformer" configs/transformer-enc.py
    resized to the frontend config's sizes (q, k, v with biases, as the frontend's qkv; no positional encoding,
    which has no parameters; 2 classes, no label smoothing)."""
    extern = {"data": {"dim": 9}, "classes": {"dim": 2, "sparse": True}}
    if model_name == "mlp":
        network = {"layer1": {"class": "linear", "n_out": 50, "activation": "relu", "from": "data"},
                   "layer2": {"class": "linear", "n_out": 100, "activation": "relu", "from": "layer1"},
                   "output": {"class": "softmax", "n_out": 2, "loss": "ce", "target": "classes", "from": "layer2"}}
        return Config({"extern_data": extern, "network": network, "optimizer": {"class": "adam"},
                       "learning_rate": 0.01})
    return edited_config("transformer-enc.py", (
        (r"_d_model = 256", "_d_model = 32"), (r"_heads = 4", "_heads = 2"), (r"_d_ff = 1024", "_d_ff = 64"),
        (r'"with_bias": False', '"with_bias": True'), (r'"n_out": 500', '"n_out": 2'),
        (r', "loss_opts": \{"label_smoothing": 0.1\}', ""), (r'extern_data = .*', f"extern_data = {extern!r}")))


# --- hand-written PyTorch --------------------------------------------------------------------------------------
def sinusoids(length, dim, module):
    """[length, dim] positions as the config's positional_encoding: sin in the first half, cos in the second
    (`module`: torch or tf)."""
    arange = torch.arange if module is torch else (lambda n, dtype: tf.range(n, dtype=dtype))
    position = arange(length, dtype=module.float32)[:, None]
    inv_freq = module.exp(arange(dim // 2, dtype=module.float32) * (-2.0 * math.log(10000.0) / dim))
    angle = position * inv_freq[None, :]
    return (torch.cat if module is torch else tf.concat)([module.sin(angle), module.cos(angle)], -1)


class TorchMLP(torch.nn.Module):
    """9 -> 50 -> 100 -> 2, ReLU."""

    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(9, 50), torch.nn.ReLU(), torch.nn.Linear(50, 100),
                                       torch.nn.ReLU(), torch.nn.Linear(100, 2))

    def forward(self, x, lengths):
        return self.net(x)


class TorchTransformer(torch.nn.Module):
    """The config's encoder with torch.nn: pre-norm blocks, qkv projection, F.scaled_dot_product_attention with a
    key mask and attention dropout."""

    def __init__(self, d=32, heads=2, ff=64, blocks=2, dropout=0.1):
        super().__init__()
        self.d, self.heads, self.p = d, heads, dropout
        self.input, self.output, self.final_ln = torch.nn.Linear(9, d), torch.nn.Linear(d, 2), torch.nn.LayerNorm(d, 1e-6)
        self.blocks = torch.nn.ModuleList(torch.nn.ModuleDict({
            "att_ln": torch.nn.LayerNorm(d, 1e-6), "qkv": torch.nn.Linear(d, 3 * d), "proj": torch.nn.Linear(d, d),
            "ff_ln": torch.nn.LayerNorm(d, 1e-6), "ff1": torch.nn.Linear(d, ff), "ff2": torch.nn.Linear(ff, d)})
            for _ in range(blocks))

    def forward(self, x, lengths):
        B, T = x.shape[:2]
        drop = lambda t: F.dropout(t, self.p, self.training)  # noqa: E731
        key_mask = (torch.arange(T)[None, :] < lengths[:, None])[:, None, None, :]  # [B, 1, 1, T]
        h = drop(self.input(x) + sinusoids(T, self.d, torch))
        for b in self.blocks:
            q, k, v = b["qkv"](b["att_ln"](h)).view(B, T, self.heads, 3, self.d // self.heads).permute(3, 0, 2, 1, 4)
            att = F.scaled_dot_product_attention(q, k, v, attn_mask=key_mask, dropout_p=self.p if self.training else 0.0)
            h = h + drop(b["proj"](att.transpose(1, 2).reshape(B, T, self.d)))
            h = h + drop(b["ff2"](drop(F.relu(b["ff1"](b["ff_ln"](h))))))
        return self.output(self.final_ln(h))


def hand_torch_side(model_name, lr):
    model = TorchMLP() if model_name == "mlp" else TorchTransformer()
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)

    def step(x, y, lengths):
        mask = torch.arange(x.shape[1])[None, :] < lengths[:, None]
        logits = model(x, lengths)[mask]
        loss = F.cross_entropy(logits, y[mask].long(), reduction="sum")
        errors = (logits.argmax(-1) != y[mask]).float().sum()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return loss.detach(), errors

    return sum(p.numel() for p in model.parameters()), step


# --- hand-written TF2 ------------------------------------------------------------------------------------------
class TFModel(tf.Module):
    """Variables `v` by name, glorot-initialised matrices, ones for LayerNorm scales, zeros for biases."""

    def __init__(self, spec):
        super().__init__()
        self.v = {k: tf.Variable(glorot(s) if len(s) == 2 else tf.ones(s) if k.endswith("scale") else tf.zeros(s))
                  for k, s in spec.items()}

    def ln(self, x, name):
        mean, var = tf.nn.moments(x, [-1], keepdims=True)
        return tf.nn.batch_normalization(x, mean, var, self.v[name + "/bias"], self.v[name + "/scale"], 1e-6)


class TFMLP(TFModel):
    def __init__(self):
        super().__init__({"l1/W": [9, 50], "l1/b": [50], "l2/W": [50, 100], "l2/b": [100], "out/W": [100, 2],
                          "out/b": [2]})

    def logits(self, x, lengths, training):
        v = self.v
        h = tf.nn.relu(x @ v["l1/W"] + v["l1/b"])
        return tf.nn.relu(h @ v["l2/W"] + v["l2/b"]) @ v["out/W"] + v["out/b"]


class TFTransformer(TFModel):
    """The config's encoder in plain TF ops: einsum attention, additive -inf key mask."""

    def __init__(self, d=32, heads=2, ff=64, blocks=2, dropout=0.1):
        spec = {"in/W": [9, d], "in/b": [d], "final_ln/scale": [d], "final_ln/bias": [d], "out/W": [d, 2],
                "out/b": [2]}
        for i in range(blocks):
            spec.update({f"{i}/qkv/W": [d, 3 * d], f"{i}/qkv/b": [3 * d], f"{i}/proj/W": [d, d], f"{i}/proj/b": [d],
                         f"{i}/ff1/W": [d, ff], f"{i}/ff1/b": [ff], f"{i}/ff2/W": [ff, d], f"{i}/ff2/b": [d]})
            spec.update({f"{i}/{ln}/{k}": [d] for ln in ("att_ln", "ff_ln") for k in ("scale", "bias")})
        super().__init__(spec)
        self.d, self.heads, self.blocks, self.p = d, heads, blocks, dropout

    def logits(self, x, lengths, training):
        v, B, T = self.v, tf.shape(x)[0], tf.shape(x)[1]
        drop = (lambda t: tf.nn.dropout(t, self.p)) if training else (lambda t: t)
        key_bias = tf.where(tf.sequence_mask(lengths, T), 0.0, float("-inf"))[:, None, None, :]
        h = drop(x @ v["in/W"] + v["in/b"] + sinusoids(T, self.d, tf))
        for i in range(self.blocks):
            qkv = tf.reshape(self.ln(h, f"{i}/att_ln") @ v[f"{i}/qkv/W"] + v[f"{i}/qkv/b"],
                             [B, T, self.heads, 3, self.d // self.heads])
            q, k, val = tf.unstack(qkv, axis=3)
            energy = tf.einsum("bthd,bshd->bhts", q, k) * (self.d // self.heads) ** -0.5 + key_bias
            context = tf.reshape(tf.einsum("bhts,bshd->bthd", drop(tf.nn.softmax(energy)), val), [B, T, self.d])
            h = h + drop(context @ v[f"{i}/proj/W"] + v[f"{i}/proj/b"])
            f = drop(tf.nn.relu(self.ln(h, f"{i}/ff_ln") @ v[f"{i}/ff1/W"] + v[f"{i}/ff1/b"]))
            h = h + drop(f @ v[f"{i}/ff2/W"] + v[f"{i}/ff2/b"])
        return self.ln(h, "final_ln") @ v["out/W"] + v["out/b"]


def hand_tf_side(model_name, config):
    model = TFMLP() if model_name == "mlp" else TFTransformer()
    variables = list(model.v.values())
    optimizer = make_optimizer(config.values)

    @tf.function(input_signature=[tf.TensorSpec([None, None, 9]), tf.TensorSpec([None, None], tf.int32),
                                  tf.TensorSpec([None], tf.int32)], autograph=False)
    def step(x, y, lengths):
        mask = tf.sequence_mask(lengths, tf.shape(x)[1])
        with tf.GradientTape() as tape:
            logits = tf.boolean_mask(model.logits(x, lengths, True), mask)
            labels = tf.boolean_mask(y, mask)
            loss = tf.reduce_sum(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
        errors = tf.reduce_sum(tf.cast(tf.not_equal(tf.argmax(logits, -1, output_type=tf.int32), labels), tf.float32))
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss, errors

    return sum(int(np.prod(v.shape)) for v in variables), step


# --- netcompiler's paths --------------------------------------------------------------------------------------
def torch_trainer_step(model, config):
    trainer = TorchTrainer(model, make_torch_optimizer(config.values, model.trainable_params), None)

    def step(x, y, lengths):
        return trainer.train_step({"data": x, "classes": y}, {"data": lengths, "classes": lengths})[1]

    return step


def netcompiler_sides(model_name):
    """{path: (parameter count, step, framework)}."""
    config = frontend_config(model_name)
    count = lambda params: sum(int(np.prod(tuple(p.shape))) for p in params)  # noqa: E731
    sides = {}
    torch.manual_seed(42)
    eager = FrontendModel(config, "torch", seed=42)
    sides["torch-eager"] = (count(eager.trainable_params), torch_trainer_step(eager, config), "torch")
    dict_tf = LayerDictModel(config, seed=42)
    tf_step = netcompiler_side_for(dict_tf, config)
    sides["tf-layerdict"] = (count(dict_tf.trainable_params), tf_step, "tf")
    net_config = network_config(model_name)
    on_torch = CompiledNetwork(build_network(net_config), seed=42, backend="torch")
    sides["layerdict-torch"] = (count(on_torch.trainable_params), torch_trainer_step(on_torch, net_config), "torch")
    model, step = netcompiler_side(net_config)
    sides["layerdict-tf"] = (count(model.trainable_params), step, "tf")
    return config, sides


def netcompiler_side_for(model, config):
    """compile-net's TF Trainer on a step model (train_step.netcompiler_side does this for a CompiledNetwork)."""
    from netcompiler.engine.optimizers import clip_gradients_fn
    from netcompiler.engine.trainer import Trainer

    optimizer = make_optimizer(config.values)
    trainer = Trainer(model, optimizer, None, clip_gradients_fn(config.values), log=open(os.devnull, "w"))

    def step(x, y, n):
        return trainer.train_step({"data": x, "classes": y}, {"data": n, "classes": n})[1]

    return step


# --- timing ---------------------------------------------------------------------------------------------------
def with_threads(step, threads):
    """`step` run with torch's intra-op thread count set to `threads` (restored to the default after)."""
    def run(*args):
        torch.set_num_threads(threads)
        try:
            return step(*args)
        finally:
            torch.set_num_threads(DEFAULT_THREADS)
    return run


def one_pass(step, batches):
    """(wall s, process CPU s) of one pass over the batches."""
    wall, cpu = time.perf_counter(), time.process_time()
    for x, y, lengths in batches:
        out = step(x, y, lengths)
        float(out[0] if isinstance(out, tuple) else out)
    return time.perf_counter() - wall, time.process_time() - cpu


def benchmark(model_name, reps, quick, thread_settings):
    config, sides = netcompiler_sides(model_name)
    lr = config.values["learning_rate"]
    sides["hand-torch"] = (*hand_torch_side(model_name, lr), "torch")
    sides["hand-tf"] = (*hand_tf_side(model_name, config), "tf")
    counts = {name: side[0] for name, side in sides.items()}
    assert len(set(counts.values())) == 1, f"parameter counts differ: {counts}"
    steps = {}
    for name, (_, step, framework) in sides.items():
        if framework == "tf" or "default" in thread_settings:
            steps[name] = (with_threads(step, DEFAULT_THREADS), framework)
        if framework == "torch" and "1" in thread_settings:
            steps[name + " 1T"] = (with_threads(step, 1), framework)
    tf_batches = random_batches(1, 8, 40, 80, 9, 2) if quick else random_batches(3, 16, 150, 200, 9, 2)
    numpy_batches = [tuple(t.numpy() for t in batch) for batch in tf_batches]
    data = {"tf": tf_batches, "torch": [tuple(torch.from_numpy(a) for a in batch) for batch in numpy_batches]}
    frames = int(sum(b[2].sum() for b in numpy_batches))
    wall, cpu = {name: [] for name in steps}, {name: [] for name in steps}
    for name, (step, framework) in steps.items():  # warm-up: tracing, graph optimisation, first allocations
        one_pass(step, data[framework])
    for rep in range(reps):
        for name in (list(steps) if rep % 2 == 0 else list(steps)[::-1]):
            step, framework = steps[name]
            w, c = one_pass(step, data[framework])
            wall[name].append(w)
            cpu[name].append(c)
    fps_cpu = {name: frames / statistics.median(c) for name, c in cpu.items()}
    fps_wall = {name: frames / statistics.median(w) for name, w in wall.items()}
    print(f"\n{model_name}: {counts['hand-tf']:,} parameters, {len(numpy_batches)} batches of "
          f"B={numpy_batches[0][0].shape[0]} ({frames} valid frames per pass), median of {reps}; torch default "
          f"threads {DEFAULT_THREADS}")
    print(f"  {'side':<20} {'frames/CPU-s':>12} {'frames/s':>9}   ratio (per CPU-s, per wall-s) vs hand-written")
    for name in steps:
        framework = steps[name][1]
        reference = "hand-tf" if framework == "tf" else "hand-torch" + (" 1T" if name.endswith(" 1T") else "")
        ratio = f"{fps_cpu[name] / fps_cpu[reference]:.2f}, {fps_wall[name] / fps_wall[reference]:.2f} vs {reference}"
        print(f"  {name:<20} {fps_cpu[name]:12.0f} {fps_wall[name]:9.0f}   {ratio}")
    for name in [n for n in steps if n.endswith(" 1T") and n[:-3] in steps]:
        default = name[:-3]
        print(f"  threads: {default:<16} 1 thread / {DEFAULT_THREADS} threads: {fps_cpu[name] / fps_cpu[default]:.2f} "
              f"per CPU-s, {fps_wall[name] / fps_wall[default]:.2f} per wall-s")


def main():
    load_builtin_layers()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smoke run: one small batch, 1 repetition")
    parser.add_argument("--reps", type=int, default=None, help="timed repetitions per side (default 5; quick 1)")
    parser.add_argument("--models", default="mlp,transformer")
    parser.add_argument("--torch-threads", default="default,1",
                        help="thread settings of the torch sides: 'default' (torch's), '1', or both (the default)")
    args = parser.parse_args()
    tf.random.set_seed(42)
    print(f"TF {tf.__version__}, torch {torch.__version__}, {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.2f}; frontend paths vs hand-written code (ratio: higher is better)")
    for model_name in args.models.split(","):
        benchmark(model_name, args.reps or (1 if args.quick else 5), args.quick, args.torch_threads.split(","))
    print(f"\nload average at the end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
