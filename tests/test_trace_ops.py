"""What a traced train step of a deep chain costs per layer (issue 12: tracing time goes with the op count), and
that the cheaper forms the TF backend traces compute what they stand for: a linear map onto a dim of the same size
on dynamic batch and time dims (reshaped back by the input's shape), a bias added as BiasAdd, dropout with a
gradient of its own. Checked in a tf.function with open batch/time dims against NumPy, gradients included."""

import os

import numpy as np
import pytest
import tensorflow as tf

from netcompiler import frontend as rf
from netcompiler.backends import get_backend
from netcompiler.tensor import Dim, batch_dim

TIME = Dim(None, name="time")
FEAT = Dim(6, name="feat")
SAME = Dim(6, name="same")
OTHER = Dim(4, name="other")


def _traced(fn, x_np, lengths, variables=()):
    """fn(x Tensor [B, T, FEAT]) -> Tensor, traced with open batch and time dims; (its graph's value, the
    gradient of sum(value * weights) with respect to x and to `variables`, the static shape)."""
    backend = get_backend("tensorflow")
    rf.select_backend("tensorflow")
    static = []

    @tf.function(input_signature=[tf.TensorSpec([None, None, FEAT.size]), tf.TensorSpec([None], tf.int32)],
                 autograph=False)
    def step(x_raw, lens):
        with tf.GradientTape() as tape:
            tape.watch(x_raw)
            with rf.RunContext(backend, training=True) as ctx:
                ctx.set_size(TIME, lens)
                y = fn(rf.Tensor(rf.Data("x", (batch_dim, TIME, FEAT), "float32"), x_raw))
            weights = tf.reshape(tf.cast(tf.range(tf.size(y.raw)) % 7, tf.float32), tf.shape(y.raw))
            objective = tf.reduce_sum(y.raw * weights)
        grads = tape.gradient(objective, [x_raw] + list(variables))
        static.append(tuple(y.raw.shape.as_list()))
        return y.raw, weights, grads

    y, weights, grads = step(tf.constant(x_np), tf.constant(lengths, tf.int32))
    return y.numpy(), weights.numpy(), [g.numpy() for g in grads], static[-1]


def _linear(out_dim, rng):
    w_np = rng.randn(FEAT.size, out_dim.size).astype("float32")
    b_np = rng.randn(out_dim.size).astype("float32")

    w_var, b_var = tf.Variable(w_np), tf.Variable(b_np)

    def fn(x):
        w = rf.Tensor(rf.Data("w", (FEAT, out_dim), "float32"), w_var)
        b = rf.Tensor(rf.Data("b", (out_dim,), "float32"), b_var)
        return rf.matmul(x, w, reduce=FEAT) + b
    return fn, w_np, b_np, (w_var, b_var)


