# Declares its own Dims: 80-dim mel features and framewise labels over 500 classes that share the time Dim;
# the network names axes by Dim objects and "stag:" descriptions (per-utterance mel normalisation, ...).
# Train:  compile-net configs/custom-dims.py      Show shapes:  dump-net configs/custom-dims.py
from netcompiler import Dim, batch_dim, SpatialDim, FeatureDim

time_dim = SpatialDim("time")
feat = FeatureDim("mel", 80)
vocab = FeatureDim("vocab", 500)
hidden = FeatureDim("hidden", 256)
assert isinstance(time_dim, Dim)

extern_data = {
    "data": {"dims": [batch_dim, time_dim, feat]},
    "classes": {"dims": [batch_dim, time_dim], "sparse_dim": vocab},
}

train = {"class": "HDFDataset", "files": ["data/custom-dims/train.hdf"], "partition_epoch": 2}
dev = {"class": "HDFDataset", "files": ["data/custom-dims/dev.hdf"]}
batch_size = 6000
max_seqs = 40

network = {
    # normalise each mel band over the utterance (mean and variance over time), scale/bias per band
    "mel_norm": {"class": "norm", "axes": time_dim, "param_shape": "stag:mel", "from": "data"},
    # 5-frame context windows around each frame, flattened with the mel bands
    "context": {"class": "window", "window_size": 5, "axis": time_dim, "from": "mel_norm"},  # [B,T,5,mel]
    "context_flat": {"class": "merge_dims", "axes": ["stag:context:window", "stag:mel"], "from": "context"},
    "hidden": {"class": "linear", "out_dim": hidden, "activation": "relu", "from": "context_flat"},
    "lstm": {"class": "rec", "unit": "lstm", "n_out": 256, "axis": time_dim, "from": "hidden"},
    "output": {"class": "softmax", "out_dim": vocab, "loss": "ce", "target": "classes", "from": "lstm"},
}

optimizer = {"class": "adam"}
learning_rate = 0.001
num_epochs = 20
model = "out/custom-dims/model"
