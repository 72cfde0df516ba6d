"""Loss emission (layers/losses.py): loss and error sums and frame counts against NumPy references computed per
sequence on a ragged batch with garbage in the padding; padding never changes a loss; the objective."""

import numpy as np
import pytest
import tensorflow as tf

from layer_harness import random_batch
from loss_runner import BACKENDS, compile_on, params_of, value_and_gradients
from loss_runner import loss_of as generic_loss_of
from netcompiler.emit.model import CompiledNetwork
from netcompiler.errors import ConfigError
from netcompiler.network import build_from_dict

K = 4  # classes of "classes"
EXTERN = {"data": {"dim": 6}, "classes": {"dim": K, "sparse": True}, "feats": {"dim": 6},
          "probs": {"dim": K}, "bits": {"dim": 6}}
LENGTHS = np.array([5, 3, 1], np.int32)


# --- running a network ----------------------------------------------------------------------------------------
def compile_net(net):
    network = build_from_dict(net, EXTERN)
    tf.random.set_seed(1)
    return network, CompiledNetwork(network)


def frame_batch(network, seed=0):
    """A ragged batch where every target key has the lengths of "data" (its padding holds garbage)."""
    inputs, lengths = random_batch(network, seed=seed)
    for key in lengths:
        lengths[key] = LENGTHS.copy()
    if "bits" in inputs:
        inputs["bits"] = (inputs["bits"] > 0).astype(np.float32)
    if "probs" in inputs:
        probs = np.exp(log_softmax(inputs["probs"].astype(np.float64))).astype(np.float32)
        inputs["probs"] = with_garbage({"probs": probs}, lengths, 50.0, 0)["probs"]
    return inputs, lengths


def loss_of(model, layer_name, inputs, lengths, training=False):
    """(loss_sum, error_sum or None, num_frames) of one layer's loss, as NumPy."""
    ctx = model.forward(inputs, lengths, training=training)
    layer = next(layer for layer in model.network.all_layers() if layer.name == layer_name)
    with ctx.run:
        target = ctx.value(layer.target_layer) if layer.target_layer is not None else None
        loss_sum, error_sum, frames = layer.loss.compute(ctx, ctx.value(layer), target)
    return float(loss_sum.raw), None if error_sum is None else float(error_sum.raw), float(frames.raw)


def sequences(x, lengths):
    return [x[b, :n] for b, n in enumerate(lengths)]


def linear_np(model, x, layer="output"):
    """The linear part of a layer from its parameters, in float64 (logits of a softmax)."""
    params = {name: var.numpy().astype(np.float64) for name, var in model.params.items()}
    return x.astype(np.float64) @ params[f"{layer}/W"] + params[f"{layer}/b"]


def log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def layer(cls, loss, n_out=K, **opts):
    return {"output": {"class": cls, "from": "data", "n_out": n_out, "loss": loss, **opts}}


# --- ce -------------------------------------------------------------------------------------------------------
def ce_reference(logits, target, sparse, smoothing=0.0, focal=0.0):
    """Summed cross entropy and frame errors of one sequence."""
    log_p = log_softmax(logits)
    t = np.eye(K)[target] if sparse else target
    dist = (1 - smoothing) * t + smoothing / (K - 1) * (1 - t) if smoothing else t
    losses = -(dist * log_p).sum(-1)
    if smoothing and sparse:  # RETURNN: minus the entropy of the smoothed target, so a perfect output gives 0
        losses += (dist * np.log(dist)).sum(-1)
    if focal:
        losses *= (1 - (t * np.exp(log_p)).sum(-1)) ** focal
    wanted = target if sparse else target.argmax(-1)
    return losses.sum(), (logits.argmax(-1) != wanted).sum()


CE_CASES = {
    "sparse": ({}, "classes"),
    "smoothing": ({"label_smoothing": 0.1}, "classes"),
    "smoothing-focal": ({"label_smoothing": 0.1, "focal_loss_factor": 2.0}, "classes"),
    "focal": ({"focal_loss_factor": 2.0}, "classes"),
    "dense": ({}, "probs"),
    "dense-smoothing-focal": ({"label_smoothing": 0.2, "focal_loss_factor": 1.5}, "probs"),
}


