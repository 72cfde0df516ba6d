"""A torch train step keeps only what the losses read of the layer outputs (`EmitContext.emit_all(keep_only)`):
the other outputs are dropped after their last reader, and the losses and gradients are those of a pass that
keeps everything."""

import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from netcompiler.builtin import load_builtin_layers  # noqa: E402
from netcompiler.config import Config  # noqa: E402
from netcompiler.emit.model import CompiledNetwork  # noqa: E402
from netcompiler.network import build_network  # noqa: E402

NETWORK = {
    "a": {"class": "linear", "activation": "relu", "n_out": 12, "from": "data"},
    "b": {"class": "linear", "activation": "tanh", "n_out": 12, "from": "a"},
    "c": {"class": "combine", "kind": "add", "from": ["a", "b"]},  # reads "a" after "b": "a" lives until here
    "side": {"class": "linear", "activation": None, "n_out": 3, "from": "c", "is_output_layer": True},
    "output": {"class": "softmax", "loss": "ce", "from": "c", "target": "classes"},
    "aux": {"class": "softmax", "loss": "ce", "from": "b", "target": "classes", "loss_scale": 0.5},
}


def make_model():
    load_builtin_layers()
    values = {"extern_data": {"data": {"dim": 5}, "classes": {"dim": 4, "sparse": True}}, "network": NETWORK}
    return CompiledNetwork(build_network(Config(values)), seed=3, backend="torch")


def batch():
    rng = np.random.RandomState(0)
    lengths = np.array([7, 4, 6], "int32")
    return ({"data": rng.randn(3, 7, 5).astype("float32"), "classes": rng.randint(0, 4, (3, 7)).astype("int32")},
            {"data": lengths, "classes": lengths})


def objective_and_grads(model, keep_only):
    inputs, lengths = batch()
    for p in model.trainable_params:
        p.grad = None
    ctx = model.forward(inputs, lengths, training=False, keep_only=keep_only)
    kept = {name for name, layer in model.network.layers.items() if id(layer) in ctx._values}
    objective = model.objective(model.losses(ctx), ctx)
    objective.backward()
    grads = [None if p.grad is None else p.grad.clone() for p in model.trainable_params]
    ctx.release()
    return float(objective.detach()), grads, kept


def test_only_what_the_losses_read_is_kept_and_the_step_is_unchanged():
    model = make_model()
    full, full_grads, kept_all = objective_and_grads(model, None)
    lean, lean_grads, kept = objective_and_grads(model, model._loss_readers())
    assert set(NETWORK) <= kept_all
    assert "a" not in kept and "side" in kept and "output" in kept and "aux" in kept
    assert {"b", "c"} <= kept  # the loss layers' sources (a loss may read them: logits)
    assert lean == full
    assert [g is None for g in full_grads] == [h is None for h in lean_grads]
    assert sum(g is not None for g in full_grads) >= 6  # a, b, output and aux: weights and biases
    for g, h in zip(full_grads, lean_grads):
        if g is not None:
            torch.testing.assert_close(g, h, rtol=0, atol=0)


def test_step_losses_frees_the_outputs_on_torch():
    model = make_model()
    inputs, lengths = batch()
    losses, objective = model.step_losses(inputs, lengths, training=True)
    objective.backward()
    assert sum(p.grad is not None for p in model.trainable_params) >= 6
    full, _, _ = objective_and_grads(model, None)
    assert float(model.step_losses(inputs, lengths, training=False)[1].detach()) == pytest.approx(full, rel=1e-6)


def test_a_dropped_output_asked_for_again_is_emitted_again():
    model = make_model()
    inputs, lengths = batch()
    ctx = model.forward(inputs, lengths, training=False, keep_only=model._loss_readers())
    layer = model.network.layers["a"]
    assert id(layer) not in ctx._values
    again = ctx.value(layer)
    ref = model.forward(inputs, lengths, training=False).value(layer)
    torch.testing.assert_close(again.raw, ref.raw)


def counted_softmax(monkeypatch):
    """Counts the backend's probability softmaxes (not log-softmax) from now on."""
    from netcompiler.backends.torch.core import CoreOps

    calls = []
    original = CoreOps.softmax_raw.__func__
    monkeypatch.setattr(CoreOps, "softmax_raw", classmethod(
        lambda cls, raw, axis, log: (calls.append(log) if not log else None) or original(cls, raw, axis, log)))
    return calls


def step_and_grads(model, training=False):
    inputs, lengths = batch()
    for p in model.trainable_params:
        p.grad = None
    _, objective = model.step_losses(inputs, lengths, training=training)
    objective.backward()
    return float(objective.detach()), [None if p.grad is None else p.grad.clone() for p in model.trainable_params]


def test_a_softmax_read_only_by_its_ce_loss_computes_no_probabilities_in_a_step(monkeypatch):
    model = make_model()
    assert {layer.name for layer in model._unread_probabilities()} == {"output", "aux"}
    full, full_grads, _ = objective_and_grads(model, None)  # every output computed, probabilities too
    calls = counted_softmax(monkeypatch)
    lean, lean_grads = step_and_grads(model)
    assert calls == [] and lean == pytest.approx(full, rel=1e-6)
    for g, h in zip(full_grads, lean_grads):
        torch.testing.assert_close(g, h, rtol=1e-5, atol=1e-6)
    inputs, lengths = batch()
    probs = model.forward(inputs, lengths, training=False).value(model.network.layers["output"])  # not a step
    assert len(calls) == 2 and torch.allclose(probs.raw.sum(-1), torch.ones(()))  # output and aux: a forward


def test_probabilities_another_layer_or_loss_reads_are_computed(monkeypatch):
    network = dict(NETWORK, probs={"class": "copy", "from": "aux", "is_output_layer": True},
                   dist={"class": "softmax", "n_out": 4, "from": "c", "loss": "mse", "target": "classes"})
    monkeypatch.setattr(sys.modules[__name__], "NETWORK", network)
    model = make_model()
    assert {layer.name for layer in model._unread_probabilities()} == {"output"}  # aux read by probs; mse
    full, full_grads, _ = objective_and_grads(model, None)
    calls = counted_softmax(monkeypatch)
    lean, lean_grads = step_and_grads(model)
    assert len(calls) == 2 and lean == pytest.approx(full, rel=1e-6)  # aux and dist
    for g, h in zip(full_grads, lean_grads):
        torch.testing.assert_close(g, h, rtol=1e-5, atol=1e-6)


def test_linear_layers_add_their_bias_in_the_matmul_kernel(monkeypatch):
    """One addmm per linear layer (no second pass and buffer for the bias), with the composed matmul + add's
    values and gradients."""
    from netcompiler.backends.torch.core import CoreOps

    model = make_model()
    calls = []
    addmm = torch.addmm
    monkeypatch.setattr(torch, "addmm", lambda *args: calls.append(1) or addmm(*args))
    fused, fused_grads, _ = objective_and_grads(model, None)
    assert len(calls) == 5  # a, b, side, output, aux
    monkeypatch.setattr(CoreOps, "matmul_add_raw", classmethod(lambda cls, a, b, bias: None))
    composed, composed_grads, _ = objective_and_grads(model, None)
    assert len(calls) == 5 and fused == pytest.approx(composed, rel=1e-6)
    for g, h in zip(composed_grads, fused_grads):
        torch.testing.assert_close(g, h, rtol=1e-5, atol=1e-6)
