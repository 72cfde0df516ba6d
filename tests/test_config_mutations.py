"""Property: a mutated shipped config either builds (and dumps), or fails with a ConfigError that names a
layer (or the network / config) -- never with any other exception.

Each example takes one shipped config's network (+ its extern_data, or num_inputs/num_outputs) and applies
1-3 mutations. A mutation is a plain tuple (kind, a, b, value): `a` and `b` pick targets by index (modulo
the number of candidates), so an example can be written down with `@example` and replayed exactly.
"""

import glob
import os

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from netcompiler.config import Config, load_config
from netcompiler.dump import format_dot, format_json, format_text
from netcompiler.errors import ConfigError
from netcompiler.layer_base import registered_layer_classes
from netcompiler.network import build_network
from netcompiler.tensor import FeatureDim, SpatialDim

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG_NAMES = sorted(os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "configs", "*.py")))
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
    return tree


VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.integers(-10 ** 6, 10 ** 6),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["T", "F", "B", "spatial", "except_time", "except_batch", "stag:mel", "stag:time", "dim:40",
                     "dim:7", "*", "T?", "BT", "lstm", "linear", "relu", "same", "valid", "max", "add", "ce",
                     "classes", "data", "data:classes", "output", "layer:output", "$spatial-dim", "$feature-dim"]),
    st.text(max_size=6),
    st.lists(st.one_of(st.none(), st.integers(-2, 4), st.sampled_from(["data", "T", "F", "output"])), max_size=3),
    st.lists(st.integers(-2, 4), max_size=3).map(tuple),
    st.dictionaries(st.sampled_from(["T", "F", "dim", "sparse", "label_smoothing", "n_out", "x"]),
                    st.one_of(st.none(), st.integers(-2, 8), st.booleans(), st.sampled_from(["T", "data"])),
                    max_size=2),
)

MUTATION_KINDS = ["delete_key", "rename_key", "swap_values", "set_value", "set_option", "set_option",
                  "retarget_ref", "delete_layer", "add_cycle", "change_class"]
MUTATIONS = st.tuples(st.sampled_from(MUTATION_KINDS), st.integers(0, 10 ** 4), st.integers(0, 10 ** 4), VALUES)


def build(tree):
    """Builds and dumps the (mutated) config; a ConfigError is checked and returned, anything else raises."""
    config = Config(copy_tree(tree))
    try:
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
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(CONFIG_NAMES), mutations=st.lists(MUTATIONS, min_size=1, max_size=3))
def test_mutated_configs_fail_only_with_config_errors(name, mutations):
    tree = copy_tree(shipped(name))
    for mutation in mutations:
        tree = mutate(tree, mutation)
    error = build(tree)
    if error is not None:
        check_message(error, tree)


def test_mutations_do_mutate():
    tree = shipped("asr-conv-blstm.py")
    assert mutate(tree, ("delete_layer", 0, 0, None))["network"].keys() != tree["network"].keys()
    cyclic = mutate(tree, ("add_cycle", 1, 0, None))
    assert isinstance(build(cyclic), ConfigError)
    assert "cycle" in str(build(cyclic))
    renamed = mutate(tree, ("rename_key", 0, 0, None))
    assert renamed != tree
    assert shipped("asr-conv-blstm.py") == tree  # the shipped trees are never changed in place
    assert near_miss("n_out", 0) == "_out"