def ce_run(backend, net, seed=0):
    """(model, inputs, lengths, float64 parameters) of `net` on `backend`, with frame_batch's ragged batch."""
    network, model = compile_on(backend, net, EXTERN)
    inputs, lengths = frame_batch(network, seed)
    return model, inputs, lengths, params_of(model)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(CE_CASES))
def test_ce_matches_numpy(backend, name):
    opts, target = CE_CASES[name]
    model, inputs, lengths, params = ce_run(backend, layer("softmax", "ce", target=target, loss_opts=opts))
    loss_sum, error_sum, frames = generic_loss_of(model, "output", inputs, lengths)
    logits = sequences(inputs["data"] @ params["output/W"] + params["output/b"], LENGTHS)
    targets = sequences(inputs[target], LENGTHS)
    want = np.sum([ce_reference(z, t, target == "classes", opts.get("label_smoothing", 0.0),
                                opts.get("focal_loss_factor", 0.0)) for z, t in zip(logits, targets)], axis=0)
    np.testing.assert_allclose([loss_sum, error_sum], want, rtol=1e-5)
    assert frames == LENGTHS.sum()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_ce_gradient_is_softmax_minus_smoothed_target(backend, smoothing):
    """d loss / d logits = softmax - (smoothed) target on every valid frame, nothing from the padding: the sparse
    path never builds a one-hot target, so the gradient of its sum and gather is checked against the dense form."""
    net = layer("softmax", "ce", loss_opts={"label_smoothing": smoothing})
    model, inputs, lengths, params = ce_run(backend, net)
    _, grads = value_and_gradients(backend, model, lambda: model.losses(
        model.forward(inputs, lengths, training=False))[0].loss_sum)
    grad_b = grads["output/b"]
    want = np.zeros(K)
    for z, t in zip(sequences(inputs["data"] @ params["output/W"] + params["output/b"], LENGTHS),
                    sequences(inputs["classes"], LENGTHS)):
        hot = np.eye(K)[t]
        want += (np.exp(log_softmax(z)) - ((1 - smoothing) * hot + smoothing / (K - 1) * (1 - hot))).sum(0)
    np.testing.assert_allclose(grad_b, want, rtol=1e-4, atol=1e-6)


def test_ce_uses_recorded_logits_where_softmax_saturates():
    net = layer("softmax", "ce")
    net["copy"] = {"class": "copy", "from": "output", "loss": "ce"}  # probabilities only: log(max(p, eps))
    network, model = compile_net(net)
    model.params["output/W"].assign(model.params["output/W"] * 300.0)
    inputs, lengths = frame_batch(network)
    loss_sum, _, _ = loss_of(model, "output", inputs, lengths)
    logits = sequences(linear_np(model, inputs["data"]), LENGTHS)
    want = sum(ce_reference(z, t, True)[0] for z, t in zip(logits, sequences(inputs["classes"], LENGTHS)))
    assert want > 1000  # some target probabilities are 0 in float32
    np.testing.assert_allclose(loss_sum, want, rtol=1e-5)
    clipped, _, _ = loss_of(model, "copy", inputs, lengths)
    assert np.isfinite(clipped) and clipped < want


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("opts", [{}, {"label_smoothing": 0.1}, {"label_smoothing": 0.1, "focal_loss_factor": 2.0}])
def test_ce_of_probabilities_equals_ce_of_logits(backend, opts):
    net = layer("softmax", "ce", loss_opts=opts)
    net["copy"] = {"class": "copy", "from": "output", "loss": "ce", "loss_opts": opts}
    model, inputs, lengths, _ = ce_run(backend, net)
    np.testing.assert_allclose(generic_loss_of(model, "copy", inputs, lengths),
                               generic_loss_of(model, "output", inputs, lengths), rtol=1e-5)


def test_ce_lengths_of_output_and_target_must_agree():
    network, model = compile_net(layer("softmax", "ce"))
    inputs, lengths = frame_batch(network)
    lengths["classes"] = np.array([5, 2, 1], np.int32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="layer 'output': loss 'ce'.*target 'data:classes'"):
        loss_of(model, "output", inputs, lengths)


