"""Equal layers (`emit/equal_layers.py`): which layers are found equal, and that grouping their parameters and
emitting them as calls of one traced function computes, trains, saves and exports what the written-out network
does."""

import os

import numpy as np
import pytest
import tensorflow as tf

from netcompiler import load_network
from netcompiler.config import Config
from netcompiler.emit.equal_layers import DEFAULT_MIN_LAYERS, blocks_of, equal_layer_classes, min_layers_setting
from netcompiler.emit.model import CompiledNetwork
from netcompiler.engine.checkpoint_reading import restore
from netcompiler.engine.optimizers import make_optimizer
from netcompiler.engine.trainer import Trainer
from netcompiler.errors import CheckpointError, InvalidOptionError
from netcompiler.network import build_network
from tests.run_helpers import run, task_12ax_config


def chain(layers, width=6, dropout=0.0, l2=None, **extra):
    """extern data (dim 5, 7 classes), `layers` equal linear layers after a first one, a softmax with ce."""
    network = {"l0": {"class": "linear", "n_out": width, "activation": "tanh", "from": "data"}}
    for i in range(1, layers + 1):
        network[f"l{i}"] = {"class": "linear", "n_out": width, "activation": "relu", "dropout": dropout,
                            "from": f"l{i - 1}", **({"L2": l2} if l2 else {})}
    network["output"] = {"class": "softmax", "n_out": 7, "loss": "ce", "target": "classes", "from": f"l{layers}"}
    return Config({"extern_data": {"data": {"dim": 5}, "classes": {"dim": 7, "sparse": True}}, "network": network,
                   "optimizer": {"class": "adam"}, "learning_rate": 0.01, **extra})


def ragged_batches(count=3):
    rng = np.random.RandomState(0)
    batches = []
    for _ in range(count):
        lengths = np.array([6, 2, 4], np.int32)
        x = rng.randn(3, 6, 5).astype(np.float32)
        x[np.arange(6)[None, :] >= lengths[:, None]] = 1e3  # padding must not reach any value
        y = rng.randint(0, 7, size=(3, 6)).astype(np.int32)
        batches.append(({"data": x, "classes": y}, {"data": lengths, "classes": lengths}))
    return batches


def train(model, config, batches, **settings):
    trainer = Trainer(model, make_optimizer(config.values), None, **settings)
    return [float(trainer.train_step(inputs, lengths)[1]) for inputs, lengths in batches], trainer


def step_graph_nodes(trainer):
    """Nodes of the traced train step's graph and of the functions it calls."""
    concrete = trainer.train_step.function.get_concrete_function(*trainer.signature)
    return len(concrete.graph.as_graph_def().node) + sum(len(f.node_def) for f in
                                                          concrete.graph.as_graph_def().library.function)


# --- which layers are equal -------------------------------------------------------------------------------------
def test_the_chain_layers_of_equal_options_and_layouts_form_one_class():
    network = build_network(chain(5))
    classes = equal_layer_classes(network, 2)
    # l0 reads the 5-dim data (another input layout), output has a loss: both stay written out
    assert [[layer.name for layer in members] for members in classes] == [["l1", "l2", "l3", "l4", "l5"]]
    assert equal_layer_classes(network, 6) == [] and equal_layer_classes(network, 0) == []


def test_layers_differing_in_an_option_that_changes_the_computation_are_not_equal():
    config = chain(4)
    config.values["network"]["l3"]["activation"] = "sigmoid"
    config.values["network"]["l2"]["forward_weights_init"] = "zeros"  # only the initial value: still equal
    classes = equal_layer_classes(build_network(config), 2)
    assert [[layer.name for layer in members] for members in classes] == [["l1", "l2", "l4"]]
    config.values["network"]["l4"]["trainable"] = False  # its parameters cannot share a group with trained ones
    classes = equal_layer_classes(build_network(config), 2)
    assert [[layer.name for layer in members] for members in classes] == [["l1", "l2"]]


