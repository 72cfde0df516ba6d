"""TensorFlow: a transpose of a tensor from outside a `while_loop_raw` body is made once before the loop
(`loop_invariant.hoisted`), through nested loops; the values and gradients are those NumPy computes, and the
loop bodies hold no Transpose. A tensor made in the body, one in a `cond` branch, and one from outside a branch
around the loop stay where they are. The same for an expand_dims."""

import collections

import numpy as np
import tensorflow as tf

from netcompiler.backends.tensorflow.backend import TensorFlowBackend as TFBackend


def ops_by_function(concrete):
    """{function name: Counter of op types} of a concrete function's graph ("" is its own graph)."""
    graph_def = concrete.graph.as_graph_def()
    out = {"": collections.Counter(node.op for node in graph_def.node)}
    for function in graph_def.library.function:
        out[function.signature.name] = collections.Counter(node.op for node in function.node_def)
    return out


def loop_bodies(concrete):
    return {name: ops for name, ops in ops_by_function(concrete).items() if "while_body" in name}


def test_a_transpose_of_an_outside_tensor_runs_before_the_loop_and_its_gradient_after_it():
    rng = np.random.RandomState(0)
    x, v = rng.randn(3, 4).astype("float32"), rng.randn(3).astype("float32")
    steps = 5

    @tf.function
    def run(x):
        with tf.GradientTape() as tape:
            tape.watch(x)

            def body(i, acc):  # acc <- tanh(x x^T acc / 2): every step transposes the loop-invariant x
                return i + 1, tf.tanh(tf.linalg.matvec(x, tf.linalg.matvec(TFBackend.transpose_raw(x, [1, 0]), acc))
                                      * 0.5)
            _, acc = TFBackend.while_loop_raw(lambda i, acc: i < steps, body, [tf.constant(0), tf.constant(v)])
            loss = tf.reduce_sum(acc * acc)
        return acc, tape.gradient(loss, x)

    concrete = run.get_concrete_function(tf.TensorSpec([3, 4]))
    bodies = loop_bodies(concrete)
    assert any("grad" in name for name in bodies) and all(ops["Transpose"] == 0 for ops in bodies.values()), bodies
    assert ops_by_function(concrete)[""]["Transpose"] == 2  # the transpose, and its gradient's after the loop

    acc, grad = [t.numpy() for t in run(tf.constant(x))]
    want, want_grad = reference(x, v, steps)
    np.testing.assert_allclose(acc, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-4, atol=1e-5)


def reference(x, v, steps, eps=1e-3):
    """The loop's result in NumPy, and its gradient by central differences (float64)."""
    def forward(x):
        acc = v.astype("float64")
        for _ in range(steps):
            acc = np.tanh(x @ (x.T @ acc) * 0.5)
        return acc

    x = x.astype("float64")
    grad = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        up, down = x.copy(), x.copy()
        up[idx] += eps
        down[idx] -= eps
        grad[idx] = (np.sum(forward(up) ** 2) - np.sum(forward(down) ** 2)) / (2 * eps)
    return forward(x), grad


def test_nested_loops_move_it_out_of_both_and_make_it_once():
    @tf.function
    def run(x):
        def outer(i, acc):
            def inner(j, acc):
                return j + 1, acc + tf.reduce_sum(TFBackend.transpose_raw(x, [1, 0])[0])
            return i + 1, TFBackend.while_loop_raw(lambda j, acc: j < 3, inner, [tf.constant(0), acc])[1]
        again = TFBackend.while_loop_raw(lambda i, acc: i < 2, outer, [tf.constant(0), tf.constant(0.0)])[1]
        twice = TFBackend.while_loop_raw(lambda i, acc: i < 2, outer, [tf.constant(0), again])[1]
        return twice

    concrete = run.get_concrete_function(tf.TensorSpec([3, 4]))
    assert all(ops["Transpose"] == 0 for ops in loop_bodies(concrete).values())
    assert ops_by_function(concrete)[""]["Transpose"] == 1  # shared by the two loops
    x = np.arange(12, dtype="float32").reshape(3, 4)
    assert run(tf.constant(x)).numpy() == 2 * 2 * 3 * x[:, 0].sum()


def test_a_tensor_of_the_body_or_outside_a_loop_is_transposed_where_it_is():
    @tf.function
    def run(x):
        def body(i, acc):
            return i + 1, TFBackend.transpose_raw(acc * 2.0, [1, 0])
        looped = TFBackend.while_loop_raw(lambda i, acc: i < 3, body, [tf.constant(0), x])[1]
        branch = tf.cond(tf.reduce_sum(x) > 0, lambda: TFBackend.transpose_raw(x, [1, 0]), lambda: x)

        def loop_in_branch():  # x is from outside the branch: moving its transpose out would run it always
            def body(i, acc):
                return i + 1, acc + TFBackend.transpose_raw(x, [1, 0])
            return TFBackend.while_loop_raw(lambda i, acc: i < 2, body, [tf.constant(0), tf.zeros([3, 3])])[1]
        in_branch = tf.cond(tf.reduce_sum(x) < 0, lambda: x, loop_in_branch)
        return looped, branch, in_branch

    concrete = run.get_concrete_function(tf.TensorSpec([3, 3]))
    assert all(ops["Transpose"] == 1 for name, ops in loop_bodies(concrete).items() if "grad" not in name)
    branches = {name: ops for name, ops in ops_by_function(concrete).items() if name.startswith("cond_true")}
    assert branches and all(ops["Transpose"] == 1 for ops in branches.values())
    assert ops_by_function(concrete)[""]["Transpose"] == 0
    x = np.arange(9, dtype="float32").reshape(3, 3)
    looped, branch, in_branch = [t.numpy() for t in run(tf.constant(x))]
    np.testing.assert_array_equal(looped, 8 * x.T)
    np.testing.assert_array_equal(branch, x.T)
    np.testing.assert_array_equal(in_branch, 2 * x.T)


def test_an_expand_dims_of_an_outside_tensor_runs_before_the_loop_too():
    rng = np.random.RandomState(1)
    x, mask = rng.randn(2, 5).astype("float32"), rng.rand(2, 5) > 0.5

    @tf.function
    def run(x, mask):
        with tf.GradientTape() as tape:
            tape.watch(x)

            def body(i, acc):  # acc [2, 1, 5] <- where(mask, acc + x, 0): both outside tensors get a unit axis
                wide = TFBackend.expand_dims_raw(x, 1)
                return i + 1, tf.where(TFBackend.expand_dims_raw(mask, 1), acc + wide * wide, 0.0)
            _, acc = TFBackend.while_loop_raw(lambda i, acc: i < 3, body, [tf.constant(0), tf.zeros([2, 1, 5])])
            loss = tf.reduce_sum(acc)
        return acc, tape.gradient(loss, x)

    concrete = run.get_concrete_function(tf.TensorSpec([2, 5]), tf.TensorSpec([2, 5], tf.bool))
    bodies = loop_bodies(concrete)
    assert bodies and all(ops["ExpandDims"] == 0 for ops in bodies.values()), bodies
    assert ops_by_function(concrete)[""]["ExpandDims"] == 2
    acc, grad = [t.numpy() for t in run(tf.constant(x), tf.constant(mask))]
    np.testing.assert_allclose(acc, np.where(mask, 3 * x * x, 0.0)[:, None], rtol=1e-6)
    np.testing.assert_allclose(grad, np.where(mask, 6 * x, 0.0), rtol=1e-5)
