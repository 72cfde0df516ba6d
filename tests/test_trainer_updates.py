"""The TF trainer's update (`Trainer._train_step` with fused optimizer kernels): a non-finite step changes
nothing; accumulated gradients apply as Keras's Adam applies their sum; clipping runs before the update."""

import numpy as np
import pytest
import tensorflow as tf

from netcompiler.builtin import load_builtin_layers
from netcompiler.emit.model import CompiledNetwork
from netcompiler.engine.optimizers import clip_gradients, make_optimizer
from netcompiler.engine.trainer import Trainer
from netcompiler.network import build_from_dict

load_builtin_layers()
EXTERN = {"data": {"dim": 5}, "classes": {"dim": 3, "sparse": True}}
NETWORK = {"hidden": {"class": "linear", "activation": "tanh", "n_out": 4, "from": "data"},
           "output": {"class": "softmax", "loss": "ce", "from": "hidden", "target": "classes"}}
ADAM = {"optimizer": {"class": "adam", "epsilon": 1e-3}, "learning_rate": 0.05}


def batch(seed, nan=False):
    rng = np.random.RandomState(seed)
    x = rng.randn(2, 6, 5).astype(np.float32)
    if nan:
        x[1, 2, 3] = np.nan
    lengths = np.array([6, 4], np.int32)
    y = rng.randint(0, 3, size=(2, 6)).astype(np.int32)
    return {"data": x, "classes": y}, {"data": lengths, "classes": lengths}


def make_trainer(accum=1, clip=None, optimizer=None):
    model = CompiledNetwork(build_from_dict(NETWORK, EXTERN), seed=3, backend="tensorflow")
    optimizer = make_optimizer(dict(ADAM, optimizer=optimizer or ADAM["optimizer"]))  # the Trainer builds it
    return Trainer(model, optimizer, None, clip_gradients=clip, accum_grad_steps=accum, log=None), optimizer


def test_the_trainer_builds_the_optimizer_before_any_step():
    """The Trainer is the optimizer's one build site: its slots exist (a checkpoint restores into them) before a
    step, named as a plain build names them."""
    trainer, optimizer = make_trainer()
    assert optimizer.built and int(optimizer.iterations) == 0
    plain = make_optimizer(ADAM)
    plain.build(trainer.model.trainable_params)
    strip = lambda o: [v.value.name.replace(o.name + "/", "OPT/", 1) for v in o.variables]  # noqa: E731
    assert strip(optimizer) == strip(plain) and len(optimizer.variables) == 2 * len(trainer.model.trainable_params) + 2


def state(trainer, optimizer):
    return [v.numpy() for v in trainer.model.trainable_params] + [np.asarray(v) for v in optimizer.variables]


def keras_reference(batches, clip=None):
    """Keras's own Adam on the summed gradients of `batches` (a fresh model with the same seed)."""
    trainer, optimizer = make_trainer()
    variables = trainer.model.trainable_params
    total = None
    for inputs, lengths in batches:
        with tf.GradientTape() as tape:
            _, objective = trainer.model.step_losses(inputs, lengths, training=True)
        grads = [tf.convert_to_tensor(g) for g in tape.gradient(objective, variables)]
        total = grads if total is None else [a + b for a, b in zip(total, grads)]
    if clip:
        total = clip(total)
    optimizer.apply_gradients(zip(total, variables))
    return state(trainer, optimizer)


def assert_states_equal(actual, expected):
    assert len(actual) == len(expected)
    for a, b in zip(actual, expected):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)  # an update moves by ~lr = 0.05


def test_one_step_equals_keras_adam():
    trainer, optimizer = make_trainer()
    trainer.train_step(*batch(0))
    assert_states_equal(state(trainer, optimizer), keras_reference([batch(0)]))
    assert int(trainer.step_count) == 1


# gated kernels (Adam, Adadelta, SGD: no tf.cond), momentum (the fused update in a tf.cond), Nadam (Keras's
# update in a tf.cond), Adam with epsilon 0 (a tf.cond: the gated kernel would divide 0 by 0)
@pytest.mark.parametrize("options", [{"class": "adam"}, {"class": "adadelta", "epsilon": 1e-6}, {"class": "sgd"},
                                     {"class": "momentum", "momentum": 0.9}, {"class": "nadam"},
                                     {"class": "adam", "epsilon": 0.0}], ids=str)
def test_a_nonfinite_step_changes_nothing(options):
    trainer, optimizer = make_trainer(optimizer=options)
    trainer.train_step(*batch(0))
    before = state(trainer, optimizer)
    objective = trainer.train_step(*batch(1, nan=True))[1]
    assert not np.isfinite(float(objective))
    assert_states_equal(state(trainer, optimizer), before)  # parameters, slots, iterations, rate
    assert int(trainer.step_count) == 1
    trainer.train_step(*batch(2))
    assert int(trainer.step_count) == 2 and np.isfinite(state(trainer, optimizer)[0]).all()


def test_accumulated_gradients_apply_as_their_clipped_sum():
    clip = lambda grads: clip_gradients(grads, {"value": 0.0, "norm": 0.0, "global_norm": 0.5})  # noqa: E731
    trainer, optimizer = make_trainer(accum=2, clip=clip)
    start = state(trainer, optimizer)
    trainer.train_step(*batch(0))
    assert_states_equal(state(trainer, optimizer), start)  # only summed so far
    trainer.train_step(*batch(3, nan=True))  # not summed, not counted
    assert_states_equal(state(trainer, optimizer), start)
    trainer.train_step(*batch(1))
    assert_states_equal(state(trainer, optimizer), keras_reference([batch(0), batch(1)], clip))
    assert int(trainer.step_count) == 1
