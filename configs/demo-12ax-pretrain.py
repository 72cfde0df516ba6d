# Pretraining on the built-in 12AX task: three stacked BLSTMs grown one pair per epoch (RETURNN's "default"
# construction, from the output), each step trained for 2 epochs; epochs 1-6 pretrain, 7-8 train the full network.
#   dump-net configs/demo-12ax-pretrain.py --epoch 1     # the network of epoch 1: lstm1_fw/bw -> output
#   compile-net configs/demo-12ax-pretrain.py
task = "train"
train = {"class": "Task12AXDataset", "num_seqs": 500}
dev = {"class": "Task12AXDataset", "num_seqs": 100, "fixed_random_seed": 1}
extern_data = {"data": {"dim": 9}, "classes": {"dim": 2, "sparse": True}}
batch_size = 5000
max_seqs = 20
network = {
    "lstm1_fw": {"class": "rec", "unit": "lstm", "n_out": 10, "direction": 1, "from": ["data"]},
    "lstm1_bw": {"class": "rec", "unit": "lstm", "n_out": 10, "direction": -1, "from": ["data"]},
    "lstm2_fw": {"class": "rec", "unit": "lstm", "n_out": 10, "direction": 1, "from": ["lstm1_fw", "lstm1_bw"]},
    "lstm2_bw": {"class": "rec", "unit": "lstm", "n_out": 10, "direction": -1, "from": ["lstm1_fw", "lstm1_bw"]},
    "lstm3_fw": {"class": "rec", "unit": "lstm", "n_out": 10, "direction": 1, "from": ["lstm2_fw", "lstm2_bw"]},
    "lstm3_bw": {"class": "rec", "unit": "lstm", "n_out": 10, "direction": -1, "from": ["lstm2_fw", "lstm2_bw"]},
    "output": {"class": "softmax", "loss": "ce", "from": ["lstm3_fw", "lstm3_bw"], "target": "classes"},
}
pretrain = {"repetitions": 2}  # or "default" (one epoch per step)
optimizer = {"class": "adam"}
learning_rate = 0.01
num_epochs = 8
model = "out/12ax-pretrain/model"