# --- mse, l1, mean_l1, bin_ce, as_is -----------------------------------------------------------------------------
def bin_ce_reference(z, t, pos_weight=1.0):
    """Per frame: the mean over features of the (weighted) binary cross entropy of logits z; frame errors."""
    log_sig, log_not_sig = -np.logaddexp(0, -z), -np.logaddexp(0, z)
    losses = -(pos_weight * t * log_sig + (1 - t) * log_not_sig).mean(-1)
    return losses.sum(), ((z > 0) != (t > 0.5)).mean(-1).sum()


def argmax_errors(y, t):
    """RETURNN's default frame error of a loss: frames whose output argmax is not the target's argmax."""
    return (y.argmax(-1) != t.argmax(-1)).sum()


DISTANCE_CASES = {
    "mse": (6, "feats", {}, lambda y, t: (((y - t) ** 2).mean(-1).sum(), argmax_errors(y, t))),
    "l1": (6, "feats", {}, lambda y, t: (np.abs(y - t).sum(), argmax_errors(y, t))),
    "mean_l1": (6, "feats", {}, lambda y, t: (np.abs(y - t).mean(-1).sum(), argmax_errors(y, t))),
    "l1-one-hot": (K, "classes", {}, lambda y, t: (np.abs(y - np.eye(K)[t]).sum(), argmax_errors(y, np.eye(K)[t]))),
    "mse-one-hot": (K, "classes", {},
                    lambda y, t: (((y - np.eye(K)[t]) ** 2).mean(-1).sum(), argmax_errors(y, np.eye(K)[t]))),
    "bin_ce": (6, "bits", {}, bin_ce_reference),
    "binary_ce": (6, "bits", {"pos_weight": 2.5}, lambda y, t: bin_ce_reference(y, t, 2.5)),
}


@pytest.mark.parametrize("name", list(DISTANCE_CASES))
def test_framewise_losses_match_numpy(name):
    n_out, target, opts, reference = DISTANCE_CASES[name]
    network, model = compile_net(layer("linear", name.split("-")[0], n_out=n_out, target=target, loss_opts=opts))
    inputs, lengths = frame_batch(network)
    loss_sum, error_sum, frames = loss_of(model, "output", inputs, lengths)
    outputs = sequences(linear_np(model, inputs["data"]), LENGTHS)
    sums = [reference(y, t) for y, t in zip(outputs, sequences(inputs[target], LENGTHS))]
    np.testing.assert_allclose(loss_sum, sum(s[0] for s in sums), rtol=1e-5)
    if sums[0][1] is None:
        assert error_sum is None
    else:
        np.testing.assert_allclose(error_sum, sum(s[1] for s in sums), rtol=1e-5)
    assert frames == LENGTHS.sum()


def test_as_is_sums_the_output_over_valid_frames():
    network, model = compile_net(layer("linear", "as_is", n_out=2, activation="relu"))
    inputs, lengths = frame_batch(network)
    loss_sum, error_sum, frames = loss_of(model, "output", inputs, lengths)
    want = sum(np.maximum(y, 0).sum() for y in sequences(linear_np(model, inputs["data"]), LENGTHS))
    np.testing.assert_allclose(loss_sum, want, rtol=1e-5)
    assert error_sum is None and frames == LENGTHS.sum()


# --- ctc ------------------------------------------------------------------------------------------------------
def ctc_nll(log_probs, labels):
    """-log p(labels | x) by the CTC forward algorithm (blank = the last class), in log space."""
    blank = log_probs.shape[1] - 1
    ext = [blank]
    for label in labels:
        ext += [label, blank]
    alpha = np.full(len(ext), -np.inf)
    alpha[0] = log_probs[0, blank]
    if len(ext) > 1:
        alpha[1] = log_probs[0, ext[1]]
    for t in range(1, len(log_probs)):
        prev = alpha.copy()
        for s in range(len(ext)):
            terms = [prev[s]] + ([prev[s - 1]] if s >= 1 else [])
            if s >= 2 and ext[s] != blank and ext[s] != ext[s - 2]:
                terms.append(prev[s - 2])
            alpha[s] = np.logaddexp.reduce(terms) + log_probs[t, ext[s]]
    return -np.logaddexp.reduce(alpha[-2:])


