"""Emission checks for every layer case (see layer_harness.py):

* every layer computes through the op layer: no module of `layers/` reaches a framework;
* the emitted tensors agree with the templates (checked inside EmitContext);
* the values equal the case's NumPy reference on a ragged batch, on valid frames;
* the forward pass traces once with batch and time left open;
* a checkpoint round trip restores the same outputs;
* parameter names are the golden "<layer>/<param>" names of the case ("<rec>/rec/<inner>/<param>" in a rec unit);
* gradients of layers with parameters agree with finite differences.
"""

import numpy as np
import pytest
import tensorflow as tf

from layer_harness import all_cases, params_as_numpy, random_batch, valid_mask
from netcompiler import frontend as rf
from netcompiler.emit.model import CompiledNetwork
from netcompiler.builtin import is_builtin_module
from netcompiler.layer_base import registered_layer_classes

CASES = all_cases()
NUMERIC = [c for c in CASES if c.reference is not None]


def _compile(case):
    network = case.build()
    tf.random.set_seed(1)
    return network, CompiledNetwork(network)


def _layers(network):
    return {layer.name: layer for layer in network.all_layers()}


def _compare(layer, got, want, sizes, case):
    data = layer.output
    assert got.shape == want.shape or all(
        w <= g for w, g in zip(want.shape, got.shape)), f"{layer.name}: shape {got.shape} vs reference {want.shape}"
    got = got[tuple(slice(0, n) for n in want.shape)]
    mask = np.ones(want.shape, dtype=bool)
    for dim in data.dynamic_dims:
        mask &= np.broadcast_to(valid_mask(data, dim, sizes[dim], want.shape), want.shape)
    if want.dtype == bool or not np.issubdtype(want.dtype, np.floating):
        np.testing.assert_array_equal(got[mask], want[mask], err_msg=f"layer {layer.name}")
    else:
        np.testing.assert_allclose(got[mask], want[mask], rtol=case.rtol, atol=case.atol, err_msg=f"layer {layer.name}")


@pytest.mark.parametrize("case", NUMERIC, ids=[c.id for c in NUMERIC])
def test_matches_numpy_reference(case):
    network, model = _compile(case)
    inputs, lengths = random_batch(network)
    ctx = model.forward(inputs, lengths, training=case.training)
    expected = case.reference(inputs, lengths, params_as_numpy(model))
    layers = _layers(network)
    for name, want in expected.items():
        layer = layers[name]
        sizes = {dim: np.asarray(ctx.run.size(dim).raw) for dim in layer.output.dynamic_dims}
        _compare(layer, ctx.value(layer).raw.numpy(), np.asarray(want), sizes, case)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_traces_once_with_open_dims_and_checkpoint_round_trip(case, tmp_path):
    network, model = _compile(case)
    names = list(case.expect)
    keys = model.network_input_keys()
    layers = _layers(network)

    @tf.function(input_signature=list(model.input_signature(keys)))
    def forward(inputs, lengths):
        ctx = model.forward(inputs, lengths, training=False)
        return [ctx.value(layers[n]).raw for n in names]

    inputs, lengths = random_batch(network, seed=0)
    first = [t.numpy() for t in forward(inputs, lengths)]
    shorter_inputs, shorter_lengths = random_batch(network, seed=1)
    forward(shorter_inputs, shorter_lengths)
    assert forward.experimental_get_tracing_count() == 1

    path = tf.train.Checkpoint(model=model.checkpoint_root).write(str(tmp_path / "ckpt"))
    _, fresh = _compile(case)
    for var in fresh.params.values():
        var.assign(tf.zeros_like(var) + 0.5)
    tf.train.Checkpoint(model=fresh.checkpoint_root).read(path).assert_consumed()
    fresh_layers = _layers(fresh.network)
    ctx = fresh.forward(inputs, lengths, training=False)
    for name, before in zip(names, first):
        after = ctx.value(fresh_layers[name]).raw.numpy()
        # traced and eager kernels may sum in different orders: equal up to float rounding
        if np.issubdtype(after.dtype, np.floating):
            np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-5)
        else:
            np.testing.assert_array_equal(after, before)


