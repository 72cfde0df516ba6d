"""Property: a mutated shipped config either builds (and dumps as text, JSON and Graphviz), or fails with a
ConfigError that names a layer (or the network / config) -- never with any other exception.

Each example takes one shipped config's network (+ its extern_data, or num_inputs/num_outputs) and applies
1-3 mutations. A mutation is a plain tuple (kind, a, b, value): `a` and `b` pick targets by index (modulo
the number of candidates), so an example can be written down with `@example` and replayed exactly.
Mutations change the structure (delete, rename, swap, cycles, classes) and the values: huge integers, NaN and
inf, wrong types, bad axis strings, layer names with unicode and control characters or written like
references, deep nesting (the network wrapped in up to 250 subnetworks), and top-level settings of the table
of config keys.

Examples per run: NETCOMPILER_FUZZ_EXAMPLES (default 300; CI sets more).
"""

import glob
import os
import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from netcompiler.config import KEY_KINDS, Config, load_config
from netcompiler.dump import format_dot, format_json, format_text
from netcompiler.errors import ConfigError
from netcompiler.layer_base import registered_layer_classes
from netcompiler.network import build_network
from netcompiler.network_schedule import NetworkSchedule
from netcompiler.tensor import FeatureDim, SpatialDim

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

def _defines_network(path):
    with open(path, encoding="utf-8") as f:
        return re.search(r"(?m)^network\s*=", f.read()) is not None


# the layer-dict configs (a frontend config defines get_model instead: nothing here to mutate)
CONFIG_NAMES = sorted(os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "configs", "*.py"))
                      if _defines_network(p))
EXAMPLES = int(os.environ.get("NETCOMPILER_FUZZ_EXAMPLES", "300"))
SETTING_KEYS = sorted(KEY_KINDS)
WEIRD_NAMES = ["data", "data:x", "a\x00b", "a\nb", "tab\tbed", "", " ", "é", "🙂layer", "a/b", "base:x", "prev:x",
               ":i", "x" * 300, "\u202eevil", "output "]
INPUT_KEYS = ("extern_data", "num_inputs", "num_outputs")
LAYER_CLASSES = sorted(name for name in registered_layer_classes() if name)

_loaded = {}


def shipped(name):
    """{"network": ..., "extern_data"/"num_inputs"/"num_outputs": ...} of a shipped config (loaded once)."""
    if name not in _loaded:
        config = load_config(os.path.join(ROOT, "configs", name))
        _loaded[name] = {key: config.values[key] for key in ("network",) + INPUT_KEYS if key in config.values}
    return _loaded[name]