def greedy_decode(log_probs):
    best = log_probs.argmax(-1)
    blank = log_probs.shape[1] - 1
    return [int(c) for i, c in enumerate(best) if c != blank and (i == 0 or c != best[i - 1])]


def edit_distance(a, b):
    row = np.arange(len(b) + 1)
    for i, x in enumerate(a, 1):
        prev, row = row, np.concatenate([[i], np.zeros(len(b), int)])
        for j, y in enumerate(b, 1):
            row[j] = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (x != y))
    return row[-1]


CTC_LABELS = np.array([[1, 1, 3, 0, 2, 2], [2, 0, 0, 1, 3, 3], [3, 1, 2, 2, 0, 1]], np.int32)


def ctc_setup(loss_opts=None, label_lengths=(3, 2, 1)):
    network, model = compile_net(layer("softmax", "ctc", n_out=K + 1, loss_opts=loss_opts or {}))
    inputs, lengths = frame_batch(network)
    inputs["classes"] = CTC_LABELS.copy()
    lengths["classes"] = np.array(label_lengths, np.int32)
    log_probs = [log_softmax(z) for z in sequences(linear_np(model, inputs["data"]), LENGTHS)]
    return model, inputs, lengths, log_probs


def ctc_reference(log_probs, labels):
    return (sum(ctc_nll(lp, y) for lp, y in zip(log_probs, labels)),
            sum(edit_distance(greedy_decode(lp), y) for lp, y in zip(log_probs, labels)))


def test_ctc_matches_numpy_forward_algorithm():
    model, inputs, lengths, log_probs = ctc_setup({"beam_width": 1})
    loss_sum, error_sum, frames = loss_of(model, "output", inputs, lengths)
    labels = sequences(CTC_LABELS, lengths["classes"])
    want_loss, want_errors = ctc_reference(log_probs, labels)
    np.testing.assert_allclose(loss_sum, want_loss, rtol=1e-5)
    assert error_sum == want_errors and frames == 6
    # greedy decoding in training, whatever the beam width
    assert loss_of(model, "output", inputs, lengths, training=True)[1] == want_errors
    _, beam_errors, _ = loss_of(model, "output", inputs, lengths)  # beam search of width 100
    assert 0 <= beam_errors <= 6


def test_ctc_collapse_repeated_and_clip_target_len():
    opts = {"target_collapse_repeated": True, "auto_clip_target_len": True, "beam_width": 1}
    model, inputs, lengths, log_probs = ctc_setup(opts, label_lengths=(6, 4, 3))
    loss_sum, error_sum, frames = loss_of(model, "output", inputs, lengths)
    # clipped to the output lengths less one (4, 2, 0; as RETURNN), then collapsed
    labels = [[1, 3, 0], [2, 0], []]
    want_loss, want_errors = ctc_reference(log_probs, labels)
    np.testing.assert_allclose(loss_sum, want_loss, rtol=1e-5)
    assert error_sum == want_errors and frames == 13  # normalised by the given target lengths


def test_ctc_in_log_space_output():
    net = layer("linear", "ctc", n_out=K + 1, activation="log_softmax",
                loss_opts={"output_in_log_space": True, "beam_width": 1})
    network, model = compile_net(net)
    inputs, lengths = frame_batch(network)
    inputs["classes"] = CTC_LABELS.copy()
    lengths["classes"] = np.array([3, 2, 1], np.int32)
    log_probs = [log_softmax(z) for z in sequences(linear_np(model, inputs["data"]), LENGTHS)]
    want = ctc_reference(log_probs, sequences(CTC_LABELS, lengths["classes"]))
    np.testing.assert_allclose(loss_of(model, "output", inputs, lengths)[:2], want, rtol=1e-5)


