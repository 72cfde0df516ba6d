"""The builder side of loop bodies (`netcompiler.loop_body`): "prev:" placeholders, ":i", inference until the
templates settle, step dependence; and `Network.all_params`."""

import pytest

from netcompiler.cli import dump_net_main
from netcompiler.errors import ConfigError, CycleError, UnknownReferenceError
from netcompiler.loop_body import MAX_ROUNDS, LoopBody, PrevLayer, StepIndexLayer
from netcompiler.network import Network
from netcompiler.tensor import Data, FeatureDim, batch_dim

BODY = {
    "out": {"class": "linear", "n_out": 5, "from": ["data:source", "prev:out"]},  # prev: of itself
    "mix": {"class": "linear", "n_out": 6, "from": ["prev:out", "base:pre"]},  # prev: of another layer
    "step": {"class": "copy", "from": ":i", "is_output_layer": True},
    "static": {"class": "linear", "n_out": 2, "from": "data:source", "is_output_layer": True},
    "sub": {"class": "subnetwork", "from": "data:source", "is_output_layer": True, "subnetwork": {
        "output": {"class": "linear", "n_out": 3, "from": ["data", "base:prev:out"]}}},
    "output": {"class": "combine", "kind": "add", "from": ["out", "out"]},
    "unused": {"class": "linear", "n_out": 2, "from": "mix", "is_output_layer": True},
}


def parent_network():
    """A network without time axis, as a loop body sees one frame: its layer "pre" is read via "base:"."""
    extern = {"data": Data("data", [batch_dim, FeatureDim("in", 4)])}
    return Network({"pre": {"class": "linear", "n_out": 3, "from": "data"},
                    "output": {"class": "copy", "from": "pre"}}, extern).build()


def guessing_seed(calls):
    """A seed that guesses a feature dim of size 7 (wrong on purpose) and records what it was asked."""
    def seed(path):
        calls.append(path)
        return Data(f"guess:{path}", [batch_dim, FeatureDim(f"guess:{path}", 7)])
    return seed


def make_body(net_dict, calls=None, parent=None):
    parent = parent if parent is not None else parent_network()
    source = Data("loop/source", [batch_dim, FeatureDim("source", 4)])
    return LoopBody(net_dict, {"source": source}, seed=guessing_seed([] if calls is None else calls),
                    parent=parent, prefix="loop/")


def output_dims(body):
    return {layer.name: layer.output.dims for layer in body.all_layers()}


def test_prev_templates_settle_in_two_rounds_and_keep_their_dims():
    calls = []
    body = make_body(BODY, calls).infer()
    assert body.rounds == 2
    assert calls == ["out"]  # one guess per "prev:" path, however often it is read
    out = body.layers["out"].output
    prev = body.prev_layers["out"]
    assert isinstance(prev, PrevLayer) and prev.of == "out" and prev.layer_class == "prev"
    assert prev.output.dims == out.dims and all(a is b for a, b in zip(prev.output.dims, out.dims))
    assert out.describe() == "[B, F|'loop/out:feature'(5)]"
    assert body.layers["mix"].output.describe() == "[B, F|'loop/mix:feature'(6)]"
    assert body.layers["sub"].output.describe() == "[B, F|'loop/sub/output:feature'(3)]"

    before, layers_before = output_dims(body), list(body.all_layers())
    body.rebuild()
    after = output_dims(body)
    assert set(after) == set(before)
    for name, dims in before.items():
        assert len(after[name]) == len(dims) and all(a is b for a, b in zip(after[name], dims)), name
    assert not any(a is b for a, b in zip(layers_before, body.all_layers()) if a.layer_class != "source")


def test_step_index_is_a_scalar_int32_inside_a_loop_body():
    body = make_body(BODY).infer()
    index = body.get_layer(":i", "step")
    assert isinstance(index, StepIndexLayer) and index is body.step_index
    assert (index.output.dims, index.output.dtype, index.output.name) == ((), "int32", ":i")
    assert body.layers["step"].output.describe() == "[]" and body.layers["step"].output.dtype == "int32"


