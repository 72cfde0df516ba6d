"""Running one loss of a network on TensorFlow or PyTorch with the same parameters and a ragged batch whose
padding holds garbage: the helpers of the loss tests of `layers/losses_sequence.py` and `layers/losses_other.py`."""

import importlib.util

import numpy as np
import pytest

from layer_harness import random_batch
from netcompiler.emit.model import CompiledNetwork
from netcompiler.network import build_from_dict

BACKENDS = ["tensorflow", pytest.param("torch", marks=pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="PyTorch is an optional extra"))]


def compile_on(backend, net, extern, seed=1):
    """(network, model) with parameters drawn from a fixed NumPy seed (the same on every backend)."""
    network = build_from_dict(net, extern)
    model = CompiledNetwork(network, backend=backend)
    rng = np.random.RandomState(seed)
    for name in sorted(model.params):
        var = model.params[name]
        model.backend.assign_raw(var, rng.randn(*tuple(var.shape)).astype("float32"))
    return network, model


def params_of(model):
    return {name: np.asarray(model.backend.to_numpy(var), np.float64) for name, var in model.params.items()}


def batch(network, lengths=None, seed=0, garbage=50.0):
    """random_batch with the given lengths per data key (ragged), garbage in every padded frame."""
    inputs, sizes = random_batch(network, seed=seed)
    for key, value in (lengths or {}).items():
        if key not in inputs:
            continue
        sizes[key] = np.asarray(value, np.int32)
        assert sizes[key].max() <= inputs[key].shape[1], (key, value, inputs[key].shape)
    for key, x in inputs.items():
        if key in sizes:
            x = x.copy()
            for b, n in enumerate(sizes[key]):
                x[b, n:] = garbage if x.dtype.kind == "f" else x.dtype.type(1)
            inputs[key] = x
    return inputs, sizes


def loss_of(model, layer_name, inputs, lengths, training=False):
    """(loss_sum or None, error_sum or None, num_frames) of one layer's loss, as floats."""
    values = {v.name: v for v in model.losses(model.forward(inputs, lengths, training=training))}
    value = values[layer_name]

    def number(raw):
        return None if raw is None else float(np.asarray(model.backend.to_numpy(raw)))
    return number(value.loss_sum), number(value.error_sum), number(value.num_frames)


def value_and_gradients(backend, model, loss_of):
    """(float value of `loss_of()`, {parameter name: its gradient as NumPy}) on `backend`."""
    names = sorted(model.params)
    if backend == "torch":
        import torch
        value = loss_of()
        return float(value.detach().numpy()), dict(zip(names, (g.numpy() for g in torch.autograd.grad(
            value, [model.params[n] for n in names]))))
    import tensorflow as tf
    with tf.GradientTape() as tape:
        value = loss_of()
    grads = tape.gradient(value, [model.params[n] for n in names])
    return float(value.numpy()), {n: tf.convert_to_tensor(g).numpy() for n, g in zip(names, grads)}


def sequences(x, lengths):
    return [np.asarray(x[b, :n]) for b, n in enumerate(lengths)]


def log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))
