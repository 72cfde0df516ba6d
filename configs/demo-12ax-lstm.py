# The 12AX task (a classic memory benchmark, built in): an LSTM learns to flag the target symbols.
# Train:  compile-net configs/demo-12ax-lstm.py      Show shapes:  dump-net configs/demo-12ax-lstm.py
task = "train"
train = {"class": "Task12AXDataset", "num_seqs": 1000}
dev = {"class": "Task12AXDataset", "num_seqs": 100, "fixed_random_seed": 1}
extern_data = {"data": {"dim": 9}, "classes": {"dim": 2, "sparse": True}}
batch_size = 5000  # frames per batch
max_seqs = 10
network = {
    "lstm": {"class": "rec", "unit": "lstm", "n_out": 10, "from": "data"},
    "output": {"class": "softmax", "loss": "ce", "from": "lstm", "target": "classes"},
}
optimizer = {"class": "adam"}
learning_rate = 0.01
num_epochs = 5
model = "out/12ax/model"
