"""The frontend's model-building API (rf.Module, rf.Parameter, rf.init, containers and the modules) on TensorFlow
and PyTorch: parameter names and counts as RETURNN names them, initial values equal on both backends for one seed,
outputs and gradients equal on both and equal to NumPy references on ragged batches, and the errors for bad use."""

import math

import numpy as np
import pytest

from frontend_harness import BACKENDS, HAVE_TORCH, Input, ragged_batch, run_both, weights
from netcompiler import frontend as rf
from netcompiler.backends import get_backend
from netcompiler.frontend import backend_select
from netcompiler.tensor import Data, Dim, Tensor, batch_dim

TIME = Dim(None, name="time")
IN = Dim(5, name="in")
HIDDEN = Dim(4, name="hidden")
OUT = Dim(3, name="out")
LENGTHS = {TIME: [4, 1, 3]}
# NumPy references run on the garbage of padded frames too (only valid frames are compared)
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")


class Net(rf.Module):
    """Two linear layers, a shared one used twice, a list and a sequential with a function."""

    def __init__(self):
        super().__init__()
        self.layer1 = rf.Linear(IN, HIDDEN)
        self.shared = rf.Linear(HIDDEN, HIDDEN, with_bias=False)
        self.again = self.shared
        self.blocks = rf.ModuleList([rf.Linear(HIDDEN, HIDDEN), rf.Linear(HIDDEN, HIDDEN)])
        self.head = rf.Sequential(rf.relu, rf.Linear(HIDDEN, OUT))
        self.scale = rf.Parameter([OUT])
        self.scale.initial = 1.5
        self.not_a_param = 3.0

    def __call__(self, x):
        x = self.layer1(x)
        x = self.again(self.shared(x))
        for block in self.blocks:
            x = rf.tanh(block(x))
        return self.head(x) * self.scale


# --- modules and parameters -----------------------------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
def test_parameter_names_counts_and_raw_types(backend):
    rf.select_backend(backend)
    net = Net()
    names = [name for name, _ in net.named_parameters()]
    assert names == ["scale", "layer1.weight", "layer1.bias", "shared.weight", "blocks.0.weight", "blocks.0.bias",
                     "blocks.1.weight", "blocks.1.bias", "head.1.weight", "head.1.bias"]
    assert len(list(net.parameters())) == 10
    count = sum(int(np.prod(p.shape)) for p in net.parameters())
    assert count == 3 + (5 * 4 + 4) + 4 * 4 + 2 * (4 * 4 + 4) + (4 * 3 + 3)
    assert [name for name, _ in net.named_modules()] == ["", "layer1", "shared", "blocks", "head", "blocks.0",
                                                          "blocks.1", "head.0", "head.1"]
    assert [name for name, _ in net.named_children()] == ["layer1", "shared", "blocks", "head"]
    assert net.get_deep("blocks.1.bias") is net.blocks[1].bias
    raw_type = get_backend(backend).is_raw
    assert all(raw_type(p.raw) for p in net.parameters())
    assert net.layer1.weight.dims == (IN, HIDDEN) and net.layer1.bias.dims == (HIDDEN,)
    assert not rf.Functional(rf.relu).has_parameters and net.has_parameters


def test_apply_visits_children_first_and_set_deep():
    rf.select_backend("tensorflow")
    net = Net()
    seen = []
    assert net.apply(lambda m: seen.append(type(m).__name__)) is net
    assert seen[-1] == "Net" and seen.count("Linear") == 5 and seen.index("Functional") < seen.index("Sequential")
    replacement = rf.Linear(HIDDEN, OUT)
    net.set_deep("head.1", replacement)
    assert net.head[1] is replacement
    with pytest.raises(AttributeError, match="'blocks.7'"):
        net.get_deep("blocks.7.weight")


def test_module_list_forms_and_edits():
    rf.select_backend("tensorflow")
    a, b, c = (rf.Linear(HIDDEN, HIDDEN) for _ in range(3))
    assert list(rf.ModuleList(a, b)) == [a, b] == list(rf.ModuleList([a, b]))
    named = rf.ModuleList({"enc": a, "7": b})
    assert [k for k, _ in named.items()] == ["enc", "1"]
    lst = rf.ModuleList(a, b).append(c)
    assert len(lst) == 3 and lst[-1] is c and list(lst[1:]) == [b, c]
    del lst[0]
    assert [k for k, _ in lst.items()] == ["0", "1"] and list(lst) == [b, c]
    assert [n for n, _ in lst.named_parameters()] == ["0.weight", "0.bias", "1.weight", "1.bias"]
    with pytest.raises(TypeError, match="rf.Module or a function"):
        rf.ModuleList(3)
    with pytest.raises(NotImplementedError, match="ModuleList defines no __call__"):
        lst(None)


