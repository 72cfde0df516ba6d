"""The benchmark models of `run.py` (issue 12): for each, a netcompiler config and the hand-written TF2 model of the
same architecture (same parameter names, so weights can be copied and the loss compared), at three sizes:

  quick    tiny, for the CI smoke run
  default  the issue's architectures scaled down to run in minutes on 2 shared cores
  full     the issue's sizes (Transformer 12 x d512 = 38M parameters, BLSTM 6 x 512)

Importing this module imports neither TensorFlow nor PyTorch (the parent process of `run.py` stays light);
`hand_tf` imports `train_step` (TensorFlow) when called.
"""

import os
import re
import tempfile
from dataclasses import dataclass
from typing import Callable, Dict, Optional

from netcompiler.config import Config, load_config

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZES = ("quick", "default", "full")


@dataclass
class Batches:
    """`count` random batches of `size` sequences of `frames` frames (all full length) of `dim` features."""
    count: int
    size: int
    frames: int
    dim: int
    classes: int


@dataclass
class Model:
    """One benchmark model at one size: its config, its hand-written TF2 model, its batches."""
    name: str
    description: str
    config: Callable[[], Config]
    hand_tf: Callable[[], object]
    batches: Batches
    torch: Optional[tuple] = None  # (torch_step.py's model name, its settings): the hand-written PyTorch reference
    rounds_factor: int = 1
    """run.py runs `--rounds` times this many processes per side: more for a step of a few milliseconds, whose
    frames per CPU-second differ between processes by more than its distance from the goal (the 12AX step: +-10%,
    at parity on torch; session 23), and whose processes take seconds."""


def _batches(size, dim, classes, quick=(1, 4, 50), default=(2, 16, 200), full=(3, 16, 200)):
    return Batches(*{"quick": quick, "default": default, "full": full}[size], dim, classes)


def _train_step(name):
    """A helper of benchmarks/train_step.py, imported when first needed (it imports TensorFlow)."""
    import train_step

    return getattr(train_step, name)


# --- 12AX ---------------------------------------------------------------------------------------------------------
def hand_12ax():
    """configs/demo-12ax-lstm.py by hand: an LSTM (n=10; x W + b for all frames, then tf.scan) and the softmax."""
    import tensorflow as tf
    from train_step import HandModel, glorot, scan_lstm

    class Hand12AX(HandModel):
        def __init__(self, n=10, in_dim=9, classes=2):
            super().__init__()
            self.dropout = 0.0
            spec = {"lstm/W": [in_dim, 4 * n], "lstm/W_re": [n, 4 * n], "lstm/b": [4 * n],
                    "output/W": [n, classes], "output/b": [classes]}
            self.v = {k: tf.Variable(glorot(s) if len(s) > 1 else tf.zeros(s), name=k.replace("/", "_"))
                      for k, s in spec.items()}

        def load(self, params):
            params = {name.replace("/rec/", "/"): value for name, value in params.items()}
            for name, var in self.v.items():
                var.assign(params[name])

        def logits(self, x, lengths, training):
            v = self.v
            h = scan_lstm(tf.transpose(x, [1, 0, 2]), v["lstm/W"], v["lstm/W_re"], v["lstm/b"])
            return tf.transpose(tf.tensordot(h, v["output/W"], 1) + v["output/b"], [1, 0, 2])

    return Hand12AX()


def model_12ax(size):
    return Model("12ax", "configs/demo-12ax-lstm.py as shipped (LSTM 10, no dropout)",
                 lambda: load_config(os.path.join(ROOT, "configs", "demo-12ax-lstm.py")), hand_12ax,
                 _batches(size, 9, 2), torch=("12ax", {}), rounds_factor=3)


