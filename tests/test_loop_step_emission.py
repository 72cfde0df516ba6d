"""The emission side of loop bodies: a step's context sees its frame input ("data:source"), its "prev:" state,
":i" and layers outside the loop ("base:"), and a graph loop of such steps computes what NumPy does."""

import numpy as np
import tensorflow as tf

from netcompiler import frontend as rf
from netcompiler.emit.model import CompiledNetwork
from netcompiler.loop_body import LoopBody
from netcompiler.network import Network
from netcompiler.tensor import Data, FeatureDim, SpatialDim, batch_dim

BODY = {
    # an Elman RNN written as a loop body: h = tanh([x_t, h_prev, pre] W + b)
    "h": {"class": "linear", "n_out": 5, "activation": "tanh", "from": ["data:source", "prev:h", "base:pre"],
          "is_output_layer": True},
    "step": {"class": "cast", "from": ":i", "dtype": "float32", "is_output_layer": True},
}


def build():
    time, feat = SpatialDim("time"), FeatureDim("in", 4)
    extern = {"data": Data("data", [batch_dim, time, feat]), "ctx": Data("ctx", [batch_dim, FeatureDim("c", 2)])}
    parent = Network({"pre": {"class": "linear", "n_out": 3, "from": "data:ctx", "is_output_layer": True}},
                     extern).build()
    source = Data("loop/source", [batch_dim, feat])
    body = LoopBody(BODY, {"source": source}, parent=parent, prefix="loop/",
                    seed=lambda path: Data("guess", [batch_dim, FeatureDim("guess", 5)])).infer()
    model = CompiledNetwork(parent)
    for full, layer, spec in body.all_params():
        model.param_tensors[full] = rf.create_parameter(model.backend, full, spec.shape, init=spec.init, seed=7)
    return parent, body, model, time


def run_loop(body, model, time, x, c, lengths):
    ctx = model.forward({"data": x, "ctx": c}, {"data": lengths}, training=False)
    h_layer = body.layers["h"]
    with ctx.run:
        xs = ctx.extern_value("data")
        sizes = ctx.run.size(time)
        max_len = rf.reduce(sizes, mode="max", axis=batch_dim)

        def step(state):
            i, h, total = state
            frame = rf.gather(xs, indices=i, axis=time)
            step_ctx = ctx.loop_step(body, {"source": frame}, {"h": h}, i)
            new_h = step_ctx.value(h_layer)
            valid = i < sizes
            index = step_ctx.value(body.layers["step"])
            return i + 1, rf.where(valid, new_h, h), total + rf.where(valid, new_h + index, 0.0)

        start = (rf.convert_to_tensor(np.int32(0)), rf.zeros(h_layer.output.dims), rf.zeros(h_layer.output.dims))
        _, h, total = rf.while_loop(lambda s: s[0] < max_len, step, start)
        return rf.permute(h, h_layer.output.dims).raw, rf.permute(total, h_layer.output.dims).raw


def test_a_loop_body_runs_step_by_step_in_one_graph_loop():
    parent, body, model, time = build()
    rng = np.random.RandomState(0)
    x = rng.randn(3, 6, 4).astype("float32")
    c = rng.randn(3, 2).astype("float32")
    lengths = np.array([6, 2, 4], "int32")

    traced = tf.function(lambda x, c, lengths: run_loop(body, model, time, x, c, lengths), autograph=False)
    h, total = [t.numpy() for t in traced(x, c, lengths)]

    p = {name: t.raw.numpy() for name, t in model.param_tensors.items()}
    pre = c @ p["pre/W"] + p["pre/b"]
    want_h, want_total = np.zeros((3, 5), "float32"), np.zeros((3, 5), "float32")
    for b in range(3):
        state = np.zeros(5, "float32")
        for t in range(lengths[b]):
            state = np.tanh(np.concatenate([x[b, t], state, pre[b]]) @ p["loop/h/W"] + p["loop/h/b"])
            want_total[b] += state + t
        want_h[b] = state
    np.testing.assert_allclose(h, want_h, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(total, want_total, rtol=1e-5, atol=1e-5)
    graph = traced.get_concrete_function(x, c, lengths).graph
    types = [op.type for op in graph.get_operations()]
    assert types.count("While") + types.count("StatelessWhile") == 1


def test_every_step_has_its_own_values_but_shares_the_parameters():
    parent, body, model, time = build()
    ctx = model.forward({"data": np.zeros((1, 1, 4), "float32"), "ctx": np.ones((1, 2), "float32")},
                        {"data": np.array([1], "int32")}, training=False)
    h_dims = body.layers["h"].output.dims
    with ctx.run:
        frame = rf.convert_to_tensor(np.ones((1, 4), "float32"), dims=body.extern_data["source"].dims)
        first = ctx.loop_step(body, {"source": frame}, {"h": rf.zeros(h_dims)}, rf.convert_to_tensor(np.int32(0)))
        h1 = first.value(body.layers["h"])
        second = ctx.loop_step(body, {"source": frame}, {"h": h1}, rf.convert_to_tensor(np.int32(1)))
        h2 = second.value(body.layers["h"])
        assert float(second.value(body.layers["step"]).raw) == 1.0
        assert first.run.parent is ctx.run and second.run is not first.run
        # "base:pre" is the parent's value, computed once
        assert first.value(parent.layers["pre"]) is ctx.value(parent.layers["pre"])
    assert not np.allclose(h1.raw.numpy(), h2.raw.numpy())