def test_a_chain_is_cut_into_blocks_of_consecutive_layers_and_parallel_layers_stay_apart():
    network = build_network(chain(20))
    [members] = equal_layer_classes(network, 2)
    assert [[layer.name for layer in block] for block in blocks_of(members, 8)] == \
        [[f"l{i}" for i in range(1, 9)], [f"l{i}" for i in range(9, 17)], [f"l{i}" for i in range(17, 21)]]
    config = chain(1)
    config.values["network"].update({f"side{i}": {"class": "linear", "n_out": 6, "activation": "relu",
                                                  "dropout": 0.0, "from": "l0", "is_output_layer": True} for i in range(3)})
    [members] = equal_layer_classes(build_network(config), 2)  # l1 and the side layers all read l0
    assert [[layer.name for layer in block] for block in blocks_of(members, 8)] == \
        [["l1"], ["side0"], ["side1"], ["side2"]]


# --- what they compute ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("settings", [{}, {"maximize_grad_norm": 0.5}], ids=["plain", "maximize_grad_norm"])
def test_grouped_training_gives_the_written_out_networks_objectives_and_parameters(settings):
    config = chain(11, l2=0.01)  # l1..l11: blocks of 8 and 3
    written, grouped = (CompiledNetwork(build_network(config), seed=3, equal_layers_min=m) for m in (0, 2))
    assert type(grouped.params["l3/W"]).__name__ == "GroupMember"
    assert len(grouped.trainable_params) == len(written.trainable_params) - 2 * 10  # l1..l11: 2 groups, not 22
    expected, _ = train(written, config, ragged_batches(), **settings)
    got, _ = train(grouped, config, ragged_batches(), **settings)
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    for name in written.params:
        np.testing.assert_allclose(grouped.params[name].numpy(), written.params[name].numpy(), atol=1e-5,
                                   err_msg=name)


def test_the_step_graph_of_a_grouped_chain_holds_a_block_once():
    config = chain(40)
    nodes = [step_graph_nodes(Trainer(CompiledNetwork(build_network(config), equal_layers_min=m),
                                      make_optimizer(config.values), None)) for m in (0, 2)]
    assert nodes[1] < nodes[0] / 2, nodes  # the functions' bodies (8 layers, and their gradient) counted too


def test_eval_steps_trace_their_own_functions_without_dropout():
    config = chain(11, dropout=0.3)  # l1..l11: blocks of 8 and 3
    written, grouped = (CompiledNetwork(build_network(config), seed=3, equal_layers_min=m) for m in (0, 2))
    objectives = []
    for model in (written, grouped):
        trainer = Trainer(model, make_optimizer(config.values), None)
        trainer.train_step.function.get_concrete_function(*trainer.signature)  # the train step's trace first
        objectives.append([float(trainer.eval_step(inputs, lengths)[1]) for inputs, lengths in ragged_batches()])
    np.testing.assert_allclose(objectives[1], objectives[0], rtol=1e-5)


def test_dropout_in_a_shared_function_draws_a_mask_per_layer():
    config = chain(3, width=64, dropout=0.5)
    model = CompiledNetwork(build_network(config), seed=3, equal_layers_min=2)
    x = tf.ones([1, 4, 5])

    @tf.function(autograph=False)
    def outputs():
        ctx = model.forward({"data": x}, {"data": tf.constant([4])}, training=True, emit_all=False)
        return [ctx.value(model.network.layers[f"l{i}"]).raw for i in (1, 2, 3)]

    # each layer's input was dropped with a mask of its own: where each output is zero differs
    zeros = [tuple((np.asarray(value) == 0).ravel()) for value in outputs()]
    assert len(set(zeros)) == 3


# --- saving, loading, setting -----------------------------------------------------------------------------------
def test_checkpoints_of_grouped_and_written_out_networks_load_into_each_other(tmp_path):
    config = chain(4)
    grouped, written = (CompiledNetwork(build_network(config), seed=s, equal_layers_min=m) for s, m in ((1, 2), (2, 0)))
    grouped.params["l2/W"].assign(np.full((6, 6), 3.0, np.float32))
    path = tf.train.Checkpoint(model=grouped.checkpoint_root).write(str(tmp_path / "grouped"))
    assert ("model/params/l2.SW/.ATTRIBUTES/VARIABLE_VALUE", [6, 6]) in tf.train.list_variables(path)
    restore(tf.train.Checkpoint(model=written.checkpoint_root), path)
    for name in grouped.params:
        np.testing.assert_array_equal(written.params[name].numpy(), grouped.params[name].numpy(), err_msg=name)

    written.params["l3/b"].assign(np.arange(6, dtype=np.float32))
    back = tf.train.Checkpoint(model=written.checkpoint_root).write(str(tmp_path / "written"))
    restore(tf.train.Checkpoint(model=grouped.checkpoint_root), back)
    np.testing.assert_array_equal(grouped.params["l3/b"].numpy(), np.arange(6))
    np.testing.assert_array_equal(grouped.params["l2/W"].numpy(), 3.0)