# --- conv front-end and BLSTM (train_step.py's asr-conv-blstm models) -----------------------------------------------
def asr_config(size=256, layers=2):
    """configs/asr-conv-blstm.py with `layers` (not 3) BLSTM layers of `size` (not 512) per direction; layers=0
    leaves the conv front-end alone in front of the output layer."""
    config = load_config(os.path.join(ROOT, "configs", "asr-conv-blstm.py"))
    shipped = config.values["network"]
    net = {k: dict(v) for k, v in shipped.items() if not k.startswith("lstm")}
    for i in range(layers):
        for d in ("fw", "bw"):  # lstm0 reads the conv front-end, every later layer both halves of the one before
            net[f"lstm{i}_{d}"] = dict(shipped[f"lstm{min(i, 1)}_{d}"], n_out=size)
            if i:
                net[f"lstm{i}_{d}"]["from"] = [f"lstm{i - 1}_fw", f"lstm{i - 1}_bw"]
    net["encoder"]["from"] = [f"lstm{layers - 1}_fw", f"lstm{layers - 1}_bw"] if layers else "conv_merged"
    config.values["network"] = net
    return config


def model_conv(size):
    return Model("conv", "asr-conv-blstm.py's conv front-end (2 conv 3x3 + max-pool) -> 1000-class softmax",
                 lambda: asr_config(layers=0),
                 lambda: _train_step("HandBLSTM")("scan", layers=0), _batches(size, 40, 1000), torch=("conv", {}))


BLSTM_SIZES = {"quick": (1, 32), "default": (2, 128), "full": (6, 512)}


def model_blstm(size):
    layers, n = BLSTM_SIZES[size]
    return Model("blstm", f"asr-conv-blstm.py with {layers} BLSTM layers x {n} (hand: projection + tf.scan; "
                 "torch: torch.nn.LSTM on packed sequences)",
                 lambda: asr_config(n, layers),
                 lambda: _train_step("HandBLSTM")("scan", n, layers=layers),
                 _batches(size, 40, 1000, default=(1, 16, 200)), torch=("blstm", {"layers": layers, "n": n}))


# --- deep linear chain --------------------------------------------------------------------------------------------
LINEAR_WIDTH = {"quick": 32, "default": 128, "full": 256}


def linear_config(layers, width, dim=40, classes=100, dropout=0.1):
    """A chain of `layers` `linear` layers (ReLU, `width` units, dropout on the input) and a softmax, Adam."""
    network = {f"l{i}": {"class": "linear", "n_out": width, "activation": "relu", "dropout": dropout,
                         "from": f"l{i - 1}" if i > 1 else "data"} for i in range(1, layers + 1)}
    network["output"] = {"class": "softmax", "n_out": classes, "loss": "ce", "target": "classes",
                         "from": f"l{layers}"}
    return Config({"extern_data": {"data": {"dim": dim}, "classes": {"dim": classes, "sparse": True}},
                   "network": network, "optimizer": {"class": "adam"}, "learning_rate": 0.001})


def hand_linear(layers, width, dim=40, classes=100, dropout=0.1):
    """The chain by hand: `x @ W + b`, ReLU, dropout on each layer's input, as the config."""
    import tensorflow as tf
    from train_step import HandModel, glorot

    class HandLinear(HandModel):
        def __init__(self):
            super().__init__()
            self.dropout, self.layers = dropout, layers
            spec = {"output/W": [width, classes], "output/b": [classes]}
            for i in range(1, layers + 1):
                spec.update({f"l{i}/W": [width if i > 1 else dim, width], f"l{i}/b": [width]})
            self.v = {k: tf.Variable(glorot(s) if len(s) > 1 else tf.zeros(s), name=k.replace("/", "_"))
                      for k, s in spec.items()}

        def load(self, params):
            for name, var in self.v.items():
                var.assign(params[name])

        def logits(self, x, lengths, training):
            h = x
            for i in range(1, self.layers + 1):
                h = tf.nn.relu(self.drop(h, training) @ self.v[f"l{i}/W"] + self.v[f"l{i}/b"])
            return h @ self.v["output/W"] + self.v["output/b"]

    return HandLinear()


