"""A `choice` with `"search": True` searches in every task, also in training and eval (RETURNN's min-WER
training: a second decoder that searches, sharing the parameters of the decoder trained with cross-entropy
through `reuse_params`, with `expected_loss` over its beam); without `search` a choice searches only when
the network is built for search."""

import math
import re

import numpy as np
import pytest

from loss_runner import value_and_gradients as gradients
from netcompiler.cli import compile_net_main
from netcompiler.config import Config
from netcompiler.emit.model import CompiledNetwork
from netcompiler.errors import ConfigError
from netcompiler.network import build_network
from test_losses_sequence import edit_distance, expected_loss_reference
from test_search import BACKENDS, EXTERN, decoder, greedy_labels

EXPECTED_LOSS = {"loss": "expected_loss", "target": "classes",
                 "loss_opts": {"loss": {"class": "edit_distance"}, "loss_kind": "error"}}


def training_model(backend, beam, **choice):
    """The decoder of test_search (its choice with `choice` options) in a network built for training."""
    net = decoder(beam, **choice)
    net["dec"].update(EXPECTED_LOSS)
    network = build_network(Config({"network": net, "extern_data": EXTERN}), search=False)
    model = CompiledNetwork(network, seed=3, backend=backend)
    rng = np.random.RandomState(5)
    for name in sorted(model.params):  # sharp distributions: the hypotheses differ from the targets
        var = model.params[name]
        model.backend.assign_raw(var, rng.randn(*tuple(var.shape)).astype("float32") * 2.0)
    return network, model


def batch():
    rng = np.random.RandomState(1)
    inputs = {"data": rng.randn(2, 4, 3).astype(np.float32), "classes": np.array([[1, 2, 3], [3, 3, 0]], np.int32)}
    lengths = {"data": np.array([4, 2], np.int32), "classes": np.array([3, 1], np.int32)}
    return inputs, lengths


@pytest.mark.parametrize("backend", BACKENDS)
def test_explicit_search_searches_in_training_greedy_with_beam_one(backend):
    network, model = training_model(backend, 1, search=True)
    assert network.layers["dec"].searches()
    inputs, lengths = batch()
    ctx = model.forward(inputs, lengths, training=True)
    rec = network.layers["dec"]
    out = model.backend.to_numpy(ctx.value(rec).raw).T  # [T, B] -> [B, T]
    sizes = model.backend.to_numpy(ctx.run.size(rec.output.time_dim).raw)
    x = inputs["data"]
    for b in range(2):
        greedy = greedy_labels(model, x[b, :lengths["data"][b]].mean(axis=0))
        assert sizes[b] == len(greedy) and out[b, :sizes[b]].tolist() == greedy
    assert any(out[b, :sizes[b]].tolist() != inputs["classes"][b, :lengths["classes"][b]].tolist() for b in range(2))


@pytest.mark.parametrize("search", [None, False])
def test_without_explicit_search_the_choice_is_the_target_in_training(search):
    net = decoder(3, **({} if search is None else {"search": search}))
    network = build_network(Config({"network": net, "extern_data": EXTERN}), search=False)
    assert not network.layers["dec"].searches()
    net = decoder(3, search=False)
    assert not build_network(Config({"network": net, "extern_data": EXTERN}), search=True).layers["dec"].searches()


@pytest.mark.parametrize("backend", BACKENDS)
def test_expected_loss_in_training_weights_the_beam_and_reaches_the_decoder(backend):
    network, model = training_model(backend, 3, search=True)
    inputs, lengths = batch()
    found = {}

    def loss_of():
        ctx = model.forward(inputs, lengths, training=True)
        (value,) = model.losses(ctx)
        found.update(ctx.search_results["dec"], ctx=ctx)
        return value.loss_sum
    value, grads = gradients(backend, model, loss_of)
    from netcompiler import frontend as rf
    from netcompiler.tensor import batch_dim
    with found["ctx"].run:
        labels = model.backend.to_numpy(rf.permute(found["values"]["output"], [batch_dim, found["time"]]).raw)
    hyp_lengths = model.backend.to_numpy(found["lengths"].raw)
    scores = np.asarray(model.backend.to_numpy(found["scores"].raw), np.float64)
    hyps = [labels[r, :hyp_lengths[r]].tolist() for r in range(6)]
    refs = [inputs["classes"][b, :lengths["classes"][b]].tolist() for b in range(2)]
    want = expected_loss_reference(hyps, scores, refs, 3, edit_distance)
    assert np.isfinite(value) and want != 0.0
    np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-6)
    for name in ("dec/rec/emb/W", "dec/rec/prob/W", "dec/rec/prob/b"):
        assert np.all(np.isfinite(grads[name])) and np.abs(grads[name]).sum() > 0, name