def test_step_dependence():
    body = make_body(BODY).infer()
    expected = {"out": True, "mix": True, "step": True, "sub": True, "output": True, "unused": True,
                "static": False, "data:source": False}
    assert {name: body.step_dependent(name) for name in body.layers} == expected
    with pytest.raises(KeyError, match="loop/nope"):
        body.step_dependent("nope")


def test_prev_of_itself_is_no_cycle_but_a_real_cycle_is():
    body = make_body({"output": {"class": "combine", "kind": "add", "from": ["data:source", "prev:output"]}})
    body.seed = lambda path: Data("guess", [batch_dim, body.extern_data["source"].feature_dim])
    assert body.infer().rounds == 1  # a right guess settles at once (the template's name does not count)
    with pytest.raises(CycleError, match="loop/a -> loop/b -> loop/a"):
        make_body({"a": {"class": "linear", "n_out": 2, "from": ["b", "prev:a"]},
                   "b": {"class": "linear", "n_out": 2, "from": "a"},
                   "output": {"class": "copy", "from": "a"}}).infer()


def test_a_template_that_grows_every_step_is_named():
    body = make_body({"grow": {"class": "copy", "from": ["data:source", "prev:grow"]},
                      "output": {"class": "linear", "n_out": 2, "from": "grow"}})
    with pytest.raises(ConfigError) as info:
        body.infer()
    message = str(info.value)
    assert info.value.layer == "loop/grow" and message.startswith("layer 'loop/grow': ")
    assert "'prev:grow' keeps changing" in message and f"after {MAX_ROUNDS} rounds" in message
    assert body.rounds == MAX_ROUNDS


def test_prev_of_a_missing_layer_in_a_loop_body():
    with pytest.raises(UnknownReferenceError, match="refers to 'outt', which is not in the network"):
        make_body({"output": {"class": "linear", "n_out": 2, "from": ["data:source", "prev:outt"]}}).infer()


@pytest.mark.parametrize("ref, words", [
    ("prev:output", "'prev:' only works inside a recurrent loop body -- write 'output'"),
    (":i", "':i' is the step index of a recurrent loop body; it only works inside one"),
])
def test_prev_and_step_index_outside_a_loop_body_in_dump_net(tmp_path, capsys, ref, words):
    path = tmp_path / "broken.py"
    path.write_text('extern_data = {"data": {"dim": 3}}\n'
                    'network = {\n'
                    f'    "output": {{"class": "combine", "kind": "add", "from": ["data", "{ref}"]}},\n'
                    '}\n')
    assert dump_net_main([str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {path}:3: layer 'output': 'from' refers to"), err
    assert words in err and "Traceback" not in err


def test_all_params_names_are_layer_path_and_param():
    parent = Network({"pre": {"class": "linear", "n_out": 3, "from": "data"},
                      "sub": {"class": "subnetwork", "from": "pre", "subnetwork": {
                          "inner": {"class": "linear", "n_out": 2, "from": "data"},
                          "output": {"class": "copy", "from": "inner"}}},
                      "output": {"class": "copy", "from": "sub"}},
                     {"data": Data("data", [batch_dim, FeatureDim("in", 4)])}).build()
    names = [(name, layer.name, spec.sizes) for name, layer, spec in parent.all_params()]
    assert sorted(names) == [("pre/W", "pre", (4, 3)), ("pre/b", "pre", (3,)),
                             ("sub/inner/W", "sub/inner", (3, 2)), ("sub/inner/b", "sub/inner", (2,))]
    body = make_body(BODY, parent=parent).infer()
    assert sorted(name for name, _, _ in body.all_params()) == [
        "loop/mix/W", "loop/mix/b", "loop/out/W", "loop/out/b", "loop/static/W", "loop/static/b",
        "loop/sub/output/W", "loop/sub/output/b", "loop/unused/W", "loop/unused/b"]