# --- padding, graph mode, objective, options -----------------------------------------------------------------------
PADDING_NETS = {
    "ce": (layer("softmax", "ce"), {}),
    "mse": (layer("linear", "mse", n_out=6, target="feats"), {}),
    "bin_ce": (layer("linear", "bin_ce", n_out=6, target="bits"), {}),
    "ctc": (layer("softmax", "ctc", n_out=K + 1, loss_opts={"beam_width": 1}), {"classes": (3, 2, 1)}),
}


def with_garbage(inputs, lengths, float_value, int_value):
    out = {}
    for key, x in inputs.items():
        x = x.copy()
        for b, n in enumerate(lengths[key]):
            x[b, n:] = float_value if x.dtype.kind == "f" else int_value
        out[key] = x
    return out


@pytest.mark.parametrize("name", list(PADDING_NETS))
def test_padding_garbage_never_changes_a_loss(name):
    net, label_lengths = PADDING_NETS[name]
    network, model = compile_net(net)
    inputs, lengths = frame_batch(network)
    if name == "ctc":
        inputs["classes"] = CTC_LABELS.copy()
    for key, value in label_lengths.items():
        lengths[key] = np.array(value, np.int32)
    results = [loss_of(model, "output", with_garbage(inputs, lengths, value, int_value), lengths)
               for value, int_value in ((0.0, 0), (1e4, K - 1), (np.nan, 99))]
    for result in results[1:]:
        np.testing.assert_allclose(np.array(result, float), np.array(results[0], float), rtol=1e-6)


def test_losses_trace_once_in_graph_mode():
    net = layer("softmax", "ctc", n_out=K + 1, loss_opts={"beam_width": 3})
    net["ce"] = {"class": "softmax", "from": "data", "n_out": K, "loss": "ce"}
    network, model = compile_net(net)

    @tf.function(input_signature=list(model.input_signature(model.network_input_keys())))
    def losses(inputs, lengths):
        ctx = model.forward(inputs, lengths, training=False)
        return [(v.loss_sum, v.error_sum, v.num_frames) for v in model.losses(ctx)]

    inputs, lengths = frame_batch(network)
    inputs["classes"] = np.array([[0, 1, 2, 3, 0, 1], [1, 2, 3, 0, 1, 2], [2, 3, 0, 1, 2, 3]], np.int32)
    got = losses(inputs, lengths)  # ctc: as many labels as frames, no repeats: one path each
    ctx = model.forward(inputs, lengths, training=False)
    eager = [(v.loss_sum, v.error_sum, v.num_frames) for v in model.losses(ctx)]
    np.testing.assert_allclose(np.array(got, float), np.array(eager, float), rtol=1e-5)
    lengths["classes"] = np.array([4, 3, 1], np.int32)  # ce pairs 5 output frames with 4 target frames
    message = r"layer \W*ce\W*: loss \W*ce\W*: the lengths of the output"  # quotes come escaped from the graph
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        losses(inputs, lengths)
    assert losses.experimental_get_tracing_count() == 1


def test_objective_sums_scaled_losses_normalising_only_where_asked():
    net = layer("softmax", "ce", loss_scale=0.5)
    net["reg"] = {"class": "linear", "from": "data", "n_out": 6, "loss": "mse", "target": "feats",
                  "loss_opts": {"scale": 2.0}}
    net["norm"] = {"class": "linear", "from": "data", "n_out": 6, "loss": "l1", "target": "feats",
                   "loss_opts": {"custom_norm_factor": 0.25}}
    net["mean"] = {"class": "linear", "from": "data", "n_out": 6, "loss": "l1", "target": "feats",
                   "loss_opts": {"use_normalized_loss": True}}
    network, model = compile_net(net)
    inputs, lengths = frame_batch(network)
    values = {v.name: v for v in model.losses(model.forward(inputs, lengths, training=False))}
    assert float(values["norm"].num_frames) == 4.0
    want = (0.5 * float(values["output"].loss_sum) + 2.0 * float(values["reg"].loss_sum)
            + float(values["norm"].loss_sum) * 0.25
            + float(values["mean"].loss_sum) / float(values["mean"].num_frames))
    ctx = model.forward(inputs, lengths, training=False)
    np.testing.assert_allclose(float(model.objective(model.losses(ctx), ctx)), want, rtol=1e-6)
    assert float(values["output"].num_frames) == float(values["reg"].num_frames) == LENGTHS.sum()


