"""Fused optimizer updates (`engine.fused_updates`) against the Keras optimizer's own update, step by step."""

import numpy as np
import pytest
import tensorflow as tf

from netcompiler.engine.fused_updates import apply_gradients, fused_kernel
from netcompiler.engine.optimizers import make_optimizer, set_learning_rate

IDS = [1, 3, 1]  # a repeated row: the sparse gradient has duplicate indices

FUSED = [
    ({"class": "adam", "epsilon": 1e-3}, "ResourceApplyAdam"),  # a large epsilon: its placement shows
    ({"class": "adam", "amsgrad": True, "beta2": 0.9, "epsilon": 1e-3}, "ResourceApplyAdamWithAmsgrad"),
    ({"class": "sgd"}, "ResourceApplyGradientDescent"),
    ({"class": "momentum", "momentum": 0.9}, "ResourceApplyKerasMomentum"),
    ({"class": "momentum", "momentum": 0.8, "use_nesterov": True}, "ResourceApplyKerasMomentum"),
    ({"class": "rmsprop", "momentum": 0.5, "epsilon": 1e-2}, "ResourceApplyRMSProp"),
    ({"class": "rmsprop", "momentum": 0.5, "centered": True, "epsilon": 1e-2}, "ResourceApplyCenteredRMSProp"),
    ({"class": "adadelta", "epsilon": 1e-3}, "ResourceApplyAdadelta"),
]
KERAS_ONLY = [{"class": "nadam"}, {"class": "adamw", "weight_decay": 0.1}, {"class": "adam", "weight_decay": 0.1},
              {"class": "adagrad", "epsilon": 1e-3}, {"class": "rmsprop"}]


def make_side(options):
    """Variables (a matrix, a vector, an embedding read by a gather: a sparse gradient), an optimizer built on
    them, and a compiled step applying the gradients of a fixed loss through `update`."""
    rng = np.random.RandomState(0)
    variables = [tf.Variable(rng.randn(4, 3).astype(np.float32)), tf.Variable(rng.randn(3).astype(np.float32)),
                 tf.Variable(rng.randn(5, 3).astype(np.float32))]
    optimizer = make_optimizer({"optimizer": dict(options), "learning_rate": 0.1})
    optimizer.build(variables)
    return variables, optimizer


def run_steps(options, fused, steps=4):
    variables, optimizer = make_side(options)
    w, b, emb = variables

    @tf.function(autograph=False)
    def step(x, ids):
        with tf.GradientTape() as tape:
            h = tf.tanh(x @ w + b) * tf.reduce_sum(tf.gather(emb, ids), 0)
            loss = tf.reduce_sum(h ** 2) + tf.reduce_sum(w ** 3)
        pairs = list(zip(tape.gradient(loss, variables), variables))
        if fused:
            apply_gradients(optimizer, pairs)
        else:  # Keras's update of the dense gradient (its sparse one squares repeated rows one by one)
            optimizer.apply_gradients([(tf.convert_to_tensor(g), v) for g, v in pairs])

    rng = np.random.RandomState(1)
    for i in range(steps):
        if i == 2:
            set_learning_rate(optimizer, 0.03)  # a changed rate takes effect in the same trace
        step(tf.constant(rng.randn(2, 4).astype(np.float32)), tf.constant(IDS))
    graph = step.get_concrete_function(tf.TensorSpec([2, 4]), tf.TensorSpec([len(IDS)], tf.int32)).graph
    assert step.experimental_get_tracing_count() == 1
    return variables, optimizer, {op.type for op in graph.get_operations()}


@pytest.mark.parametrize("options, kernel", FUSED, ids=[str(o) for o, _ in FUSED])
def test_fused_kernel_equals_keras_update(options, kernel):
    keras_vars, keras_opt, _ = run_steps(options, fused=False)
    fused_vars, fused_opt, op_types = run_steps(options, fused=True)
    assert kernel in op_types
    for a, b in zip(keras_vars, fused_vars):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=2e-5, atol=1e-6)
    for a, b in zip(keras_opt.variables, fused_opt.variables):  # slots, iterations, rate: what checkpoints hold
        assert a.shape == b.shape
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=2e-5, atol=1e-6)
    assert int(fused_opt.iterations) == 4
    moved = [not np.allclose(v.numpy(), u.numpy()) for v, u in zip(fused_vars, make_side(options)[0])]
    assert all(moved)  # every variable changed: the comparison above compared updates, not initial values


@pytest.mark.parametrize("options", KERAS_ONLY, ids=[str(o) for o in KERAS_ONLY])
def test_keras_update_where_no_kernel_is_exact(options):
    assert fused_kernel(make_optimizer({"optimizer": dict(options)})) is None
    _, optimizer, op_types = run_steps(options, fused=True, steps=1)
    assert not any(t.startswith("ResourceApply") for t in op_types)
    assert int(optimizer.iterations) == 1


def test_an_optimizer_not_built_is_refused():
    """The optimizer is built once, by the Trainer (under named_after_creation); the fused update does not build
    it a second way."""
    variable = tf.Variable([1.0, 2.0])
    optimizer = make_optimizer({"optimizer": {"class": "adam"}, "learning_rate": 0.1})
    with pytest.raises(ValueError, match=r"not built.*optimizer\.build"):
        apply_gradients(optimizer, [(tf.constant([1.0, 1.0]), variable)])
    assert not optimizer.built