MWER_CONFIG = '''
num_symbols = 4
train = {"class": "CopyTaskDataset", "nsymbols": num_symbols, "minlen": 2, "maxlen": 4, "num_seqs": 24}
dev = {"class": "CopyTaskDataset", "nsymbols": num_symbols, "minlen": 2, "maxlen": 4, "num_seqs": 8,
       "fixed_random_seed": 1}
extern_data = {"data": {"dim": num_symbols, "sparse": True}, "classes": {"dim": num_symbols, "sparse": True}}


def unit(search):
    """The decoder's step; the searching one shares every parameter of the one trained with cross-entropy.
    (The softmax's size comes from its target: "prev:output" of the searching loop starts as the target's
    labels, else as the embedding's 8 features, which would not fit the shared embedding matrix [4, 8].)"""
    share = (lambda name: {"reuse_params": "base:output/" + name}) if search else (lambda name: {})
    return {
        "emb": {"class": "linear", "activation": None, "with_bias": False, "n_out": 8, "from": "prev:output",
                **share("emb")},
        "prob": {"class": "softmax", "target": "classes", "from": ["emb", "base:enc"], **share("prob"),
                 **({} if search else {"loss": "ce"})},
        "output": {"class": "choice", "beam_size": 3, "target": "classes", "from": "prob",
                   **({"search": True} if search else {})},
        "end": {"class": "compare", "kind": "greater_equal", "from": [":i", "base:enc_len"]},
    }


network = {
    "data_emb": {"class": "linear", "activation": None, "n_out": 6, "from": "data"},
    "enc": {"class": "reduce", "mode": "mean", "axes": "T", "from": "data_emb"},
    "enc_len": {"class": "length", "from": "data"},
    "output": {"class": "rec", "from": [], "target": "classes", "unit": unit(False)},
    "mwer": {"class": "rec", "from": [], "target": "classes", "max_seq_len": "max_len_from('base:data_emb')",
             "unit": unit(True), "loss": "expected_loss",
             "loss_opts": {"loss": {"class": "edit_distance"}, "loss_kind": "error"}},
}
batch_size = 200
max_seqs = 8
optimizer = {"class": "adam"}
learning_rate = 0.01
num_epochs = 2
'''


@pytest.mark.parametrize("backend", BACKENDS)
def test_min_wer_training_with_compile_net(backend, tmp_path, capsys):
    """A searching decoder sharing the ce decoder's parameters trains with expected_loss + ce: finite values
    in both epochs, and the shared parameters have no copy in the searching decoder."""
    path = tmp_path / "mwer.py"
    path.write_text(MWER_CONFIG + f"model = {str(tmp_path / 'model')!r}\nbackend = {backend!r}\n")
    assert compile_net_main([str(path)]) == 0
    out = capsys.readouterr().out
    epochs = [line for line in out.splitlines() if line.startswith("epoch ")]
    assert len(epochs) == 2, out
    for line in epochs:
        values = re.findall(r"(train|dev) mwer:expected_loss (\S+)", line)
        assert [k for k, _ in values] == ["train", "dev"], line
        assert all(math.isfinite(float(v)) for _, v in values), line
        assert math.isfinite(float(re.search(r"train output/prob:ce (\S+)", line).group(1)))
    assert "param output/rec/prob/W [14, 4] (56 shared)" in out  # the searching decoder's softmax shares it