def test_sequential_collects_outputs_and_runs_in_order():
    def build():
        return rf.Sequential(rf.Linear(IN, HIDDEN), rf.tanh, rf.Linear(HIDDEN, OUT))

    collected = {}

    def call(model, x):
        return model(x, collected_outputs=collected)

    batch = ragged_batch({"x": Input([batch_dim, TIME, IN])}, LENGTHS)
    result, _ = run_both(build, call, batch)
    p = result.params
    x = batch.inputs["x"].value
    want = np.tanh(x @ p["0.weight"] + p["0.bias"]) @ p["2.weight"] + p["2.bias"]
    mask = result.mask("output", [batch_dim, TIME, OUT])
    np.testing.assert_allclose(result.value("output", [batch_dim, TIME, OUT])[mask], want[mask], rtol=1e-5, atol=1e-5)
    assert list(collected) == ["0", "1", "2"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_initial_value_forms(backend):
    rf.select_backend(backend)
    to_numpy = get_backend(backend).to_numpy
    p = rf.Parameter([IN, OUT])
    assert np.all(to_numpy(p.raw) == 0)
    p.initial = 0.25
    assert np.all(to_numpy(p.raw) == 0.25)
    table = np.arange(15, dtype="float32").reshape(5, 3)
    p.initial = table
    np.testing.assert_array_equal(to_numpy(p.raw), table)
    with rf.RunContext(get_backend(backend)):
        p.initial = rf.convert_to_tensor(table.T.copy(), dims=[OUT, IN])  # any dim order
    np.testing.assert_array_equal(to_numpy(p.raw), table)
    p.initial = rf.init.Glorot()
    limit = math.sqrt(6.0 / (5 + 3))
    value = to_numpy(p.raw)
    assert np.all(np.abs(value) <= limit) and len(np.unique(value)) == 15 and isinstance(p.initial, rf.init.Glorot)
    with pytest.raises(ValueError, match=r"shape \(3, 5\).*\['in'\(5\), 'out'\(3\)\]|shape \(3, 5\).*have shape"):
        p.initial = table.T
    with rf.RunContext(get_backend(backend)), pytest.raises(ValueError, match="has dims"):
        p.initial = rf.convert_to_tensor(np.zeros(5, "float32"), dims=[IN])
    with pytest.raises(ValueError, match="must be static"):
        rf.Parameter([TIME, IN])
    with pytest.raises(ValueError, match="appears twice"):
        rf.Parameter([IN, IN])


@pytest.mark.parametrize("backend", BACKENDS)
def test_assign_and_trainable_flags(backend):
    b = get_backend(backend)
    rf.select_backend(backend)
    p = rf.Parameter([OUT], initial=1.0)
    p.assign(np.array([1.0, 2.0, 3.0]))
    p.assign_add(0.5)
    np.testing.assert_array_equal(b.to_numpy(p.raw), [1.5, 2.5, 3.5])
    with rf.RunContext(b):
        p.assign(rf.convert_to_tensor(np.array([7.0, 8.0, 9.0], "float32"), dims=[OUT]))
    np.testing.assert_array_equal(b.to_numpy(p.raw), [7.0, 8.0, 9.0])
    assert p.trainable and b.is_trainable(p.raw)
    stats = rf.Parameter([OUT], auxiliary=True)
    assert not stats.trainable and not b.is_trainable(stats.raw)
    p.trainable = False
    assert not b.is_trainable(p.raw)
    np.testing.assert_array_equal(b.to_numpy(p.raw), [7.0, 8.0, 9.0])


def test_no_backend_selected_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(backend_select, "_selected", None)
    with pytest.raises(RuntimeError, match=r"rf.Parameter needs a backend.*rf.select_backend_torch\(\)"):
        rf.Linear(IN, OUT)
    with rf.RunContext(get_backend("tensorflow")):  # the run's backend serves then
        assert get_backend("tensorflow").is_raw(rf.Linear(IN, OUT).weight.raw)


def test_random_init_is_reproducible_and_seeded():
    rf.select_backend("tensorflow")
    to_numpy = get_backend("tensorflow").to_numpy

    def weight(seed):
        rf.set_random_seed(seed)
        return to_numpy(rf.Linear(IN, OUT).weight.raw)

    np.testing.assert_array_equal(weight(5), weight(5))
    assert not np.allclose(weight(5), weight(6))
    assert rf.get_random_seed() == 6
    with pytest.raises(ValueError, match="non-negative int"):
        rf.set_random_seed(-1)


@pytest.mark.skipif(not HAVE_TORCH, reason="PyTorch is an optional extra (pip install -e '.[torch]')")
def test_same_seed_gives_same_parameters_on_both_backends():
    values = {}
    for backend in ("tensorflow", "torch"):
        rf.select_backend(backend)
        rf.set_random_seed(11)
        values[backend] = {n: get_backend(backend).to_numpy(p.raw) for n, p in Net().named_parameters()}
    for name, value in values["tensorflow"].items():
        np.testing.assert_array_equal(values["torch"][name], value, err_msg=name)


def test_init_distributions():
    rf.select_backend("tensorflow")
    rf.set_random_seed(0)
    big_in, big_out = Dim(400, name="a"), Dim(300, name="b")
    window = Dim(3, name="window")
    cases = [  # (initializer, dims, expected variance, bound or None)
        (rf.init.Glorot(), [big_in, big_out], 2.0 / 700, math.sqrt(6.0 / 700)),
        (rf.init.HeUniform(), [big_in, big_out], 2.0 / 400, math.sqrt(6.0 / 400)),
        (rf.init.He(), [big_in, big_out], 2.0 / 400, 2 * math.sqrt(2.0 / 400) / 0.87962566103423978),
        (rf.init.VarianceScaling(scale=3.0, mode="fan_out", distribution="untruncated_normal"), [big_in, big_out],
         3.0 / 300, None),
        (rf.init.Normal(0.1), [big_in, big_out], 0.1 ** 2 * 0.87962566103423978 ** 2, 0.2),
        (rf.init.Normal(0.1, truncated=False), [big_in, big_out], 0.01, None),
        # a conv filter [out, in, window]: fan_in = in x window, fan_out = out x window
        (rf.init.VarianceScaling(mode="fan_in", distribution="uniform"), [big_out, big_in, window], 1.0 / 1200,
         math.sqrt(3.0 / 1200)),
    ]
    for init, dims, variance, bound in cases:
        value = init(dims, "float32")
        assert value.shape == tuple(d.size for d in dims) and value.dtype == np.float32
        assert abs(value.var() / variance - 1) < 0.05, (init, value.var(), variance)
        assert abs(value.mean()) < 0.05 * math.sqrt(variance)
        if bound is not None:
            assert np.abs(value).max() <= bound * (1 + 1e-6), init
    with pytest.raises(ValueError, match="mode must be"):
        rf.init.VarianceScaling(mode="fan_middle")
    with pytest.raises(ValueError, match="stddev must be a positive"):
        rf.init.Normal(0.0)


# --- Linear, Embedding --------------------------------------------------------------------------------------
def test_linear_matches_numpy_with_gradients():
    batch = ragged_batch({"x": Input([batch_dim, TIME, IN])}, LENGTHS)
    result, _ = run_both(lambda: rf.Linear(IN, OUT), lambda m, x: m(x), batch)
    w, b, x = result.params["weight"], result.params["bias"], batch.inputs["x"].value
    dims = [batch_dim, TIME, OUT]
    mask = result.mask("output", dims)
    np.testing.assert_allclose(result.value("output", dims)[mask], (x @ w + b)[mask], rtol=1e-5, atol=1e-5)
    g = np.transpose(weights(result.outputs["output"].shape) * result.valid["output"],
                     [result.dims["output"].index(d) for d in dims])  # d objective / d output, [B, T, out]
    np.testing.assert_allclose(result.grads["weight"], np.einsum("bti,bto->io", x, g), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(result.grads["bias"], g.sum(axis=(0, 1)), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(result.grads["input:x"], g @ w.T, rtol=1e-5, atol=1e-5)
    assert result.model.weight.dims == (IN, OUT)


def test_linear_with_the_same_in_and_out_dim():
    batch = ragged_batch({"x": Input([batch_dim, TIME, HIDDEN])}, LENGTHS)
    result, _ = run_both(lambda: rf.Linear(HIDDEN, HIDDEN, with_bias=False), lambda m, x: m(x), batch)
    assert list(result.params) == ["weight"]
    dims = [batch_dim, TIME, HIDDEN]
    mask = result.mask("output", dims)
    want = batch.inputs["x"].value @ result.params["weight"]
    np.testing.assert_allclose(result.value("output", dims)[mask], want[mask], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_linear_wrong_in_dim_names_module_and_dims(backend):
    b = get_backend(backend)
    rf.select_backend(backend)
    linear = rf.Linear(IN, OUT)
    other = Dim(5, name="other")
    with rf.RunContext(b):
        x = rf.convert_to_tensor(np.zeros((2, 5), "float32"), dims=[batch_dim, other])
        with pytest.raises(ValueError, match=r"<Linear .*'in'.*expects an input with in_dim .*'in'.*got .*'other'"
                                             r".*same size but is another dim"):
            linear(x)
        with pytest.raises(TypeError, match="must be a Tensor"):
            linear(np.zeros((2, 5)))


def test_embedding_matches_numpy():
    vocab = Dim(7, name="vocab")
    batch = ragged_batch({"labels": Input([batch_dim, TIME], "int32", sparse_dim=vocab)}, LENGTHS)
    result, _ = run_both(lambda: rf.Embedding(vocab, HIDDEN), lambda m, labels: m(labels), batch)
    table = result.params["weight"]
    dims = [batch_dim, TIME, HIDDEN]
    mask = result.mask("output", dims)
    want = table[batch.inputs["labels"].value]
    np.testing.assert_allclose(result.value("output", dims)[mask], want[mask], rtol=1e-6)
    labels, g = batch.inputs["labels"].value, result.mask("output", dims) * np.transpose(
        weights(result.outputs["output"].shape), [result.dims["output"].index(d) for d in dims])
    want_grad = np.zeros_like(table)
    np.add.at(want_grad, labels, g)
    np.testing.assert_allclose(result.grads["weight"], want_grad, rtol=1e-5, atol=1e-5)


def test_embedding_refuses_dense_input():
    rf.select_backend("tensorflow")
    emb = rf.Embedding(Dim(7, name="vocab"), HIDDEN)
    with rf.RunContext(get_backend("tensorflow")):
        x = rf.convert_to_tensor(np.zeros((2, 7), "float32"), dims=[batch_dim, Dim(7, name="vocab2")])
        with pytest.raises(ValueError, match=r"<Embedding.*expects indices into in_dim .*'vocab'.*dense"):
            emb(x)


def test_demo_model_with_cross_entropy():
    """RETURNN's demo-rf model (three Linear layers with relu) and its loss on both backends."""
    classes = Dim(2, name="classes")

    class Model(rf.Module):
        def __init__(self):
            super().__init__()
            self.layer1 = rf.Linear(IN, Dim(6, name="hidden1"))
            self.layer2 = rf.Linear(self.layer1.out_dim, Dim(8, name="hidden2"))
            self.layer3 = rf.Linear(self.layer2.out_dim, classes)

        def __call__(self, x):
            return self.layer3(rf.relu(self.layer2(rf.relu(self.layer1(x)))))

    def call(model, x, y):
        return {"ce": rf.cross_entropy(estimated=model(x), estimated_type="logits", target=y, axis=classes)}

    batch = ragged_batch({"x": Input([batch_dim, TIME, IN]), "y": Input([batch_dim, TIME], "int32",
                                                                        sparse_dim=classes)}, LENGTHS)
    result, _ = run_both(Model, call, batch)
    p = result.params
    h = np.maximum(batch.inputs["x"].value @ p["layer1.weight"] + p["layer1.bias"], 0)
    h = np.maximum(h @ p["layer2.weight"] + p["layer2.bias"], 0)
    logits = (h @ p["layer3.weight"] + p["layer3.bias"]).astype(np.float64)
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    want = -np.take_along_axis(log_probs, batch.inputs["y"].value[..., None], -1)[..., 0]
    mask = result.mask("ce", [batch_dim, TIME])
    np.testing.assert_allclose(result.value("ce", [batch_dim, TIME])[mask], want[mask], rtol=1e-5, atol=1e-5)
    assert set(result.grads) == {"layer1.weight", "layer1.bias", "layer2.weight", "layer2.bias", "layer3.weight",
                                 "layer3.bias", "input:x"}


# --- activations ----------------------------------------------------------------------------------------------
def _gelu(x):
    from math import erf

    return 0.5 * x * (1 + np.vectorize(erf)(x / math.sqrt(2)))


ACTIVATIONS = {
    "relu": lambda x: np.maximum(x, 0), "gelu": _gelu, "silu": lambda x: x / (1 + np.exp(-x)),
    "swish": lambda x: x / (1 + np.exp(-x)), "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "tanh": np.tanh,
    "selu": lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * (np.exp(x) - 1)),
    "elu": lambda x: np.where(x > 0, x, np.exp(x) - 1), "relu_square": lambda x: np.maximum(x, 0) ** 2,
    "log_sigmoid": lambda x: -np.log1p(np.exp(-x)), "softplus": lambda x: np.log1p(np.exp(x)),
    "expm1": np.expm1, "log1p": lambda x: np.log1p(np.abs(x)), "identity": lambda x: x,
    "safe_log": lambda x: np.log(np.maximum(np.abs(x), 1.1755e-38)),
}
POSITIVE_INPUT = {"log1p", "safe_log"}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation(name):
    func = getattr(rf, name)
    batch = ragged_batch({"x": Input([batch_dim, TIME, IN])}, LENGTHS)
    prep = rf.abs if name in POSITIVE_INPUT else (lambda x: x)
    result, _ = run_both(lambda: None, lambda m, x: func(prep(x)), batch)
    dims = [batch_dim, TIME, IN]
    mask = result.mask("output", dims)
    want = ACTIVATIONS[name](batch.inputs["x"].value.astype(np.float64))
    np.testing.assert_allclose(result.value("output", dims)[mask], want[mask], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("log", [False, True])
def test_softmax_over_time_ignores_padding(log):
    batch = ragged_batch({"x": Input([batch_dim, TIME, IN])}, LENGTHS)
    func = rf.log_softmax if log else rf.softmax
    result, _ = run_both(lambda: None, lambda m, x: func(x, axis=TIME), batch)
    x = batch.inputs["x"].value.astype(np.float64)
    for b, n in enumerate(LENGTHS[TIME]):
        e = np.exp(x[b, :n] - x[b, :n].max(0))
        want = e / e.sum(0)
        got = result.value("output", [batch_dim, TIME, IN])[b, :n]
        np.testing.assert_allclose(got, np.log(want) if log else want, rtol=1e-5, atol=1e-6)


def test_gating_halves_the_feature_dim():
    feat = Dim(6, name="feat")
    batch = ragged_batch({"x": Input([batch_dim, TIME, feat])}, LENGTHS)
    result, _ = run_both(lambda: None, lambda m, x: rf.gating(x)[0], batch)
    x = batch.inputs["x"].value
    want = x[..., :3] / (1 + np.exp(-x[..., 3:]))
    got = result.outputs["output"]
    mask = result.valid["output"]
    np.testing.assert_allclose(got[mask], want[mask], rtol=1e-5, atol=1e-6)


# --- convolution, transposed convolution, pooling -------------------------------------------------------------
def _np_conv1d(x, w, b, stride, padding, dilation=1):
    """One sequence x [T, in] with w [out, in, K] as TF computes it (SAME: the smaller half of the padding left)."""
    k = w.shape[2]
    span = (k - 1) * dilation + 1
    n = x.shape[0]
    if padding == "same":
        out = -(-n // stride)
        total = max((out - 1) * stride + span - n, 0)
        x = np.pad(x, [(total // 2, total - total // 2), (0, 0)])
    else:
        out = max(-(-(n - span + 1) // stride), 0)
    y = np.zeros((out, w.shape[0]))
    for o in range(out):
        for j in range(k):
            y[o] += x[o * stride + j * dilation] @ w[:, :, j].T
    return y + b


def _np_transposed_conv1d(x, w, b, stride, padding):
    """One sequence x [T, in] with w [in, out, K], cut as TF's conv_transpose."""
    n, k = x.shape[0], w.shape[2]
    full = np.zeros(((n - 1) * stride + k if n else 0, w.shape[1]))
    for i in range(n):
        for j in range(k):
            full[i * stride + j] += x[i] @ w[:, :, j]
    keep = n * stride + (max(k - stride, 0) if padding == "valid" else 0)
    left = max(k - stride, 0) // 2 if padding == "same" else 0
    full = np.pad(full, [(0, max(left + keep - full.shape[0], 0)), (0, 0)])
    return full[left:left + keep] + b


def _np_pool1d(x, mode, size, stride, padding):
    """One sequence x [T, C]; windows count only real frames (an empty one gives 0)."""
    n = x.shape[0]
    if padding == "same":
        out = -(-n // stride)
        left = max((out - 1) * stride + size - n, 0) // 2
    else:
        out, left = max(-(-(n - size + 1) // stride), 0), 0
    y = np.zeros((out, x.shape[1]))
    for o in range(out):
        frames = x[max(o * stride - left, 0):max(o * stride - left + size, 0)]
        if len(frames):
            y[o] = frames.max(0) if mode == "max" else frames.mean(0)
    return y


def _per_sequence(result, name, out_dim, want_fn, batch, in_key="x"):
    """Compares each sequence's valid output frames with `want_fn(its valid input frames)` and the output lengths."""
    got = result.value(name, [batch_dim, result.dims[name][1] if result.dims[name][0] == batch_dim else
                              result.dims[name][0], out_dim])
    mask = result.mask(name, [batch_dim, [d for d in result.dims[name] if d not in (batch_dim, out_dim)][0],
                              out_dim])[..., 0]
    x = batch.inputs[in_key].value
    for i, n in enumerate(LENGTHS[TIME]):
        want = want_fn(x[i, :n].astype(np.float64))
        assert mask[i].sum() == len(want), (i, mask[i].sum(), len(want))
        np.testing.assert_allclose(got[i, :len(want)], want, rtol=1e-5, atol=1e-5, err_msg=f"sequence {i}")


CONV_CASES = [("same", 1, 3), ("same", 2, 3), ("valid", 1, 2), ("valid", 2, 3), ("same", 3, 4)]


@pytest.mark.parametrize("padding,stride,window", CONV_CASES)
def test_conv1d_matches_numpy_per_sequence(padding, stride, window):
    batch = ragged_batch({"x": Input([batch_dim, TIME, IN])}, LENGTHS)
    out_dims = {}

    def call(model, x):
        y, out_dims["time"] = model(x, in_spatial_dim=TIME)
        return y

    result, _ = run_both(lambda: rf.Conv1d(IN, OUT, window, padding=padding, strides=stride), call, batch)
    w, b = result.params["filter"], result.params["bias"]
    assert w.shape == (3, 5, window) and list(result.params) == ["filter", "bias"]
    assert (out_dims["time"] is TIME) == (padding == "same" and stride == 1)
    _per_sequence(result, "output", OUT, lambda x: _np_conv1d(x, w, b, stride, padding), batch)


def test_conv1d_dilated_and_grouped():
    feat = Dim(4, name="feat")
    batch = ragged_batch({"x": Input([batch_dim, TIME, feat])}, LENGTHS)
    result, _ = run_both(lambda: rf.Conv1d(feat, Dim(6, name="out6"), 2, padding="valid", dilation_rate=2, groups=2),
                         lambda m, x: m(x, in_spatial_dim=TIME)[0], batch)
    w, b = result.params["filter"], result.params["bias"]  # [6, 2, 2]: each group of 3 outputs reads 2 inputs
    full = np.zeros((6, 4, 2))
    full[:3, :2], full[3:, 2:] = w[:3], w[3:]
    out6 = result.model.out_dim
    _per_sequence(result, "output", out6, lambda x: _np_conv1d(x, full, b, 1, "valid", dilation=2), batch)


def test_conv2d_over_time_and_a_static_dim():
    freq = Dim(6, name="freq")
    batch = ragged_batch({"x": Input([batch_dim, TIME, freq, IN])}, LENGTHS)
    holder = {}

    def call(model, x):
        y, holder["dims"] = model(x, in_spatial_dims=[TIME, freq])
        return y

    result, _ = run_both(lambda: rf.Conv2d(IN, OUT, [3, 2], padding="same", strides=[1, 2]), call, batch)
    w, b = result.params["filter"], result.params["bias"]  # [out, in, 3, 2]
    _, t_dim, f_dim, _ = result.dims["output"]  # (the dims of the last run, on torch, are others)
    assert t_dim is TIME and f_dim.size == 3 and holder["dims"][0] is TIME
    got = result.value("output", [batch_dim, TIME, f_dim, OUT])
    x = batch.inputs["x"].value.astype(np.float64)
    for i, n in enumerate(LENGTHS[TIME]):
        xp = np.pad(x[i, :n], [(1, 1), (0, 0), (0, 0)])  # time: window 3, "same": one frame each side
        want = np.zeros((n, 3, 3)) + b  # freq: 6 frames, stride 2, window 2: no padding
        for t in range(n):
            for f in range(3):
                want[t, f] += np.einsum("kjc,ockj->o", xp[t:t + 3, 2 * f:2 * f + 2], w)
        np.testing.assert_allclose(got[i, :n], want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("padding,stride,window", [("valid", 2, 3), ("valid", 3, 2), ("same", 2, 4), ("same", 2, 1),
                                                   ("valid", 1, 3)])
def test_transposed_conv1d_matches_numpy_per_sequence(padding, stride, window):
    batch = ragged_batch({"x": Input([batch_dim, TIME, IN])}, LENGTHS)
    result, _ = run_both(lambda: rf.TransposedConv1d(IN, OUT, window, padding=padding, strides=stride),
                         lambda m, x: m(x, in_spatial_dim=TIME)[0], batch)
    w, b = result.params["filter"], result.params["bias"]
    assert w.shape == (5, 3, window)
    _per_sequence(result, "output", OUT, lambda x: _np_transposed_conv1d(x, w, b, stride, padding), batch)


def test_transposed_conv_strides_default_to_the_window_and_refuse_output_padding():
    batch = ragged_batch({"x": Input([batch_dim, TIME, IN])}, LENGTHS)
    result, _ = run_both(lambda: rf.TransposedConv1d(IN, OUT, 2, padding="valid"),
                         lambda m, x: m(x, in_spatial_dim=TIME)[0], batch)
    w, b = result.params["filter"], result.params["bias"]
    _per_sequence(result, "output", OUT, lambda x: _np_transposed_conv1d(x, w, b, 2, "valid"), batch)
    rf.select_backend("tensorflow")
    module = rf.TransposedConv1d(IN, OUT, 2, padding="valid", output_padding=1)
    with rf.RunContext(get_backend("tensorflow")) as ctx:
        ctx.set_size(TIME, np.array([2, 1], "int32"))
        x = rf.convert_to_tensor(np.zeros((2, 2, 5), "float32"), dims=[batch_dim, TIME, IN])
        with pytest.raises(NotImplementedError, match="output_padding are not supported"):
            module(x, in_spatial_dim=TIME)


@pytest.mark.parametrize("mode", ["max", "avg"])
@pytest.mark.parametrize("padding,stride,size", [("valid", None, 2), ("same", 1, 3), ("same", 2, 3), ("valid", 1, 3)])
def test_pool1d_matches_numpy_per_sequence(mode, padding, stride, size):
    batch = ragged_batch({"x": Input([batch_dim, TIME, IN])}, LENGTHS)
    if mode == "max":
        call = lambda m, x: rf.max_pool1d(x, pool_size=size, padding=padding, strides=stride,  # noqa: E731
                                          in_spatial_dim=TIME)[0]
    else:
        call = lambda m, x: rf.pool1d(x, mode="avg", pool_size=size, padding=padding, strides=stride,  # noqa: E731
                                      in_spatial_dim=TIME)[0]
    result, _ = run_both(lambda: None, call, batch)
    _per_sequence(result, "output", IN, lambda x: _np_pool1d(x, mode, size, stride or size, padding), batch)
    assert np.all(result.outputs["output"][~result.valid["output"]] == 0)  # padded output frames are zero


def test_pool2d_over_time_and_a_static_dim():
    freq = Dim(4, name="freq")
    batch = ragged_batch({"x": Input([batch_dim, TIME, freq, IN])}, LENGTHS)
    holder = {}

    def call(model, x):
        y, holder["dims"] = rf.pool2d(x, mode="max", pool_size=(2, 2), padding="same", in_spatial_dims=[TIME, freq])
        return y

    result, _ = run_both(lambda: None, call, batch)
    _, t_dim, f_dim, _ = result.dims["output"]
    assert f_dim.size == 2 and len(holder["dims"]) == 2
    got = result.value("output", [batch_dim, t_dim, f_dim, IN])
    x = batch.inputs["x"].value
    for i, n in enumerate(LENGTHS[TIME]):
        want = np.stack([x[i, 2 * t:min(2 * t + 2, n)].reshape(-1, 2, 2, 5).max(axis=(0, 2))
                         for t in range(-(-n // 2))]) if n else np.zeros((0, 2, 5))
        np.testing.assert_allclose(got[i, :len(want)], want, rtol=1e-6)


# --- normalization ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["LayerNorm", "RMSNorm"])
def test_layer_and_rms_norm(kind):
    batch = ragged_batch({"x": Input([batch_dim, TIME, IN])}, LENGTHS)

    def build():
        module = getattr(rf, kind)(IN)
        module.scale.initial = np.linspace(0.5, 1.5, 5).astype("float32")
        if module.bias is not None:
            module.bias.initial = np.linspace(-1, 1, 5).astype("float32")
        return module

    result, _ = run_both(build, lambda m, x: m(x), batch)
    x = batch.inputs["x"].value.astype(np.float64)
    p = result.params
    if kind == "LayerNorm":
        want = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-6) * p["scale"] + p["bias"]
    else:
        want = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * p["scale"]
    dims = [batch_dim, TIME, IN]
    mask = result.mask("output", dims)
    np.testing.assert_allclose(result.value("output", dims)[mask], want[mask], rtol=1e-4, atol=1e-5)


def test_group_norm_normalizes_each_group_of_channels():
    feat = Dim(6, name="feat")
    batch = ragged_batch({"x": Input([batch_dim, TIME, feat])}, LENGTHS)

    def build():
        module = rf.GroupNorm(feat, num_groups=2)
        module.scale.initial = np.linspace(0.5, 1.5, 6).astype("float32")
        module.bias.initial = np.linspace(-1, 1, 6).astype("float32")
        return module

    result, _ = run_both(build, lambda m, x: m(x), batch)
    x = batch.inputs["x"].value.astype(np.float64).reshape(3, 4, 2, 3)
    want = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-6)
    want = want.reshape(3, 4, 6) * result.params["scale"] + result.params["bias"]
    dims = [batch_dim, TIME, feat]
    mask = result.mask("output", dims)
    np.testing.assert_allclose(result.value("output", dims)[mask], want[mask], rtol=1e-4, atol=1e-5)


def test_default_initial_state_of_a_module_collects_its_children():
    class Decoder(rf.Module):
        def __init__(self):
            super().__init__()
            self.embed = rf.Linear(IN, HIDDEN)
            self.lstm = rf.LSTM(HIDDEN, OUT)

    rf.select_backend("tensorflow")
    b = get_backend("tensorflow")
    with rf.RunContext(b) as ctx:
        ctx.set_size(batch_dim, 2, size_dims=())
        state = Decoder().default_initial_state(batch_dims=[batch_dim])
        assert list(state) == ["lstm"] and isinstance(state.lstm, rf.LstmState)
        assert state.lstm.h.dims == (batch_dim, OUT) and np.all(b.to_numpy(state.lstm.c.raw) == 0)
        assert rf.Linear(IN, OUT).default_initial_state(batch_dims=[batch_dim]) is None


def _bn_reference(x, mask, gamma, beta, eps=1e-3):
    valid = x[mask[..., 0]]  # [frames, in]
    mean, var = valid.mean(0), valid.var(0)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta, mean, var


@pytest.mark.parametrize("backend", BACKENDS)
def test_batch_norm_training_masks_padding_and_moves_running_stats(backend):
    batch = ragged_batch({"x": Input([batch_dim, TIME, IN])}, LENGTHS)
    from frontend_harness import run

    def build():
        bn = rf.BatchNorm(IN)
        bn.gamma.initial = np.linspace(0.5, 2, 5).astype("float32")
        bn.beta.initial = np.linspace(-1, 1, 5).astype("float32")
        return bn

    result = run(backend, build, lambda m, x: m(x), batch, training=True)
    x = batch.inputs["x"].value.astype(np.float64)
    dims = [batch_dim, TIME, IN]
    mask = result.mask("output", dims)
    want, mean, var = _bn_reference(x, mask, result.params["gamma"], result.params["beta"])
    np.testing.assert_allclose(result.value("output", dims)[mask], want[mask], rtol=1e-4, atol=1e-4)
    to_numpy = get_backend(backend).to_numpy
    np.testing.assert_allclose(to_numpy(result.model.running_mean.raw), 0.1 * mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(to_numpy(result.model.running_variance.raw), 0.9 + 0.1 * var, rtol=1e-5)
    assert set(result.grads) == {"gamma", "beta", "input:x"}  # running statistics are not trainable


def test_batch_norm_same_on_both_backends_in_training_and_eval():
    batch = ragged_batch({"x": Input([batch_dim, TIME, IN])}, LENGTHS)
    run_both(lambda: rf.BatchNorm(IN), lambda m, x: m(x), batch, training=True)

    def build():
        bn = rf.BatchNorm(IN, eps=1e-5)
        bn.running_mean.initial = np.arange(5, dtype="float32")
        bn.running_variance.initial = np.arange(1, 6, dtype="float32")
        return bn

    result, _ = run_both(build, lambda m, x: m(x), batch)  # eval: the running statistics
    x = batch.inputs["x"].value
    want = (x - np.arange(5)) / np.sqrt(np.arange(1, 6) + 1e-5)
    np.testing.assert_allclose(result.outputs["output"], want, rtol=1e-5, atol=1e-5)


def test_batch_norm_without_mask_counts_padding():
    batch = ragged_batch({"x": Input([batch_dim, TIME, IN])}, LENGTHS)
    from frontend_harness import run

    result = run("tensorflow", lambda: rf.BatchNorm(IN, use_mask=False, affine=False), lambda m, x: m(x), batch,
                 training=True)
    x = batch.inputs["x"].value.astype(np.float64)
    want = (x - x.mean((0, 1))) / np.sqrt(x.var((0, 1)) + 1e-3)
    np.testing.assert_allclose(result.outputs["output"], want, rtol=1e-4, atol=1e-4)
    assert list(result.params) == ["running_mean", "running_variance"]


def test_normalization_errors():
    rf.select_backend("tensorflow")
    with rf.RunContext(get_backend("tensorflow")):
        x = rf.convert_to_tensor(np.zeros((2, 3), "float32"), dims=[batch_dim, OUT])
        with pytest.raises(ValueError, match=r"<BatchNorm .*'in'.*expects an input with in_dim"):
            rf.BatchNorm(IN)(x)
        with pytest.raises(ValueError, match=r"LayerNorm.*expects an input with in_dim .*'in'"):
            rf.LayerNorm(IN)(x)
    with pytest.raises(ValueError, match="momentum must be in"):
        rf.BatchNorm(IN, momentum=2.0)


# --- LSTM -------------------------------------------------------------------------------------------------------
def _np_lstm(x, ff, rec, bias, h, c):
    """One sequence x [T, in]; ff [4n, in], rec [4n, n]; gates i, f, c, o. Outputs [T, n] and the final h, c."""
    def sigmoid(v):
        return 1 / (1 + np.exp(-v))

    n = rec.shape[1]
    outs = []
    for frame in x:
        z = ff @ frame + rec @ h + bias
        i, f, g, o = z[:n], z[n:2 * n], z[2 * n:3 * n], z[3 * n:]
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
        outs.append(h)
    return np.array(outs).reshape(len(x), n), h, c


def test_lstm_matches_numpy_per_sequence_with_final_states():
    batch = ragged_batch({"x": Input([batch_dim, TIME, IN])}, LENGTHS)

    def call(model, x):
        out, state = model(x, state=model.default_initial_state(batch_dims=[batch_dim]), spatial_dim=TIME)
        assert isinstance(state, rf.LstmState)
        return {"out": out, "h": state.h, "c": state.c}

    result, _ = run_both(lambda: rf.LSTM(IN, OUT), call, batch)
    p = result.params
    assert list(p) == ["ff_weight", "rec_weight", "bias"] and p["ff_weight"].shape == (12, 5)
    out = result.value("out", [batch_dim, TIME, OUT])
    for i, n in enumerate(LENGTHS[TIME]):
        want, h, c = _np_lstm(batch.inputs["x"].value[i, :n].astype(np.float64), p["ff_weight"], p["rec_weight"],
                              p["bias"], np.zeros(3), np.zeros(3))
        np.testing.assert_allclose(out[i, :n], want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(result.value("h", [batch_dim, OUT])[i], h, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(result.value("c", [batch_dim, OUT])[i], c, rtol=1e-5, atol=1e-6)


def test_lstm_single_step_continues_a_state_and_reads_indices():
    vocab = Dim(6, name="vocab")
    batch = ragged_batch({"labels": Input([batch_dim], "int32", sparse_dim=vocab),
                          "h": Input([batch_dim, OUT]), "c": Input([batch_dim, OUT])}, {TIME: [1, 1, 1]})

    def call(model, labels, h, c):
        out, state = model(labels, state=rf.LstmState(h=h, c=c), spatial_dim=rf.single_step_dim)
        return {"out": out, "c": state.c}

    result, _ = run_both(lambda: rf.LSTM(vocab, OUT, with_bias=False), call, batch)
    p = result.params
    assert list(p) == ["ff_weight", "rec_weight"]
    inputs = {k: v.value.astype(np.float64) for k, v in batch.inputs.items()}
    for i in range(3):
        onehot = np.eye(6)[batch.inputs["labels"].value[i]]
        want, h, c = _np_lstm(onehot[None], p["ff_weight"], p["rec_weight"], np.zeros(12), inputs["h"][i],
                              inputs["c"][i])
        np.testing.assert_allclose(result.value("out", [batch_dim, OUT])[i], h, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(result.value("c", [batch_dim, OUT])[i], c, rtol=1e-5, atol=1e-6)


def test_lstm_errors():
    rf.select_backend("tensorflow")
    lstm = rf.LSTM(IN, OUT)
    with rf.RunContext(get_backend("tensorflow")) as ctx:
        ctx.set_size(TIME, np.array([2, 1], "int32"))
        x = rf.convert_to_tensor(np.zeros((2, 2, 3), "float32"), dims=[batch_dim, TIME, OUT])
        with pytest.raises(ValueError, match=r"<LSTM .*expects an input with in_dim .*'in'.*got"):
            lstm(x, state=rf.LstmState(h=None, c=None), spatial_dim=TIME)
        x = rf.convert_to_tensor(np.zeros((2, 2, 5), "float32"), dims=[batch_dim, TIME, IN])
        with pytest.raises(ValueError, match="the state needs entries h and c"):
            lstm(x, state=rf.State(h=x), spatial_dim=TIME)


# --- dropout ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
def test_dropout_scales_kept_values_and_shares_its_mask_along_other_dims(backend):
    b = get_backend(backend)
    rf.select_backend(backend)
    feat = Dim(2000, name="feat")
    x_np = np.random.RandomState(0).uniform(1, 2, (3, 4, 2000)).astype("float32")
    for training in (True, False):
        with rf.RunContext(b, training=training) as ctx:
            ctx.set_size(TIME, np.array([4, 2, 3], "int32"))
            x = rf.convert_to_tensor(x_np, dims=[batch_dim, TIME, feat])
            y = b.to_numpy(rf.Dropout(0.3)(x).raw)
            shared = b.to_numpy(rf.Dropout(0.3, axis=feat)(x).raw)
        if not training:
            np.testing.assert_array_equal(y, x_np)
            np.testing.assert_array_equal(shared, x_np)
            continue
        kept = y != 0
        assert abs(kept.mean() - 0.7) < 0.01
        np.testing.assert_allclose(y[kept], x_np[kept] / 0.7, rtol=1e-6)
        kept_shared = shared != 0
        assert np.all(kept_shared == kept_shared[:1, :1])  # the same features dropped everywhere
        assert abs(kept_shared[0, 0].mean() - 0.7) < 0.05
    with pytest.raises(ValueError, match="drop_prob must be in"):
        rf.Dropout(1.0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_set_random_seed_restarts_the_backends_dropout_masks(backend):
    b = get_backend(backend)
    rf.select_backend(backend)
    masks = []
    for seed in (3, 3, 4):
        rf.set_random_seed(seed)
        with rf.RunContext(b, training=True):
            x = rf.convert_to_tensor(np.ones((4, 50), "float32"), dims=[batch_dim, IN.__class__(50, name="f")])
            masks.append(b.to_numpy(rf.dropout(x, 0.5).raw) != 0)
    np.testing.assert_array_equal(masks[0], masks[1])
    assert not np.array_equal(masks[0], masks[2])


def test_no_op_is_shadowed_by_a_submodule_of_the_same_name():
    import inspect
    import types

    ops = {name for module in vars(rf).values() if isinstance(module, types.ModuleType)
           and module.__name__.startswith("netcompiler.frontend.")
           for name, value in vars(module).items() if inspect.isfunction(value) and not name.startswith("_")}
    shadowed = [name for name in ops if isinstance(getattr(rf, name, None), types.ModuleType)]
    assert not shadowed, shadowed
    assert rf.dropout.__module__ == "netcompiler.frontend.nn"


def test_transposed_conv2d_over_time_and_a_static_dim():
    freq = Dim(3, name="freq")
    batch = ragged_batch({"x": Input([batch_dim, TIME, freq, IN])}, LENGTHS)

    def call(model, x):
        return model(x, in_spatial_dims=[TIME, freq])[0]

    result, _ = run_both(lambda: rf.TransposedConv2d(IN, OUT, [2, 3], padding="valid", strides=[2, 1]), call, batch)
    w, b = result.params["filter"], result.params["bias"]  # [in, out, 2, 3]
    _, t_dim, f_dim, _ = result.dims["output"]
    assert t_dim.size is None and t_dim.description == "time*2"
    assert f_dim.size == 5  # 3 frames, stride 1, window 3: 3 + 2
    got = result.value("output", [batch_dim, t_dim, f_dim, OUT])
    x = batch.inputs["x"].value.astype(np.float64)
    for i, n in enumerate(LENGTHS[TIME]):
        want = np.zeros((2 * n, 5, 3))
        for t in range(n):
            for f in range(3):
                for kt in range(2):
                    for kf in range(3):
                        want[2 * t + kt, f + kf] += x[i, t, f] @ w[:, :, kt, kf]
        assert result.mask("output", [batch_dim, t_dim, f_dim, OUT])[i, :, 0, 0].sum() == 2 * n
        np.testing.assert_allclose(got[i, :2 * n], want + b, rtol=1e-5, atol=1e-5)


def test_conv3d_on_static_dims():
    a, b_, c = Dim(4, name="a"), Dim(3, name="b"), Dim(5, name="c")
    batch = ragged_batch({"x": Input([batch_dim, a, b_, c, IN])}, {TIME: [1, 1]})
    result, _ = run_both(lambda: rf.Conv3d(IN, OUT, 2, padding="valid"),
                         lambda m, x: m(x, in_spatial_dims=[a, b_, c])[0], batch)
    w, bias = result.params["filter"], result.params["bias"]
    assert w.shape == (3, 5, 2, 2, 2)
    x = batch.inputs["x"].value.astype(np.float64)
    got = result.outputs["output"]  # [B, 3, 2, 4, out]
    want = np.zeros((2, 3, 2, 4, 3)) + bias
    for i, j, k in np.ndindex(3, 2, 4):
        want[:, i, j, k] += np.einsum("nxyzc,ocxyz->no", x[:, i:i + 2, j:j + 2, k:k + 2], w)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_deepcopy_of_a_module_keeps_dims_and_draws_new_parameters():
    import copy

    rf.select_backend("tensorflow")
    to_numpy = get_backend("tensorflow").to_numpy
    layer = rf.Linear(IN, OUT)
    layer.bias.initial = np.array([1.0, 2.0, 3.0], "float32")
    layers = rf.ModuleList([copy.deepcopy(layer) for _ in range(2)])
    assert [n for n, _ in layers.named_parameters()] == ["0.weight", "0.bias", "1.weight", "1.bias"]
    for copied in layers:
        assert copied.in_dim is IN and copied.weight.dims == (IN, OUT) and copied.weight.raw is not layer.weight.raw
        np.testing.assert_array_equal(to_numpy(copied.bias.raw), [1.0, 2.0, 3.0])
    assert not np.allclose(to_numpy(layers[0].weight.raw), to_numpy(layers[1].weight.raw))
    assert copy.copy(IN) is IN and copy.deepcopy([IN])[0] is IN


WRONG_IN_DIM = {  # module -> how to call it on an input whose channels are the dim 'other' (not its in_dim 'in')
    "Linear": (lambda: rf.Linear(IN, OUT), lambda m, x: m(x)),
    "Conv1d": (lambda: rf.Conv1d(IN, OUT, 3, padding="same"), lambda m, x: m(x, in_spatial_dim=TIME)),
    "TransposedConv1d": (lambda: rf.TransposedConv1d(IN, OUT, 2, padding="valid"),
                         lambda m, x: m(x, in_spatial_dim=TIME)),
    "LayerNorm": (lambda: rf.LayerNorm(IN), lambda m, x: m(x)),
    "GroupNorm": (lambda: rf.GroupNorm(IN, num_groups=5), lambda m, x: m(x)),
    "BatchNorm": (lambda: rf.BatchNorm(IN), lambda m, x: m(x)),
    "LSTM": (lambda: rf.LSTM(IN, OUT),
             lambda m, x: m(x, state=m.default_initial_state(batch_dims=[batch_dim]), spatial_dim=TIME)),
}


@pytest.mark.parametrize("name", sorted(WRONG_IN_DIM))
def test_wrong_input_dim_names_the_module_and_both_dims(name):
    build, call = WRONG_IN_DIM[name]
    rf.select_backend("tensorflow")
    module = build()
    with rf.RunContext(get_backend("tensorflow")) as ctx:
        ctx.set_size(TIME, np.array([3, 2], "int32"))
        ctx.set_size(batch_dim, 2, size_dims=())
        x = rf.convert_to_tensor(np.zeros((2, 3, 5), "float32"), dims=[batch_dim, TIME, Dim(5, name="other")])
        with pytest.raises(ValueError, match=rf"<{name}.*expects an input with in_dim .*'in'.*'other'"):
            call(module, x)


def test_pooling_and_conv_name_a_missing_spatial_dim():
    rf.select_backend("tensorflow")
    conv = rf.Conv1d(IN, OUT, 3, padding="same")
    other_time = Dim(None, name="other-time")
    with rf.RunContext(get_backend("tensorflow")) as ctx:
        ctx.set_size(TIME, np.array([3, 2], "int32"))
        x = rf.convert_to_tensor(np.zeros((2, 3, 5), "float32"), dims=[batch_dim, TIME, IN])
        with pytest.raises(ValueError, match=r"<Conv1d.*expects an input with spatial dim .*'other-time'"):
            conv(x, in_spatial_dim=other_time)
        with pytest.raises(ValueError, match=r"pooling: the source .* has no spatial dim .*'other-time'"):
            rf.max_pool1d(x, pool_size=2, in_spatial_dim=other_time)


@pytest.mark.parametrize("backend", BACKENDS)
def test_initial_value_from_a_raw_tensor_of_either_backend(backend):
    import tensorflow as tf

    rf.select_backend(backend)
    b = get_backend(backend)
    p = rf.Parameter([OUT], "float32")
    p.initial = tf.constant([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(b.to_numpy(p.raw), [1.0, 2.0, 3.0])
    if HAVE_TORCH:
        import torch

        p.initial = torch.tensor([4.0, 5.0, 6.0], dtype=torch.float64)  # cast to the parameter's dtype
        np.testing.assert_array_equal(b.to_numpy(p.raw), [4.0, 5.0, 6.0])
        assert b.to_numpy(p.raw).dtype == np.float32
    counts = rf.Parameter([OUT], "int32", initial=[1, 2, 3])
    assert b.to_numpy(counts.raw).dtype == np.int32 and not counts.trainable and not b.is_trainable(counts.raw)


def test_transposed_conv_with_a_given_out_spatial_dim_records_its_sizes():
    batch = ragged_batch({"x": Input([batch_dim, TIME, IN])}, LENGTHS)
    upsampled = Dim(None, name="upsampled")

    def call(model, x):
        y, out = model(x, in_spatial_dim=TIME, out_spatial_dim=upsampled)
        assert out is upsampled
        return {"y": y, "sizes": rf.get_run_ctx().size(upsampled)}

    result, _ = run_both(lambda: rf.TransposedConv1d(IN, OUT, 3, padding="same", strides=3), call, batch)
    np.testing.assert_array_equal(result.outputs["sizes"], 3 * np.array(LENGTHS[TIME]))
    assert result.dims["y"] == (batch_dim, upsampled, OUT)


# --- attention --------------------------------------------------------------------------------------------------
def test_self_attention_matches_numpy_per_sequence():
    model_dim, keys, values = Dim(6, name="model"), Dim(4, name="keys"), Dim(6, name="values")
    batch = ragged_batch({"x": Input([batch_dim, TIME, model_dim])}, LENGTHS)

    def build():
        return rf.SelfAttention(model_dim, Dim(5, name="proj"), key_dim_total=keys, value_dim_total=values,
                                num_heads=2, att_dropout=0.0)

    result, _ = run_both(build, lambda m, x: m(x, axis=TIME), batch)
    p = result.params
    assert list(p) == ["qkv.weight", "qkv.bias", "proj.weight", "proj.bias"] and p["qkv.weight"].shape == (6, 14)
    proj = result.model.out_dim
    got = result.value("output", [batch_dim, TIME, proj])
    for i, n in enumerate(LENGTHS[TIME]):
        x = batch.inputs["x"].value[i, :n].astype(np.float64)
        qkv = (x @ p["qkv.weight"] + p["qkv.bias"]).reshape(n, 2, 7)  # per head: 2 query, 2 key, 3 value dims
        q, k, v = qkv[..., :2], qkv[..., 2:4], qkv[..., 4:]
        energy = np.einsum("thd,shd->hts", q, k) / np.sqrt(2)
        weights = np.exp(energy - energy.max(-1, keepdims=True))
        weights /= weights.sum(-1, keepdims=True)
        att = np.einsum("hts,shd->thd", weights, v).reshape(n, 6)
        np.testing.assert_allclose(got[i, :n], att @ p["proj.weight"] + p["proj.bias"], rtol=1e-5, atol=1e-5)


def test_dot_attention_dropout_is_only_in_training():
    rf.select_backend("tensorflow")
    b = get_backend("tensorflow")
    key, frames = Dim(2, name="key"), Dim(None, name="frames")
    for training in (False, True):
        with rf.RunContext(b, training=training) as ctx:
            ctx.set_size(frames, np.array([3, 1], "int32"))
            q = rf.convert_to_tensor(np.ones((2, 2), "float32"), dims=[batch_dim, key])
            k = rf.convert_to_tensor(np.zeros((2, 3, 2), "float32"), dims=[batch_dim, frames, key])
            v = rf.convert_to_tensor(np.ones((2, 3), "float32") * 6, dims=[batch_dim, frames])
            att = b.to_numpy(rf.dot_attention(q, k, v, key_dim=key, axis=frames, att_dropout=0.5).raw)
        if not training:
            np.testing.assert_allclose(att, [6.0, 6.0], rtol=1e-6)  # uniform weights over the valid frames
        else:
            assert set(np.round(att[:1], 4)) <= {0.0, 4.0, 8.0, 12.0}  # kept weights 1/3 scaled by 2
