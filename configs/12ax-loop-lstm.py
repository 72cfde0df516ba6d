# The 12AX task with an LSTM spelled out as layers of a loop body: three sigmoid gates and a candidate from
# [input frame, previous output]; the cell state carries over through "prev:state".
# Train:  compile-net configs/12ax-loop-lstm.py      Show shapes:  dump-net configs/12ax-loop-lstm.py
task = "train"
train = {"class": "Task12AXDataset", "num_seqs": 1000}
dev = {"class": "Task12AXDataset", "num_seqs": 100, "fixed_random_seed": 1}
num_inputs = 9
num_outputs = 2
batch_size = 5000
max_seqs = 40


def gate(activation):
    return {"class": "linear", "from": "frame_and_prev", "activation": activation, "n_out": 10}


network = {
    "cell": {"class": "rec", "from": "data", "unit": {
        "frame_and_prev": {"class": "copy", "from": ["data:source", "prev:output"]},
        "in_gate": gate("sigmoid"), "keep_gate": gate("sigmoid"), "out_gate": gate("sigmoid"),
        "candidate": gate("tanh"),
        "state": {"class": "eval", "from": ["in_gate", "candidate", "keep_gate", "prev:state"],
                  "eval": "source(0) * source(1) + source(2) * source(3)"},
        "squashed": {"class": "activation", "activation": "tanh", "from": "state"},
        "output": {"class": "combine", "kind": "mul", "from": ["out_gate", "squashed"]},
    }},
    "output": {"class": "softmax", "loss": "ce", "from": "cell"},
}
adam = True
learning_rate = 0.01
num_epochs = 5
model = "out/12ax-loop-lstm/model"