# --- functional updates of nested dicts / lists / tuples (leaves, such as Dims, are shared) -------------
def copy_tree(value):
    if isinstance(value, dict):
        return {k: copy_tree(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_tree(v) for v in value]
    if isinstance(value, tuple):
        return tuple(copy_tree(v) for v in value)
    return value


def get_at(tree, path):
    for key in path:
        tree = tree[key]
    return tree


def _replace_child(container, key, new):
    if isinstance(container, dict):
        result = dict(container)
        result[key] = new
        return result
    items = list(container)
    items[key] = new
    return type(container)(items) if isinstance(container, tuple) else items


def update_at(tree, path, change):
    """`tree` with the container at path[:-1] replaced by change(container, path[-1])."""
    if len(path) == 1:
        return change(tree, path[0])
    return _replace_child(tree, path[0], update_at(tree[path[0]], path[1:], change))


def set_at(tree, path, value):
    return update_at(tree, path, lambda container, key: _replace_child(container, key, value))


def delete_at(tree, path):
    def change(container, key):
        if isinstance(container, dict):
            return {k: v for k, v in container.items() if k != key}
        items = [v for i, v in enumerate(container) if i != key]
        return tuple(items) if isinstance(container, tuple) else items
    return update_at(tree, path, change)


def rename_at(tree, path, new_key):
    def change(container, key):
        if not isinstance(container, dict):
            return container
        return {(new_key if k == key else k): v for k, v in container.items()}
    return update_at(tree, path, change)


def slots(tree, prefix=()):
    """Paths to every value inside the tree, below the top-level entries ("network", "extern_data", ...)."""
    found = []
    items = tree.items() if isinstance(tree, dict) else enumerate(tree) if isinstance(tree, (list, tuple)) else []
    for key, value in items:
        path = prefix + (key,)
        if len(path) > 1:
            found.append(path)
        found.extend(slots(value, path))
    return found


def near_miss(word, variant):
    """A misspelling of `word`: drop, double or swap characters, or change the case."""
    word = str(word)
    if not word:
        return "x"
    i = variant % len(word)
    kind = (variant // len(word)) % 4
    if kind == 0 and len(word) > 1:
        return word[:i] + word[i + 1:]
    if kind == 1:
        return word[:i] + word[i] + word[i:]
    if kind == 2 and len(word) > 1:
        j = (i + 1) % len(word)
        chars = list(word)
        chars[i], chars[j] = chars[j], chars[i]
        swapped = "".join(chars)
        if swapped != word:
            return swapped
    return word.upper() if word.upper() != word else word + "_"


def dependents_of(network, name):
    """Layers that (transitively) read `name` via a string/list "from"."""
    readers = {}
    for layer, d in network.items():
        sources = d.get("from", "data") if isinstance(d, dict) else []
        sources = [sources] if isinstance(sources, str) else list(sources) if isinstance(sources, (list, tuple)) else []
        for src in sources:
            if isinstance(src, str):
                readers.setdefault(src.split("/")[0], []).append(layer)
    seen, todo = [], [name]
    while todo:
        for reader in readers.get(todo.pop(), []):
            if reader not in seen:
                seen.append(reader)
                todo.append(reader)
    return seen


def materialise(value):
    """Turns the value tokens that stand for fresh objects into those objects."""
    if value == "$spatial-dim":
        return SpatialDim("mutation-time")
    if value == "$feature-dim":
        return FeatureDim("mutation-feature", 7)
    return value


# --- the mutations --------------------------------------------------------------------------------------
def mutate(tree, mutation):
    kind, a, b, value = mutation
    network = tree.get("network")
    layers = list(network) if isinstance(network, dict) else []
    all_slots = slots(tree)
    option_slots = [p for p in all_slots if p[0] == "network" and len(p) == 3]
    if kind == "delete_key" and all_slots:
        return delete_at(tree, all_slots[a % len(all_slots)])
    if kind == "rename_key" and all_slots:
        path = all_slots[a % len(all_slots)]
        return rename_at(tree, path, near_miss(path[-1], b))
    if kind == "swap_values" and option_slots:
        first, second = option_slots[a % len(option_slots)], option_slots[b % len(option_slots)]
        x, y = get_at(tree, first), get_at(tree, second)
        return set_at(set_at(tree, first, y), second, x)
    if kind == "set_value" and all_slots:
        return set_at(tree, all_slots[a % len(all_slots)], materialise(value))
    if kind == "set_option" and option_slots:
        return set_at(tree, option_slots[a % len(option_slots)], materialise(value))
    if not layers:
        return tree
    layer = layers[a % len(layers)]
    d = network[layer]
    if kind == "delete_layer":
        return delete_at(tree, ("network", layer))
    if not isinstance(d, dict):
        return tree
    if kind == "retarget_ref":
        targets = layers + ["data", "data:classes", "data:nope", "base:" + layer, "prev:" + layer,
                            near_miss(layer, b), layer + "/0", "output/1", ""]
        target = targets[b % len(targets)]
        sources = d.get("from", "data")
        if isinstance(sources, (list, tuple)) and sources:
            return set_at(tree, ("network", layer, "from"), list(sources)[:-1] + [target])
        return set_at(tree, ("network", layer, "from"), target)
    if kind == "add_cycle":
        downstream = dependents_of(network, layer) or layers
        other = downstream[b % len(downstream)]
        sources = d.get("from", "data")
        sources = [sources] if isinstance(sources, str) else list(sources) if isinstance(sources, (list, tuple)) \
            else []
        return set_at(tree, ("network", layer, "from"), sources + [other])
    if kind == "change_class":
        return set_at(tree, ("network", layer, "class"), LAYER_CLASSES[b % len(LAYER_CLASSES)])
    if kind == "rename_layer":
        return rename_at(tree, ("network", layer), WEIRD_NAMES[b % len(WEIRD_NAMES)])
    if kind == "nest":  # done by `build`, so that the other mutations walk a shallow tree; deep ones are rare
        return dict(tree, **{NEST: 1 + b % 250 if b % 8 == 0 else 1 + b % 4})
    if kind == "set_setting":
        return dict(tree, **{SETTING_KEYS[b % len(SETTING_KEYS)]: materialise(value)})
    return tree


NEST = "$nest"
"""Top-level entry of a mutated tree: how many subnetworks `build` wraps the network in."""


def nested(network, depth):
    """`network` as the inner network of `depth` nested subnetwork layers named "output"."""
    for _ in range(depth):
        network = {"output": {"class": "subnetwork", "from": "data", "subnetwork": network}}
    return network


VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.integers(-10 ** 6, 10 ** 6),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["T", "F", "B", "spatial", "except_time", "except_batch", "stag:mel", "stag:time", "dim:40",
                     "dim:7", "*", "T?", "BT", "lstm", "linear", "relu", "same", "valid", "max", "add", "ce",
                     "classes", "data", "data:classes", "output", "layer:output", "$spatial-dim", "$feature-dim"]),
    # bad axis strings
    st.sampled_from(["T+1", "stag:", "dim:", "dim:-1", "dim:x", "spatial:99", "spatial:-9", "F|T", "B?", "T:0",
                     "static:0", "stag:\x00", "t", "f", "batch", "time", "feature", "dim:99999999999999999999"]),
    # huge and edge integers, as values and inside lists
    st.sampled_from([2 ** 31, 2 ** 63 - 1, 2 ** 63, 2 ** 64, -2 ** 63 - 1, 10 ** 30, 10 ** 5000, -10 ** 5000]),
    st.lists(st.sampled_from([2 ** 63, 10 ** 5000, 0, -1, 3]), min_size=1, max_size=3),
    # wrong types
    st.sampled_from([b"bytes", frozenset({1}), object(), complex(1, 2), Ellipsis, print, (lambda: 1), type]),
    # unicode and control characters
    st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=6),
    st.sampled_from(WEIRD_NAMES),
    st.text(max_size=6),
    st.lists(st.one_of(st.none(), st.integers(-2, 4), st.sampled_from(["data", "T", "F", "output"])), max_size=3),
    st.lists(st.integers(-2, 4), max_size=3).map(tuple),
    st.dictionaries(st.sampled_from(["T", "F", "dim", "sparse", "label_smoothing", "n_out", "x"]),
                    st.one_of(st.none(), st.integers(-2, 8), st.booleans(), st.sampled_from(["T", "data"])),
                    max_size=2),
)

