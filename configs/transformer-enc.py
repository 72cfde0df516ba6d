# A 2-block Transformer encoder (pre-norm, 4 heads, d_model 256, FF 1024) built from basic layers only,
# classifying every frame of 80-dim features into 500 classes (CE with label smoothing).
# Train:  compile-net configs/transformer-enc.py      Show shapes:  dump-net configs/transformer-enc.py
from netcompiler import SpatialDim

task = "train"
extern_data = {"data": {"dim": 80}, "classes": {"dim": 500, "sparse": True}}

train = {"class": "HDFDataset", "files": ["data/transformer/train.hdf"], "partition_epoch": 2,
         "seq_ordering": "laplace:.100"}
dev = {"class": "HDFDataset", "files": ["data/transformer/dev.hdf"], "seq_ordering": "sorted"}
batching = "random"
batch_size = 8000
max_seqs = 32

_d_model = 256
_heads = 4
_d_head = _d_model // _heads
_d_ff = 1024
_dropout = 0.1

# Self-attention multiplies queries [.., T, ..] with keys [.., T, ..] and keeps both time axes, so the keys
# need a time Dim of their own: `reinterpret_data` with `set_dim_tags` relabels their time axis as
# `_key_time` (the same lengths at run time). One key-time Dim serves every block.
_key_time = SpatialDim("key-time")


def _block(i, source):
    """The layers of encoder block i, reading layer `source`; its output is f"block{i}"."""
    p = f"block{i}_"
    return {
        # --- multi-head self-attention, residual
        p + "att_ln": {"class": "layer_norm", "from": source},
        p + "q": {"class": "linear", "n_out": _d_model, "with_bias": False, "from": p + "att_ln"},
        p + "k": {"class": "linear", "n_out": _d_model, "with_bias": False, "from": p + "att_ln"},
        p + "v": {"class": "linear", "n_out": _d_model, "with_bias": False, "from": p + "att_ln"},
        p + "q_heads": {"class": "split_dims", "axis": "F", "dims": (_heads, _d_head), "from": p + "q"},  # B,T,H,D
        p + "k_kt": {"class": "reinterpret_data", "set_dim_tags": {"T": _key_time}, "from": p + "k"},
        p + "v_kt": {"class": "reinterpret_data", "set_dim_tags": {"T": _key_time}, "from": p + "v"},
        p + "k_heads": {"class": "split_dims", "axis": "F", "dims": (_heads, _d_head), "from": p + "k_kt"},
        p + "v_heads": {"class": "split_dims", "axis": "F", "dims": (_heads, _d_head), "from": p + "v_kt"},
        # energies [B, H, T, key-time]
        p + "energy": {"class": "dot", "red1": "F", "red2": "F", "var1": "T", "var2": _key_time,
                       "from": [p + "q_heads", p + "k_heads"]},
        p + "weights": {"class": "softmax_over_spatial", "axis": _key_time, "energy_factor": _d_head ** -0.5,
                        "from": p + "energy"},
        p + "weights_drop": {"class": "dropout", "dropout": _dropout, "from": p + "weights"},
        # context [B, H, T, D] -> [B, T, H*D]
        p + "context": {"class": "dot", "red1": _key_time, "red2": _key_time, "var1": "T", "var2": "F",
                        "from": [p + "weights_drop", p + "v_heads"]},
        p + "context_merged": {"class": "merge_dims", "axes": "except_time", "from": p + "context"},
        p + "att_out": {"class": "linear", "n_out": _d_model, "from": p + "context_merged"},
        p + "att_drop": {"class": "dropout", "dropout": _dropout, "from": p + "att_out"},
        p + "att_res": {"class": "combine", "kind": "add", "from": [p + "att_drop", source]},
        # --- feed-forward, residual
        p + "ff_ln": {"class": "layer_norm", "from": p + "att_res"},
        p + "ff1": {"class": "linear", "n_out": _d_ff, "activation": "relu", "from": p + "ff_ln"},
        p + "ff2": {"class": "linear", "n_out": _d_model, "dropout": _dropout, "from": p + "ff1"},
        p + "ff_drop": {"class": "dropout", "dropout": _dropout, "from": p + "ff2"},
        f"block{i}": {"class": "combine", "kind": "add", "from": [p + "ff_drop", p + "att_res"]},
    }


network = {
    "input": {"class": "linear", "n_out": _d_model, "from": "data"},
    "input_drop": {"class": "dropout", "dropout": _dropout, "from": "input"},
    **_block(1, "input_drop"),
    **_block(2, "block1"),
    "final_ln": {"class": "layer_norm", "from": "block2"},
    "output": {"class": "softmax", "n_out": 500, "loss": "ce", "loss_opts": {"label_smoothing": 0.1},
               "target": "classes", "from": "final_ln"},
}

optimizer = {"class": "adam"}
learning_rate = 0.0005
gradient_clip_global_norm = 1.0
learning_rate_control = "newbob_multi_epoch"
learning_rate_control_error_measure = "dev_score_output"
newbob_multi_num_epochs = 2
newbob_learning_rate_decay = 0.8
num_epochs = 40
model = "out/transformer-enc/model"