def test_objective_adds_l2_of_the_layers_that_set_it():
    """RETURNN's L2: the layer's factor times the sum of squares of all its parameters (2 * tf.nn.l2_loss), added
    to the objective; layers without L2 add nothing."""
    net = layer("softmax", "ce")
    net["hidden"] = {"class": "linear", "from": "data", "n_out": 5, "activation": "tanh", "L2": 0.01}
    net["other"] = {"class": "linear", "from": "data", "n_out": 5, "loss": "mse", "target": "feats", "L2": 0.0}
    net["output"]["from"] = "hidden"
    net["other"]["n_out"] = 6
    network, model = compile_net(net)
    inputs, lengths = frame_batch(network)
    ctx = model.forward(inputs, lengths, training=False)
    values = model.losses(ctx)
    squares = sum(float(np.sum(np.square(model.params[name].numpy()))) for name in ("hidden/W", "hidden/b"))
    want = sum(float(v.loss_sum) for v in values) + 0.01 * squares
    np.testing.assert_allclose(float(model.objective(values, ctx)), want, rtol=1e-6)


def test_a_loss_with_scale_0_is_left_out_of_the_objective():
    """As in RETURNN ("scale 0 means to not use this loss"): its value is reported but not added, so a NaN there
    leaves the objective finite (a multiplication by 0 would not)."""
    net = layer("softmax", "ce")
    net["other"] = {"class": "linear", "from": "data", "n_out": 6, "loss": "mse", "target": "feats",
                    "loss_scale": 0.0}
    network, model = compile_net(net)
    inputs, lengths = frame_batch(network)
    inputs["feats"][0, 0, 0] = np.nan
    ctx = model.forward(inputs, lengths, training=False)
    values = {v.name: v for v in model.losses(ctx)}
    assert np.isnan(float(values["other"].loss_sum))
    np.testing.assert_allclose(float(model.objective(list(values.values()), ctx)),
                               float(values["output"].loss_sum), rtol=1e-6)


def test_error_names():
    from netcompiler.loss_base import loss_classes

    names = {name: cls.error_name for name, cls in loss_classes().items()}
    expected = {"ce": "fer", "bin_ce": "fer", "binary_ce": "fer", "ctc": "ler", "mse": "fer", "l1": "fer",
                "mean_l1": "fer", "as_is": None, "frontend_marked": None}
    assert {name: names.get(name, "missing") for name in expected} == expected


@pytest.mark.parametrize("net, words", [
    (layer("softmax", "ce", loss_scale=2.0, loss_opts={"scale": 3.0}), ["'loss_scale' 2.0", "'scale' 3.0"]),
    (layer("softmax", "ce", loss_opts={"custom_norm_factor": 0}), ["'custom_norm_factor' must be positive"]),
    (layer("softmax", "ctc", n_out=K + 1, loss_opts={"ctc_opts": {"x": 1}}), ["'ctc_opts'", "not supported"]),
    (layer("softmax", "ce", loss_opts={"label_smoothing": 1.5}), ["layer 'output'", "'label_smoothing'",
                                                                  "[0, 1), not 1.5", "e.g. 0.1"]),
    (layer("softmax", "ce", loss_opts={"label_smoothing": -0.1}), ["'label_smoothing' must be in [0, 1)"]),
])
def test_option_errors(net, words):
    with pytest.raises(ConfigError) as info:
        build_from_dict(net, EXTERN)
    for word in words:
        assert word in str(info.value)


def test_label_smoothing_needs_two_classes():
    net = layer("softmax", "ce", n_out=1, target="one", loss_opts={"label_smoothing": 0.1})
    with pytest.raises(ConfigError, match="layer 'output'.*'label_smoothing' spreads over the other classes, and "
                                          "the output has 1"):
        build_from_dict(net, {**EXTERN, "one": {"dim": 1, "sparse": True}})
