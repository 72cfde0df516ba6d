# A Transformer encoder written with the frontend (rf.Module: input projection, sinusoidal positions, pre-norm
# blocks of rf.SelfAttention and a feed-forward net, rf.LayerNorm, rf.Dropout) on the 12AX task, model under out/.
#   compile-net configs/transformer-enc-rf.py                       # backend "torch": PyTorch, eager
#   compile-net configs/transformer-enc-rf.py ++backend tensorflow  # the same model: frontend -> layer dict -> TF
#   dump-net configs/transformer-enc-rf.py                          # its parameters and the losses it marks

import math

from netcompiler.tensor import Tensor, Dim, batch_dim
import netcompiler.frontend as rf

backend = "torch"

task = "train"
train = {"class": "Task12AXDataset", "num_seqs": 1000}
dev = {"class": "Task12AXDataset", "num_seqs": 100, "fixed_random_seed": 1}

time_dim = Dim(None, name="time")
in_dim = Dim(9, name="in")
out_dim = Dim(2, name="out")
extern_data = {
    "data": {"dims": (batch_dim, time_dim, in_dim), "dtype": "float32"},
    "classes": {"dims": (batch_dim, time_dim), "sparse_dim": out_dim, "dtype": "int32"},
}

batching = "random"
batch_size = 5000
max_seqs = 20

model_dim = Dim(32, name="model")
ff_dim = Dim(64, name="ff")
att_heads = 2
encoder_blocks = 2
dropout = config.float("dropout", 0.1)  # noqa: F821 -- `config` is the config view; ++dropout 0 turns it off


def positional_encoding(axis: Dim, feature_dim: Dim) -> Tensor:
    """Sinusoidal positions [axis, feature_dim]: sin(t / 10000^(2i/D)) in the first half, cos in the second."""
    half = Dim(feature_dim.size // 2, name="pos-half")
    position = rf.cast(rf.range_over_dim(axis), "float32")
    inv_freq = rf.exp(rf.cast(rf.range_over_dim(half), "float32") * (-2.0 * math.log(10000.0) / feature_dim.size))
    angle = position * inv_freq
    return rf.concat((rf.sin(angle), half), (rf.cos(angle), half), out_dim=feature_dim)


class Block(rf.Module):
    """Pre-norm encoder block: x + Dropout(SelfAttention(LN(x))), then x + Dropout(FF(LN(x)))."""

    def __init__(self):
        super().__init__()
        self.att_ln = rf.LayerNorm(model_dim)
        self.att = rf.SelfAttention(model_dim, model_dim, key_dim_total=model_dim, value_dim_total=model_dim,
                                    num_heads=att_heads, att_dropout=dropout)
        self.ff_ln = rf.LayerNorm(model_dim)
        self.ff1 = rf.Linear(model_dim, ff_dim)
        self.ff2 = rf.Linear(ff_dim, model_dim)
        self.drop = rf.Dropout(dropout)

    def __call__(self, x: Tensor, *, axis: Dim) -> Tensor:
        x = x + self.drop(self.att(self.att_ln(x), axis=axis))
        return x + self.drop(self.ff2(self.drop(rf.relu(self.ff1(self.ff_ln(x))))))


class Model(rf.Module):
    """Input projection + positions, `encoder_blocks` Blocks, a final LayerNorm and the output Linear (logits)."""

    def __init__(self):
        super().__init__()
        self.input = rf.Linear(in_dim, model_dim)
        self.drop = rf.Dropout(dropout)
        self.blocks = rf.ModuleList([Block() for _ in range(encoder_blocks)])
        self.final_ln = rf.LayerNorm(model_dim)
        self.output = rf.Linear(model_dim, out_dim)

    def __call__(self, x: Tensor, *, axis: Dim) -> Tensor:
        x = self.drop(self.input(x) + positional_encoding(axis, model_dim))
        for block in self.blocks:
            x = block(x, axis=axis)
        return self.output(self.final_ln(x))


def get_model(**_kwargs):
    return Model()


def train_step(*, model: Model, extern_data, **_kwargs):
    logits = model(extern_data["data"], axis=time_dim)
    targets = extern_data["classes"]
    loss = rf.cross_entropy(estimated=logits, estimated_type="logits", target=targets, axis=out_dim)
    loss.mark_as_loss(name="ce")
    error = rf.cast(rf.compare(rf.reduce_argmax(logits, axis=out_dim), "not_equal", targets), "float32")
    error.mark_as_loss(name="fer", as_error=True)


# training
optimizer = {"class": "adam"}
learning_rate = 0.005
learning_rate_control = "newbob"
newbob_learning_rate_decay = 0.9
newbob_relative_error_threshold = 0.0
learning_rate_file = "out/transformer-enc-rf/learning_rates"

model = "out/transformer-enc-rf/model"
num_epochs = 5
