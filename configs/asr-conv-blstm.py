# Hybrid acoustic model: 40-dim log-mel features -> conv front-end -> 3 BLSTM layers -> framewise softmax
# over 1000 tied states (CE with label smoothing; no time subsampling, so the alignment targets stay aligned).
# Train:  compile-net configs/asr-conv-blstm.py      Show shapes:  dump-net configs/asr-conv-blstm.py
import os

task = "train"
_data_dir = os.environ.get("ASR_DATA_DIR", "data/asr-features")
_num_train_parts = 10

extern_data = {
    "data": {"dim": 40},  # log-mel filterbank, [B, T, 40]
    "classes": {"dim": 1000, "sparse": True},  # framewise state alignment, [B, T]
}

train = {
    "class": "HDFDataset",
    "files": [os.path.join(_data_dir, f"train.{i}.hdf") for i in range(1, _num_train_parts + 1)],
    "partition_epoch": 4,
    "seq_ordering": "laplace:.1000",
}
dev = {
    "class": "HDFDataset",
    "files": [os.path.join(_data_dir, "dev.hdf")],
    "seq_ordering": "sorted",
}

batching = "random"
batch_size = 10000  # frames per batch
max_seqs = 64
max_seq_length = 3000
chunking = "100:50"  # framewise targets: chunks of 100 frames, step 50

_blstm_size = 512
_dropout = 0.1
network = {
    # conv front-end over (time, frequency): the 40 features become a frequency axis with 1 channel
    "source_split": {"class": "split_dims", "axis": "F", "dims": (-1, 1), "from": "data"},  # [B,T,40,1]
    "conv0": {"class": "conv", "filter_size": (3, 3), "padding": "same", "n_out": 32, "activation": "relu",
              "from": "source_split"},  # [B,T,40,32]
    "pool0": {"class": "pool", "mode": "max", "pool_size": (1, 2), "padding": "same", "from": "conv0"},  # [B,T,20,32]
    "conv1": {"class": "conv", "filter_size": (3, 3), "padding": "same", "n_out": 64, "activation": "relu",
              "from": "pool0"},  # [B,T,20,64]
    "pool1": {"class": "pool", "mode": "max", "pool_size": (1, 2), "padding": "same", "from": "conv1"},  # [B,T,10,64]
    "conv_merged": {"class": "merge_dims", "axes": "except_time", "from": "pool1"},  # [B,T,640]

    # 3 bidirectional LSTM layers: forward and backward halves, the next layer reads both
    "lstm0_fw": {"class": "rec", "unit": "nativelstm2", "n_out": _blstm_size, "direction": 1, "from": "conv_merged"},
    "lstm0_bw": {"class": "rec", "unit": "nativelstm2", "n_out": _blstm_size, "direction": -1, "from": "conv_merged"},
    "lstm1_fw": {"class": "rec", "unit": "nativelstm2", "n_out": _blstm_size, "direction": 1,
                 "dropout": _dropout, "from": ["lstm0_fw", "lstm0_bw"]},
    "lstm1_bw": {"class": "rec", "unit": "nativelstm2", "n_out": _blstm_size, "direction": -1,
                 "dropout": _dropout, "from": ["lstm0_fw", "lstm0_bw"]},
    "lstm2_fw": {"class": "rec", "unit": "nativelstm2", "n_out": _blstm_size, "direction": 1,
                 "dropout": _dropout, "from": ["lstm1_fw", "lstm1_bw"]},
    "lstm2_bw": {"class": "rec", "unit": "nativelstm2", "n_out": _blstm_size, "direction": -1,
                 "dropout": _dropout, "from": ["lstm1_fw", "lstm1_bw"]},

    "encoder": {"class": "dropout", "dropout": _dropout, "from": ["lstm2_fw", "lstm2_bw"]},  # [B,T,1024]
    "output": {"class": "softmax", "n_out": 1000, "loss": "ce", "loss_opts": {"label_smoothing": 0.1},
               "target": "classes", "from": "encoder"},
}

optimizer = {"class": "adam", "epsilon": 1e-8}
learning_rate = 0.001
gradient_clip_global_norm = 5.0
learning_rate_control = "newbob_multi_epoch"
learning_rate_control_error_measure = "dev_score_output"
learning_rate_control_relative_error_relative_lr = True
newbob_multi_num_epochs = 4  # = partition_epoch: compare full passes over the data
newbob_multi_update_interval = 1
newbob_learning_rate_decay = 0.7
newbob_relative_error_threshold = -0.005
min_learning_rate = 1e-5
learning_rate_file = "out/asr-conv-blstm/learning_rates"
num_epochs = 80
save_interval = 1
cleanup_old_models = True
model = "out/asr-conv-blstm/model"
