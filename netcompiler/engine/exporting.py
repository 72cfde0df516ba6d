"""`--task export`: the trained network as a TensorFlow SavedModel with a serving signature, loadable with plain
TensorFlow (no netcompiler needed): the network's inputs and their sequence lengths in, the output layer's values
(batch-major, and its lengths when its time axis is dynamic) out."""

from __future__ import annotations

import os
import shutil
from typing import Dict, List

import tensorflow as tf

from ..errors import ConfigError
from .forwarding import layer_values_fn

SIGNATURE_KEY = "serving_default"


def default_export_path(model_prefix: str) -> str:
    """Where the SavedModel goes without `export_path`: `<model>.export` beside the checkpoints."""
    return f"{model_prefix}.export"


def check_export_path(path) -> str:
    """`export_path` checked before any work: a path string naming no existing non-empty folder or a file."""
    if not isinstance(path, str) or not path:
        raise ConfigError(f"expected a folder path string, got {path!r}", subject="config key 'export_path'",
                          suggestion="set export_path = 'out/exported' (a new or empty folder)")
    if os.path.isdir(path) and os.listdir(path):
        raise ConfigError(f"the export folder '{path}' exists and is not empty; an export never overwrites one",
                          subject="config key 'export_path'",
                          suggestion="remove that folder, or set export_path to a new one")
    if os.path.exists(path) and not os.path.isdir(path):
        raise ConfigError(f"'{path}' exists and is not a folder", subject="config key 'export_path'",
                          suggestion="set export_path to a new folder")
    return path


def _input_keys(model, layer_name: str) -> List[str]:
    """The extern data keys `layer_name` reads (through every layer it depends on): loss targets the served
    layer does not read are no inputs of the SavedModel."""
    keys, seen = [], set()
    todo = [layer for layer in model.network.all_layers() if layer.name == layer_name]
    while todo:
        layer = todo.pop()
        if id(layer) in seen:
            continue
        seen.add(id(layer))
        if layer.layer_class == "source" and layer.opts["data_key"] not in keys:
            keys.append(layer.opts["data_key"])
        todo.extend(layer.dependencies())
    order = model.network_input_keys()
    return sorted(keys, key=order.index)


class _ServingModule(tf.Module):
    """What the SavedModel holds: the network's variables and its serving function."""

    def __init__(self, params_root, serve):
        super().__init__(name="exported_network")
        self.network = params_root  # tracks the variables: saved with their trained values
        self.serve = serve


def _params_root(model):
    """What holds the exported variables: the checkpoints' container, or with parameter groups
    (`emit/equal_layers.py`) one holding each group's variable, not its members (which are not variables)."""
    groups = getattr(model, "group_storages", ())
    if not groups:
        return model.checkpoint_root
    root = tf.Module(name="network")
    root.params = {name: raw for name, raw in model.params.items() if isinstance(raw, tf.Variable)}
    root.param_groups = list(groups)
    return root


def export_saved_model(model, layer_name: str, path: str) -> Dict[str, List[str]]:
    """Writes the SavedModel of `model` (a TensorFlow `CompiledNetwork` with its parameters restored) serving
    `layer_name` to `path`, atomically (a temporary folder beside it, renamed); returns the signature's input and
    output names."""
    layer_values, time_dim = layer_values_fn(model, layer_name, emit_all=False)
    input_specs, length_specs = model.input_signature(keys=_input_keys(model, layer_name))
    specs = [input_specs[k] for k in input_specs] + [length_specs[k] for k in length_specs]

    def serve(*args):
        inputs = {k: args[i] for i, k in enumerate(input_specs)}
        lengths = {k: args[len(input_specs) + i] for i, k in enumerate(length_specs)}
        values, sizes = layer_values(inputs, lengths)
        outputs = {layer_name: values}
        if time_dim is not None:
            outputs[f"{layer_name}_lengths"] = sizes
        return outputs

    function = tf.function(serve, input_signature=specs, autograph=False)
    module = _ServingModule(_params_root(model), function)
    concrete = function.get_concrete_function()
    check_export_path(path)  # again: another run may have made it meanwhile
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    temporary = os.path.join(parent, f".{os.path.basename(os.path.abspath(path))}.tmp-{os.getpid()}")
    shutil.rmtree(temporary, ignore_errors=True)
    try:
        tf.saved_model.save(module, temporary, signatures={SIGNATURE_KEY: concrete})
        if os.path.isdir(path):  # empty (checked above)
            os.rmdir(path)
        os.rename(temporary, path)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
    return {"inputs": [spec.name for spec in specs], "outputs": list(concrete.structured_outputs)}