MUTATION_KINDS = ["delete_key", "rename_key", "swap_values", "set_value", "set_option", "set_option",
                  "retarget_ref", "delete_layer", "add_cycle", "change_class", "rename_layer", "nest", "set_setting"]
MUTATIONS = st.tuples(st.sampled_from(MUTATION_KINDS), st.integers(0, 10 ** 4), st.integers(0, 10 ** 4), VALUES)


def prepared(tree):
    """A fresh copy of the mutated tree, its network nested as the mutations asked (what `build` builds)."""
    tree = copy_tree(tree)
    depth = tree.pop(NEST, 0)
    if depth and isinstance(tree.get("network"), dict):
        tree["network"] = nested(tree["network"], depth)
    return tree


def build(tree):
    """Builds and dumps `tree` (a `prepared` one); a ConfigError is returned, anything else raises."""
    config = Config(tree)
    try:
        config.check_refused()  # and the notices above: the table of keys reads any value
        network = build_network(config)
    except ConfigError as exc:
        return exc
    format_text(network)
    format_json(network)
    format_dot(network)
    return None


def check_message(exc, tree):
    message = str(exc)
    assert message, type(exc).__name__
    assert "\n" not in message, f"a multi-line error message: {message!r}"
    assert exc.layer is not None or exc.subject is not None, f"the message names no layer: {message!r}"
    if exc.subject is None:
        assert f"layer '{exc.layer}'" in message, message
        network = tree.get("network")
        top = exc.layer.split("/")[0]
        assert top.startswith("data") or (isinstance(network, dict) and top in network), (
            f"the message names layer {exc.layer!r}, which the network does not have: {message!r}")
    assert len(message) < 20000, f"a message of {len(message)} characters"