def test_a_checkpoint_of_another_width_is_refused_for_a_group_member(tmp_path):
    narrow = CompiledNetwork(build_network(chain(3, width=4)), equal_layers_min=0)
    path = tf.train.Checkpoint(model=narrow.checkpoint_root).write(str(tmp_path / "narrow"))
    wide = CompiledNetwork(build_network(chain(3, width=6)), equal_layers_min=2)
    before = wide.params["l2/W"].numpy()
    with pytest.raises(CheckpointError, match=r"model/params/l2/W: checkpoint \(4, 4\), network \(6, 6\)"):
        restore(tf.train.Checkpoint(model=wide.checkpoint_root), path)
    np.testing.assert_array_equal(wide.params["l2/W"].numpy(), before)  # nothing changed


def test_a_member_is_read_and_set_by_name_and_refuses_another_shape():
    model = CompiledNetwork(build_network(chain(3)), equal_layers_min=2)
    member = model.params["l2/b"]
    member.assign(np.ones(6, np.float32))
    np.testing.assert_array_equal(model.params["l2/b"].numpy(), 1.0)
    np.testing.assert_array_equal(model.params["l3/b"].numpy(), 0.0)  # its neighbour in the group is untouched
    with pytest.raises(ValueError, match=r"parameter 'l2/b' of shape \(6,\)"):
        member.assign(np.ones(5, np.float32))


# --- the config key -------------------------------------------------------------------------------------------
def test_the_setting_defaults_refuses_bad_values_and_is_off_with_per_parameter_clipping(capsys):
    import sys

    assert min_layers_setting({}) == DEFAULT_MIN_LAYERS
    assert min_layers_setting({"tf_equal_layers_min": 0}) == 0
    assert min_layers_setting({"tf_equal_layers_min": None}) == 0
    for bad in (1, -3, 2.5, "many", True):
        with pytest.raises(InvalidOptionError, match="tf_equal_layers_min") as info:
            min_layers_setting({"tf_equal_layers_min": bad})
        assert "int >= 2" in str(info.value)
    assert min_layers_setting({"tf_equal_layers_min": 8, "gradient_clip_norm": 1.0}, sys.stderr) == 0
    assert "has no effect with 'gradient_clip_norm'" in capsys.readouterr().err


@pytest.mark.slow
def test_compile_net_trains_continues_and_exports_a_grouped_network(tmp_path):
    from tests.test_export import _load_in_plain_tensorflow, _ragged_batch

    network = {"l0": {"class": "linear", "n_out": 8, "activation": "tanh", "from": "data"}}
    network.update({f"l{i}": {"class": "linear", "n_out": 8, "activation": "relu", "from": f"l{i - 1}"}
                    for i in range(1, 5)})
    network["output"] = {"class": "softmax", "loss": "ce", "from": "l4", "target": "classes"}
    config = tmp_path / "config.py"
    config.write_text(task_12ax_config(20) + f"network = {network!r}\noptimizer = {{'class': 'adam'}}\n"
                      f"learning_rate = 0.01\nnum_epochs = 2\ntf_equal_layers_min = 2\n"
                      f"model = {str(tmp_path / 'out' / 'model')!r}\n")
    run(str(config), "++num_epochs", "1")
    run(str(config))  # continues from epoch 1's checkpoint (parameters and optimizer state)
    assert os.path.exists(str(tmp_path / "out" / "model.002.index"))
    run(str(config), task="export")
    data, lengths, batch_file = _ragged_batch(tmp_path)
    served = _load_in_plain_tensorflow(str(tmp_path / "out" / "model.export"), batch_file)

    net = load_network(str(config))
    model = net.model("tensorflow")
    from netcompiler.engine.checkpoint_interchange import load_params

    load_params(str(tmp_path / "out" / "model.002"), model.params, model.backend)
    expected = net.forward({"data": data}, {"data": lengths})["output"].value
    values = np.asarray(served["outputs"]["output"], np.float32)
    for row, length in enumerate(lengths):
        np.testing.assert_allclose(values[row, :length], expected[row, :length], atol=1e-5)
