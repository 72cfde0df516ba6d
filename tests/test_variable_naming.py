"""`named_after_creation` (backends/tensorflow/params.py): variables made with one handle-op name keep the names
and checkpoint contents they would have had otherwise, for model parameters and Keras optimizer slots."""

import numpy as np
import tensorflow as tf

from netcompiler.backends.tensorflow.params import named_after_creation
from netcompiler.engine.optimizers import make_optimizer


def make_variables():
    with tf.name_scope("outer"):
        scoped = tf.Variable(np.ones([2, 3], np.float32), name="W")
    return [scoped, tf.Variable(np.arange(3, dtype=np.float32), name="l0/b"), tf.Variable(2.0)]


def test_names_are_the_usual_ones():
    usual = make_variables()
    with named_after_creation():
        renamed = make_variables()
    assert [v.name for v in renamed] == [v.name for v in usual] == ["outer/W:0", "l0/b:0", "Variable:0"]
    optimizers = []
    for cheap in (False, True):
        optimizer = make_optimizer({"optimizer": {"class": "adam"}, "learning_rate": 0.1})
        if cheap:
            with named_after_creation():
                optimizer.build(renamed)
        else:
            optimizer.build(usual)
        optimizers.append(optimizer)
    names = [[v.name for v in o.variables] for o in optimizers]
    inner = [[v.value.name.replace(o.name + "/", "OPT/", 1) for v in o.variables] for o in optimizers]
    assert names[0] == names[1] and inner[0] == inner[1]  # Keras names the second optimizer adam_1
    assert "OPT/outer_W_0_momentum:0" in inner[1]


def test_checkpoint_written_before_restores(tmp_path):
    usual = make_variables()
    optimizer = make_optimizer({"optimizer": {"class": "adam"}, "learning_rate": 0.1})
    optimizer.build(usual)
    optimizer.apply_gradients(zip([tf.ones_like(v) for v in usual], usual))
    path = tf.train.Checkpoint(params=usual, optimizer=optimizer).write(str(tmp_path / "ckpt"))
    with named_after_creation():
        renamed = [tf.Variable(tf.zeros_like(v), name=v.name[:-2]) for v in usual]
        restored = make_optimizer({"optimizer": {"class": "adam"}, "learning_rate": 0.1})
        restored.build(renamed)
    tf.train.Checkpoint(params=renamed, optimizer=restored).read(path).assert_consumed()
    for a, b in zip(renamed + list(restored.variables), usual + list(optimizer.variables)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert int(restored.iterations) == 1