# Crashes found by this test (see the report; each is a bug in netcompiler, not in the test):
# extern_data "dim" that is not a positive int -> ValueError from Dim()
@example(name="transformer-enc.py", mutations=[("set_value", 254, 0, -1)])
# extern_data "dims" that is not a list -> TypeError
@example(name="custom-dims.py", mutations=[("set_value", 34, 0, 0)])
# extern_data "sparse_dim" that is not a Dim -> AttributeError in the ce loss check
@example(name="custom-dims.py", mutations=[("set_value", 42, 0, "max")])
# linear "out_dim" that the input already has (here the time Dim) -> ValueError from Data()
@example(name="custom-dims.py", mutations=[("swap_values", 18, 12, None)])
# linear "out_dim" that is dynamic -> TypeError in ParamSpec.num_elements (dump)
@example(name="custom-dims.py", mutations=[("set_option", 22, 0, None), ("set_option", 21, 0, "$spatial-dim")])
# negative "n_out" -> ValueError from Dim()
@example(name="asr-conv-blstm.py", mutations=[("set_option", 67, 0, -3)])
# an integer of 5000 digits as a layer's entry: every message that printed it raised ValueError (4300-digit limit)
@example(name="demo-12ax-lstm.py", mutations=[("set_value", 0, 0, 10 ** 5000)])
# num_outputs that is neither an int nor a dict -> AttributeError
@example(name="12ax-loop-lstm.py", mutations=[("set_setting", 0, SETTING_KEYS.index("num_outputs"), frozenset({1}))])
# an int64 overflow in a layer with a control character in its name: the name must be refused first
@example(name="12ax-loop-lstm.py", mutations=[("set_value", 1, 0, 2 ** 63), ("rename_layer", 0, 2, None)])
# a num_outputs ndim of 2**63 - 1 -> MemoryError (a shape tuple of that many axes)
@example(name="returnn-12ax-native-lstm.py", mutations=[("set_value", 159, 3477, 2 ** 63 - 1),
                                                      ("swap_values", 10000, 231, 3.805920626499575e+16),
                                                      ("delete_key", 1332, 617, "a/b")])
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(CONFIG_NAMES), mutations=st.lists(MUTATIONS, min_size=1, max_size=3))
def test_mutated_configs_fail_only_with_config_errors(name, mutations):
    tree = copy_tree(shipped(name))
    for mutation in mutations:
        tree = mutate(tree, mutation)
    tree = prepared(tree)
    error = build(tree)
    if error is not None:
        check_message(error, tree)


def test_mutations_do_mutate():
    tree = shipped("asr-conv-blstm.py")
    assert mutate(tree, ("delete_layer", 0, 0, None))["network"].keys() != tree["network"].keys()
    cyclic = prepared(mutate(tree, ("add_cycle", 1, 0, None)))
    assert isinstance(build(cyclic), ConfigError)
    assert "cycle" in str(build(cyclic))
    renamed = mutate(tree, ("rename_key", 0, 0, None))
    assert renamed != tree
    assert shipped("asr-conv-blstm.py") == tree  # the shipped trees are never changed in place
    assert near_miss("n_out", 0) == "_out"
    deep = prepared(mutate(tree, ("nest", 0, 8 * 30, None)))  # b % 8 == 0: 1 + 240 % 250 levels
    assert deep["network"]["output"]["subnetwork"]["output"]["class"] == "subnetwork" and NEST not in deep
    assert "data:x" in mutate(tree, ("rename_layer", 0, WEIRD_NAMES.index("data:x"), None))["network"]
    assert mutate(tree, ("set_setting", 0, SETTING_KEYS.index("pretrain"), "default"))["pretrain"] == "default"
    bad_pretrain = prepared(mutate(tree, ("set_setting", 0, SETTING_KEYS.index("pretrain"), "x")))
    with pytest.raises(ConfigError, match="config key 'pretrain'"):  # read where the network per epoch is made
        NetworkSchedule.from_config(bad_pretrain)
