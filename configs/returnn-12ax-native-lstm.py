# The 12AX task in the style of RETURNN's own demo configs (num_inputs/num_outputs, "adam = True",
# RETURNN-only settings such as use_tensorflow/device, which netcompiler accepts with a notice).
# Train:  compile-net configs/returnn-12ax-native-lstm.py      Show shapes:  dump-net configs/returnn-12ax-native-lstm.py
use_tensorflow = True
task = "train"
device = "cpu"

train = {"class": "Task12AXDataset", "num_seqs": 1000}
dev = {"class": "Task12AXDataset", "num_seqs": 100, "fixed_random_seed": 1}

num_inputs = 9
num_outputs = {"classes": [2, 1]}  # 2 classes, sparse (ndim 1)
batching = "random"
batch_size = 5000
max_seqs = 10
chunking = "200:200"

network = {
    "lstm0": {"class": "rec", "unit": "nativelstm2", "n_out": 10, "direction": 1, "from": "data"},
    "lstm1": {"class": "rec", "unit": "standardlstm", "n_out": 10, "direction": 1, "from": "lstm0"},
    "output": {"class": "softmax", "n_out": 2, "loss": "ce", "from": "lstm1"},
}

adam = True
learning_rate = 0.01
model = "out/returnn-12ax/model"
num_epochs = 5

log_verbosity = 5
