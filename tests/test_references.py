"""The one reference parser (`netcompiler.references`) and what the builder makes of each form."""

import pytest

from netcompiler.errors import InvalidOptionError, MalformedReferenceError, UnknownReferenceError
from netcompiler.network import build_from_dict
from netcompiler.references import (
    BASE, DATA, LAYER, PREV, STEP_INDEX, Reference, parse_reference, target_reference,
)

EXTERN = {"data": {"dim": 4}, "classes": {"dim": 3, "sparse": True}}


@pytest.mark.parametrize("text, expected", [
    ("x", Reference(LAYER, "x")),
    ("x/y/z", Reference(LAYER, "x", ("y", "z"))),
    ("data", Reference(DATA, "data")),
    ("data:classes", Reference(DATA, "classes")),
    ("base:x", Reference(BASE, inner=Reference(LAYER, "x"))),
    ("base:base:x/y", Reference(BASE, inner=Reference(BASE, inner=Reference(LAYER, "x", ("y",))))),
    ("base:prev:x", Reference(BASE, inner=Reference(PREV, "x"))),
    ("base:data:classes", Reference(BASE, inner=Reference(DATA, "classes"))),
    ("prev:x", Reference(PREV, "x")),
    ("prev:x/y", Reference(PREV, "x", ("y",))),
    (":i", Reference(STEP_INDEX)),
])
def test_each_form_parses_and_prints_back(text, expected):
    ref = parse_reference(text)
    assert ref == expected
    assert parse_reference(str(ref)) == ref
    assert str(ref) == (text if text != "data" else "data:data")


def test_only_plain_layer_references_are_build_order_dependencies():
    assert parse_reference("x/y").local_name == "x"
    assert [parse_reference(t).local_name for t in ("prev:x", "base:x", "data:x", ":i")] == [None] * 4
    assert parse_reference("prev:x/y").path == "x/y"


@pytest.mark.parametrize("text, words", [
    ("", ["it is empty"]),
    ("prev:", ["nothing follows 'prev:'"]),
    ("data:", ["nothing follows 'data:'"]),
    ("base:", ["nothing follows 'base:'"]),
    ("base:prev:", ["nothing follows 'prev:'"]),
    ("x//y", ["empty part"]),
    ("x/", ["empty part"]),
    ("la\tyer", ["control character"]),
    ("prev:base:x", ["'prev:' must be followed by a layer of the loop body"]),
    ("pref:x", ["unknown prefix 'pref:'", "did you mean 'prev:x'?"]),
    (":j", ["':i'"]),
])
def test_malformed_strings_name_the_option(text, words):
    with pytest.raises(MalformedReferenceError) as info:
        parse_reference(text, "from", "lin")
    message = str(info.value)
    assert message.startswith("layer 'lin': option 'from' has")
    for word in words:
        assert word in message, message


@pytest.mark.parametrize("value", [None, 3, ["x"], b"x"])
def test_non_strings_are_malformed(value):
    with pytest.raises(MalformedReferenceError, match="option 'reuse_params' must name a layer"):
        parse_reference(value, "reuse_params")
    assert issubclass(MalformedReferenceError, InvalidOptionError)


def test_targets():
    assert target_reference(None) == Reference(DATA, "classes")
    assert target_reference("classes") == Reference(DATA, "classes")
    assert target_reference("layer:x/y") == Reference(LAYER, "x", ("y",))
    assert target_reference("layer:base:x") == Reference(BASE, inner=Reference(LAYER, "x"))
    with pytest.raises(MalformedReferenceError, match="option 'target'"):
        target_reference("layer:")


def _error(net, cls):
    with pytest.raises(cls) as info:
        build_from_dict(net, EXTERN)
    return str(info.value)


def test_malformed_reference_in_a_network_names_layer_and_option():
    message = _error({"output": {"class": "linear", "n_out": 2, "from": ["data", "prev:"]}}, MalformedReferenceError)
    assert "layer 'output'" in message and "option 'from'" in message and "'prev:'" in message


def test_step_index_outside_a_loop_is_a_clear_error():
    message = _error({"output": {"class": "combine", "kind": "add", "from": ["data", ":i"]}}, UnknownReferenceError)
    assert "layer 'output'" in message
    assert "':i' is the step index of a recurrent loop body; it only works inside one" in message


def test_prev_outside_a_loop_is_a_clear_error():
    message = _error({"output": {"class": "combine", "kind": "add", "from": ["data", "prev:output"]}},
                     UnknownReferenceError)
    assert "layer 'output'" in message and "'prev:' only works inside a recurrent loop body" in message
    assert "write 'output'" in message


def test_sublayer_path_of_several_parts_resolves():
    net = build_from_dict({
        "outer": {"class": "subnetwork", "from": "data", "subnetwork": {
            "inner": {"class": "subnetwork", "from": "data", "subnetwork": {
                "lin": {"class": "linear", "n_out": 5, "from": "data"},
                "output": {"class": "copy", "from": "lin"}}},
            "output": {"class": "copy", "from": "inner"}}},
        "output": {"class": "copy", "from": "outer/inner/lin"}}, EXTERN)
    assert net.layers["output"].sources[0].name == "outer/inner/lin"
    assert net.layers["output"].output.dim == 5
    message = _error({"outer": {"class": "subnetwork", "from": "data", "subnetwork": {
        "output": {"class": "copy", "from": "data"}}},
        "output": {"class": "copy", "from": "outer/output/x"}}, UnknownReferenceError)
    assert "layer 'outer/output' (copy) has no sublayer 'x'" in message
