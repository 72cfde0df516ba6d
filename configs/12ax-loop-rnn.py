# The 12AX task with its recurrence written out as a loop body (a rec layer whose unit is a network dict):
# at every step, "data:source" is the input frame and "prev:output" the unit's own output one step earlier.
# Train:  compile-net configs/12ax-loop-rnn.py      Show shapes:  dump-net configs/12ax-loop-rnn.py
task = "train"
train = {"class": "Task12AXDataset", "num_seqs": 1000}
dev = {"class": "Task12AXDataset", "num_seqs": 100, "fixed_random_seed": 1}
num_inputs = 9
num_outputs = 2
batch_size = 5000
max_seqs = 40
network = {
    "elman": {"class": "rec", "from": "data", "unit": {
        "output": {"class": "linear", "n_out": 20, "activation": "tanh", "from": ["data:source", "prev:output"]},
    }},
    "output": {"class": "softmax", "loss": "ce", "from": "elman"},
}
adam = True
learning_rate = 0.005
num_epochs = 5
model = "out/12ax-loop-rnn/model"