def model_linear(size, layers, width=None, batches=None):
    if size == "quick":
        layers //= 10
    width = width or LINEAR_WIDTH[size]
    return Model(f"linear-{layers}", f"{layers} linear layers x {width}, ReLU, dropout 0.1, 100-class softmax",
                 lambda: linear_config(layers, width), lambda: hand_linear(layers, width),
                 batches or _batches(size, 40, 100), torch=("linear", {"layers": layers, "width": width}))


# --- Transformer --------------------------------------------------------------------------------------------------
# blocks, d_model, heads, FF: 4 heads and FF 4 d everywhere, as torch_step.py's hand-written torch Transformer
TRANSFORMER_SIZES = {"quick": (2, 32, 4, 128), "default": (12, 128, 4, 512), "full": (12, 512, 4, 2048)}


def edited_config(name, substitutions):
    """configs/`name` loaded after the regex `substitutions` ((pattern, replacement) pairs, each must match) were
    made in its source: a shipped config at other sizes, its architecture kept."""
    with open(os.path.join(ROOT, "configs", name)) as f:
        source = f.read()
    for old, new in substitutions:
        source, count = re.subn(old, lambda m: new, source)
        assert count, f"configs/{name} changed: {old!r} not found"
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(source)
    try:
        return load_config(f.name)
    finally:
        os.unlink(f.name)


def transformer_config(blocks, d, heads, ff):
    """configs/transformer-enc.py with `blocks` blocks of d_model `d`, `heads` heads, FF `ff` (the file's
    `_block` function, so the architecture stays the shipped one)."""
    chain = ("**{k: v for i in range(1, _blocks + 1)\n       for k, v in _block(i, f\"block{i - 1}\" if i > 1 else "
             "\"input_drop\").items()},\n")
    return edited_config("transformer-enc.py", (
        (r"_d_model = 256", f"_d_model = {d}"), (r"_heads = 4", f"_heads = {heads}"),
        (r"_d_ff = 1024", f"_d_ff = {ff}\n_blocks = {blocks}"),
        (r'    \*\*_block\(1, "input_drop"\),\n    \*\*_block\(2, "block1"\),\n', "    " + chain),
        (r'"from": "block2"', f'"from": "block{blocks}"')))


def model_transformer(size):
    blocks, d, heads, ff = TRANSFORMER_SIZES[size]
    return Model("transformer", f"transformer-enc.py with {blocks} pre-norm blocks, d {d}, {heads} heads, FF {ff}",
                 lambda: transformer_config(blocks, d, heads, ff),
                 lambda: _train_step("HandTransformer")(blocks, d, heads, ff),
                 _batches(size, 80, 500), torch=("transformer", {"blocks": blocks, "d": d}))


SCALING_WIDTH = 64  # the --scaling chain: narrow, so the graph's size (not the math) is what is measured
SCALING_BATCHES = Batches(1, 1, 10, 40, 100)
"""The --scaling chain's first step: one sequence of 10 frames, so its peak memory is the build's. A step on 16 x 200
frames keeps ~1.8 MB of activations per layer for backward (a dropout output and a ReLU output of 3200 x 64 floats,
a bool mask): ~9 GB at 5000 layers in any implementation, which says nothing about building."""

MODELS: Dict[str, Callable[[str], Model]] = {
    "12ax": model_12ax, "conv": model_conv, "linear-100": lambda size: model_linear(size, 100),
    "linear-400": lambda size: model_linear(size, 400), "transformer": model_transformer, "blstm": model_blstm}


def get_model(name: str, size: str) -> Model:
    """The model `name` at `size`; "linear-N" for any N (the --scaling chain, first step on SCALING_BATCHES)."""
    if name in MODELS:
        return MODELS[name](size)
    if re.fullmatch(r"linear-\d+", name):
        return model_linear("default", int(name.split("-")[1]), width=SCALING_WIDTH, batches=SCALING_BATCHES)
    raise SystemExit(f"unknown model {name!r} (known: {', '.join(MODELS)}, or linear-N)")