@pytest.mark.parametrize("case", [c for c in CASES if c.params], ids=[c.id for c in CASES if c.params])
def test_golden_parameter_names(case):
    network, model = _compile(case)
    scopes = {name: layer.param_scope for name, layer in _layers(network).items()}  # "rnn/rec/x" in a rec unit
    golden = {f"{scopes[layer]}/{name}" for layer, params in case.params.items() for name in params}
    assert golden <= set(model.params), f"missing: {sorted(golden - set(model.params))}"
    for layer, params in case.params.items():
        for name, sizes in params.items():
            assert tuple(model.params[f"{scopes[layer]}/{name}"].shape) == tuple(sizes)


GRADIENT_CASES = [c for c in NUMERIC if c.params]


@pytest.mark.parametrize("case", GRADIENT_CASES, ids=[c.id for c in GRADIENT_CASES])
def test_parameter_gradients_match_finite_differences(case):
    network, model = _compile(case)
    inputs, lengths = random_batch(network)
    layers = _layers(network)
    targets = [layers[n] for n in case.expect if layers[n].output.dtype.startswith("float")]
    variables = [v for v in model.params.values() if v.trainable]
    if not targets or not variables:
        pytest.skip("no float output or no trainable parameter")

    def objective():
        ctx = model.forward(inputs, lengths, training=False)
        total = tf.constant(0.0, tf.float64)
        for layer in targets:
            with ctx.run:
                y = rf.masked(ctx.value(layer), layer.output.dynamic_dims, 0.0).raw
            weights = tf.cast(tf.reshape(tf.range(tf.size(y)) % 7, tf.shape(y)), y.dtype) * 0.1 + 0.3
            total += tf.cast(tf.reduce_sum(y * weights), tf.float64)
        return total

    with tf.GradientTape() as tape:
        value = objective()
    grads = tape.gradient(value, variables)
    traced = tf.function(objective)  # the differences below: traced once instead of run eagerly 6x per variable
    rng = np.random.RandomState(0)
    for var, grad in zip(variables, grads):
        assert grad is not None, f"no gradient for {var.name}"
        grad = tf.convert_to_tensor(grad).numpy()
        flat = rng.choice(var.shape.num_elements(), size=min(3, var.shape.num_elements()), replace=False)
        for index in flat:
            idx = np.unravel_index(index, var.shape)
            original = var.numpy()
            eps = 1e-2
            bumped = original.copy()
            bumped[idx] += eps
            var.assign(bumped)
            up = float(traced())
            bumped[idx] -= 2 * eps
            var.assign(bumped)
            down = float(traced())
            var.assign(original)
            numeric = (up - down) / (2 * eps)
            assert abs(numeric - grad[idx]) <= 2e-2 * max(1.0, abs(numeric)), (var.name, idx, numeric, grad[idx])


def test_no_layer_module_reaches_a_framework():
    """Layers compute through the op layer (netcompiler.frontend); framework code lives in the backends."""
    import pathlib
    import re

    import layers

    # netcompiler.backends.layers (the layer-dict backend's recorder) is plain Python: frontend_op reads its records
    pattern = re.compile(r"^\s*(import|from)\s+(tensorflow|torch|keras|netcompiler\.backends(?!\.layers\b)|"
                         r"netcompiler\.lazy_tf)\b"
                         r"|lazy_tf|\btf\.", re.M)
    offenders = {}
    for path in sorted(pathlib.Path(layers.__file__).parent.glob("*.py")):
        found = pattern.findall(path.read_text())
        if found:
            offenders[path.name] = len(found)
    assert not offenders, f"layer modules that use a framework directly: {offenders}"


def test_every_registered_layer_has_a_numeric_case():
    from layer_harness import layer_classes_in

    covered = set()
    for case in NUMERIC:
        covered |= layer_classes_in(case.network)
    builtin = {name for name, cls in registered_layer_classes().items() if is_builtin_module(cls.__module__)}
    missing = sorted(builtin - covered)  # classes that configs of other tests define do not count
    assert not missing, f"layer classes without a NumPy reference case: {missing}"


from layer_cases.nested import test_12ax_sized_lstm_is_one_graph_loop  # noqa: E402,F401  (collected here)