@pytest.mark.parametrize("backend", BACKENDS)
def test_shared_parameters_get_the_expected_loss_gradient(backend, tmp_path):
    """Through reuse_params "base:output/prob" the expected loss of the searching decoder moves the parameters
    of the ce decoder (one parameter, two users)."""
    scope = {}
    exec(MWER_CONFIG, scope)
    config = Config({"network": scope["network"], "extern_data": scope["extern_data"]})
    network = build_network(config, search=False)
    model = CompiledNetwork(network, seed=3, backend=backend)
    assert sorted(model.params) == ["data_emb/W", "data_emb/b", "output/rec/emb/W", "output/rec/prob/W",
                                    "output/rec/prob/b"]
    rng = np.random.RandomState(2)
    for name in sorted(model.params):
        var = model.params[name]
        model.backend.assign_raw(var, rng.randn(*tuple(var.shape)).astype("float32") * 2.0)
    labels = np.array([[1, 2, 3, 1], [3, 2, 0, 0]], np.int32)
    inputs = {"data": labels, "classes": labels}
    lengths = {"data": np.array([4, 2], np.int32), "classes": np.array([4, 2], np.int32)}

    def loss_of():
        values = {v.name: v for v in model.losses(model.forward(inputs, lengths, training=True))}
        return values["mwer"].loss_sum
    value, grads = gradients(backend, model, loss_of)
    assert np.isfinite(value) and value != 0.0
    for name in ("output/rec/emb/W", "output/rec/prob/W", "output/rec/prob/b", "data_emb/W"):
        assert np.all(np.isfinite(grads[name])) and np.abs(grads[name]).sum() > 0, name


def attention_copy_with_min_wer(share=lambda name: "base:output/" + name):
    """configs/attention-copy.py plus a searching copy of its decoder that shares every parameter."""
    import copy
    import os
    scope = {}
    path = os.path.join(os.path.dirname(__file__), "..", "configs", "attention-copy.py")
    exec(open(path).read(), scope)
    unit = copy.deepcopy(scope["network"]["output"]["unit"])
    for name, d in unit.items():
        d.pop("loss", None)
        if d["class"] in ("linear", "softmax"):
            d["reuse_params"] = share(name)
    unit["output"]["search"] = True
    net = dict(scope["network"], mwer={"class": "rec", "from": [], "target": "classes", "unit": unit,
                                       "max_seq_len": "max_len_from('base:encoder')", **EXPECTED_LOSS})
    return Config({"network": net, "extern_data": scope["extern_data"]})


def test_an_attention_decoder_shares_its_parameters_with_its_searching_copy():
    """'prev:att' starts as a provisional guess: the shapes of shared parameters are checked once the loop's
    templates have settled, not on the guess."""
    network = build_network(attention_copy_with_min_wer(), search=False)
    assert network.layers["mwer"].searches() and not network.layers["output"].searches()
    model = CompiledNetwork(network, seed=1, backend="tensorflow")
    assert not any(name.startswith("mwer/") for name in model.params)
    assert "output/rec/state/W" in model.params


def test_a_shared_parameter_of_another_shape_is_still_refused_in_a_loop():
    with pytest.raises(ConfigError) as info:
        build_network(attention_copy_with_min_wer(
            lambda name: "base:output/output_prob" if name == "readout" else "base:output/" + name), search=False)
    assert "has shape [64, 10], this layer needs [224, 64]" in str(info.value) and "mwer/readout" in str(info.value)


def test_a_loss_inside_an_explicitly_searching_loop_is_noticed_as_not_computed():
    net = decoder(3, search=True)
    net["dec"].update(EXPECTED_LOSS)
    net["dec"]["unit"]["prob"].update({"loss": "ce", "target": "classes"})
    network = build_network(Config({"network": net, "extern_data": EXTERN}), search=False)
    assert any("dec/prob" in n and "'ce' is not computed" in n and "'search': True" in n for n in network.notices)
    model = CompiledNetwork(network, seed=3, backend="tensorflow")
    inputs, lengths = batch()
    assert [value.name for value in model.losses(model.forward(inputs, lengths, training=True))] == ["dec"]