@pytest.mark.parametrize("out_dim", [SAME, OTHER], ids=["same-size", "other-size"])
def test_linear_with_bias_on_open_dims_matches_numpy(out_dim):
    rng = np.random.RandomState(0)
    x_np = rng.randn(3, 5, FEAT.size).astype("float32")
    fn, w_np, b_np, variables = _linear(out_dim, rng)
    y, weights, (gx, gw, gb), static = _traced(fn, x_np, [5, 2, 4], variables)
    assert static == (None, None, out_dim.size)
    np.testing.assert_allclose(y, x_np @ w_np + b_np, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gx, weights @ w_np.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gw, np.einsum("bti,bto->io", x_np, weights), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(gb, weights.sum(axis=(0, 1)), rtol=1e-5, atol=1e-5)


def test_dropout_on_open_dims_scales_kept_values_and_passes_the_gradient_through_the_mask():
    x_np = np.random.RandomState(1).uniform(1, 2, (3, 50, FEAT.size)).astype("float32")
    x_np[0, :5] = np.inf  # as tf.nn.dropout: a dropped inf gives 0, not NaN
    y, weights, (gx,), static = _traced(lambda x: rf.dropout(x, 0.25), x_np, [50, 20, 40])
    assert not np.isnan(y).any()
    assert static == (None, None, FEAT.size)
    kept = y != 0
    assert abs(kept.mean() - 0.75) < 0.05
    np.testing.assert_allclose(y[kept], x_np[kept] / 0.75, rtol=1e-6)
    np.testing.assert_allclose(gx, np.where(kept, weights / 0.75, 0), rtol=1e-6)


def _chain_step_ops(tmp_path, n):
    """Ops of the traced train step (graph and function library) of a chain of n linear layers as
    benchmarks/build_profile.py builds it (relu, input dropout 0.1, Adam)."""
    from netcompiler.builtin import load_builtin_layers
    from netcompiler.config import load_config
    from netcompiler.emit.model import CompiledNetwork
    from netcompiler.engine.optimizers import clip_gradients_fn, make_optimizer
    from netcompiler.engine.trainer import Trainer
    from netcompiler.network import build_network
    load_builtin_layers()
    net, prev = {}, "data"
    for i in range(n):
        net[f"l{i}"] = {"class": "linear", "activation": "relu", "n_out": 16, "dropout": 0.1, "from": prev}
        prev = f"l{i}"
    net["output"] = {"class": "softmax", "n_out": 5, "loss": "ce", "from": prev}
    path = os.path.join(tmp_path, f"chain{n}.py")
    with open(path, "w") as f:
        f.write("extern_data = {'data': {'dim': 16}, 'classes': {'dim': 5, 'sparse': True}}\n"
                f"optimizer = {{'class': 'adam'}}\nlearning_rate = 1e-3\nnetwork = {net!r}\n")
    config = load_config(path)
    model = CompiledNetwork(build_network(config))
    optimizer = make_optimizer(config.values)
    trainer = Trainer(model, optimizer, None, clip_gradients_fn(config.values), log=open(os.devnull, "w"))
    optimizer.build(model.trainable_params)
    graph_def = trainer.train_step.get_concrete_function().graph.as_graph_def()
    return len(graph_def.node) + sum(len(f.node_def) for f in graph_def.library.function)


def test_a_linear_layer_with_dropout_traces_few_ops(tmp_path):
    """62 ops per layer before BiasAdd, dropout's own gradient and the shape-free reshapes; 42 after; 32 since
    constants and shapes are made once per graph (one Shape for a whole chain) and dropout and reshapes record
    their gradients on the tape directly. 12 of them are the optimizer's: 6 captured variables and slots, 2
    updates, 2 non-finite gates, 2 reads. A regression here shows as tracing time of deep networks (about 0.3 ms
    per op)."""
    per_layer = (_chain_step_ops(tmp_path, 4) - _chain_step_ops(tmp_path, 2)) / 2
    assert per_layer <= 32, per_layer


def test_a_linear_layer_on_frames_is_a_plain_matmul(tmp_path):
    """On frames [B, T, F] the linear map is MatMul between reshapes, forward and backward: oneDNN's Einsum and
    BatchMatMul kernels keep a primitive per batch shape in TF's own cache (1024 per thread, no setting bounds it),
    ~1.2 MB each when T changes from batch to batch (benchmarks/README.md, memory_growth.py)."""
    from netcompiler.builtin import load_builtin_layers
    from netcompiler.config import load_config
    from netcompiler.emit.model import CompiledNetwork
    from netcompiler.engine.optimizers import clip_gradients_fn, make_optimizer
    from netcompiler.engine.trainer import Trainer
    from netcompiler.network import build_network
    load_builtin_layers()
    path = tmp_path / "c.py"
    path.write_text("extern_data = {'data': {'dim': 128}, 'classes': {'dim': 5, 'sparse': True}}\n"
                    "optimizer = {'class': 'adam'}\nlearning_rate = 1e-3\nnetwork = {\n"
                    "  'l0': {'class': 'linear', 'activation': 'relu', 'n_out': 256, 'from': 'data'},\n"
                    "  'output': {'class': 'softmax', 'n_out': 5, 'loss': 'ce', 'from': 'l0'}}\n")
    config = load_config(str(path))
    model = CompiledNetwork(build_network(config))
    optimizer = make_optimizer(config.values)
    trainer = Trainer(model, optimizer, None, clip_gradients_fn(config.values), log=open(os.devnull, "w"))
    optimizer.build(model.trainable_params)
    graph_def = trainer.train_step.get_concrete_function().graph.as_graph_def()
    kinds = [node.op for node in graph_def.node] + [n.op for f in graph_def.library.function for n in f.node_def]
    assert kinds.count("MatMul") == 5, kinds  # forward 2, weights 2, the output layer's input 1 (data has none)
    assert not {"Einsum", "BatchMatMulV2", "BatchMatMulV3"} & set(kinds)


def test_reshape_gradient_of_a_gathered_variable_sums_repeated_rows():
    """A gather's gradient reaches the reshape as rows (tf.IndexedSlices): TF makes them dense, repeats summed."""
    backend = get_backend("tensorflow")
    table = tf.Variable(np.arange(12, dtype="float32").reshape(3, 4))

    @tf.function(autograph=False)
    def step():
        with tf.GradientTape() as tape:
            rows = backend.reshape_raw(table, [6, 2])
            picked = tf.gather(rows, [5, 0, 5])
            objective = tf.reduce_sum(picked * tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
        return tape.gradient(objective, table)

    grad = step()
    expected = np.zeros((6, 2), "float32")
    expected[0] = [3, 4]
    expected[5] = [1 + 5, 2 + 6]
    np.testing.assert_array_equal(tf.convert_to_tensor(grad).numpy(), expected.reshape(3, 4))


def test_graph_constants_and_shapes_are_shared_and_free_of_control_dependencies():
    from netcompiler.backends.tensorflow.graph_memo import graph_constant, graph_shape, same_shape

    @tf.function(input_signature=[tf.TensorSpec([None, 3])], autograph=False)
    def step(x):
        marker = tf.raw_ops.NoOp()
        with tf.control_dependencies([marker]):
            first = graph_constant(0.5, tf.float32)
        y = x * 2.0
        same_shape(y, x)
        assert graph_constant(0.5, tf.float32) is first and graph_constant(0.5, tf.float64) is not first
        assert graph_constant(-0.0, tf.float32) is not graph_constant(0.0, tf.float32)
        assert graph_shape(y) is graph_shape(x)
        assert not first.op.control_inputs
        return y + first

    np.testing.assert_array_equal(step(tf.ones([2, 3])).numpy(), np.full([2, 3], 2.5, "float32"))
    assert float(graph_constant(0.5, tf.float32)) == 0.5  # eagerly: a tensor of its own


def test_graph_memo_follows_long_chains_and_goes_with_its_graph():
    """Shapes named along a chain longer than Python's recursion limit resolve to one Shape op; the memo lives on
    the graph, so a traced function's graph is freed with the function."""
    import gc
    import weakref

    from netcompiler.backends.tensorflow.graph_memo import graph_constant, graph_shape, same_shape

    graphs = []

    def trace():
        @tf.function(input_signature=[tf.TensorSpec([None, 2])], autograph=False)
        def chain(x):
            graphs.append(weakref.ref(tf.compat.v1.get_default_graph()))
            y = x
            for _ in range(3000):
                z = y + graph_constant(1.0, tf.float32)
                same_shape(z, y)
                y = z
            shapes = len([op for op in y.graph.get_operations() if op.type == "Shape"])
            assert graph_shape(y) is graph_shape(x)
            assert len([op for op in y.graph.get_operations() if op.type == "Shape"]) == shapes + 1
            return y

        return chain(tf.zeros([3, 2])).numpy()

    np.testing.assert_array_equal(trace(), np.full([3, 2], 3000.0, "float32"))
    gc.collect()
    assert graphs and graphs[0]() is None

def test_gradients_recorded_on_the_tape_can_be_differentiated_again():
    """maximize_grad_norm differentiates a gradient: dropout's and a reshape's backward are ops an outer tape
    records. d/dx sum(d/dx sum(reshape(dropout(x))^2)) = 2 * scale^2 where kept, 0 where dropped."""
    backend = get_backend("tensorflow")
    x = tf.constant(np.random.RandomState(2).uniform(1, 2, (4, 30)).astype("float32"))

    @tf.function(autograph=False)
    def second_order(x):
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                y = backend.reshape_raw(backend.dropout_raw(x, 0.5, None), [-1])
                objective = tf.reduce_sum(tf.square(y))
            first = inner.gradient(objective, x)
            total = tf.reduce_sum(first)
        return y, outer.gradient(total, x)

    y, second = second_order(x)
    kept = y.numpy().reshape(4, 30) != 0
    assert 0 < kept.sum() < kept.size
    np.testing.assert_allclose(second.numpy(), np.where(kept, 2 * 2.0 ** 2, 0.0), rtol=1e-6)
