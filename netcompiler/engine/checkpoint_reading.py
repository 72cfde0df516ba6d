"""Reading TensorFlow checkpoints strictly: checking that a checkpoint fits the objects, then restoring them.

Restoring checks that the checkpoint fits the objects before assigning
anything: every variable of the objects must have a value of the same shape in
the checkpoint and every variable of the checkpoint (below the restored
objects) must have a place. Otherwise `CheckpointError` names the file and the
variables concerned. Parts of the checkpoint that the caller does not ask for
are ignored (e.g. restoring only ``{"model": ...}`` from a checkpoint that also
holds the optimizer). A damaged or truncated file gives `CheckpointError` with
the file's name, not a TensorFlow traceback.

Keras optimizers create their variables lazily: build them
(``optimizer.build(model.trainable_variables)``) before restoring into them.
"""

from __future__ import annotations

import os
from collections import deque
from typing import Any, Dict, List, Mapping, Optional, Tuple

import tensorflow as tf

from ..backends.tensorflow.param_groups import GroupMember
from ..errors import CheckpointError
from .checkpoint_files import INDEX_SUFFIX, _first_line, _listdir, _marked

_MAX_NAMES = 12  # variable names listed in one error message


def _is_variable(obj: Any) -> bool:
    if isinstance(obj, (tf.Variable, GroupMember)):  # (a group member is saved as a variable of its own)
        return True
    keras_variable = getattr(getattr(tf, "keras", None), "Variable", None)
    return keras_variable is not None and isinstance(obj, keras_variable)


def _shape(obj: Any) -> Tuple[Optional[int], ...]:
    return tuple(tf.TensorShape(obj.shape).as_list())


def _describe(obj: Any, path: str) -> str:
    name = getattr(obj, "name", None) or getattr(obj, "path", None)
    return f"{path} ({name})" if name and name != path else path


def _read_reader(path: str):
    index = path + INDEX_SUFFIX
    if not os.path.exists(index):
        raise CheckpointError(f"checkpoint '{path}' does not exist (no file '{index}')")
    try:
        return tf.train.load_checkpoint(path)
    except Exception as exc:  # DataLossError, ValueError, ... for a damaged index file
        raise _marked(CheckpointError(
            f"checkpoint file '{index}' is damaged or not a TensorFlow checkpoint ({_first_line(exc)})")) from None


def _data_files(path: str) -> str:
    directory = os.path.dirname(path)
    names = sorted(n for n in _listdir(directory or ".") if n.startswith(os.path.basename(path) + ".data-"))
    return ", ".join(f"'{os.path.join(directory, n)}'" for n in names) or f"'{path}.data-*' (missing)"



def _damaged(path: str, exc: BaseException) -> CheckpointError:
    return _marked(CheckpointError(
        f"checkpoint '{path}' cannot be read: its file '{path}{INDEX_SUFFIX}' or data file {_data_files(path)} "
        f"is damaged or truncated ({type(exc).__name__}: {_first_line(exc)})"))


def _object_graph(reader, path: str):
    from tensorflow.core.protobuf import trackable_object_graph_pb2

    try:
        shapes = reader.get_variable_to_shape_map()
    except Exception as exc:  # the reader's errors are of several kinds
        raise _damaged(path, exc) from None
    if "_CHECKPOINTABLE_OBJECT_GRAPH" not in shapes:
        raise CheckpointError(
            f"checkpoint '{path}' has no object graph: it was written by a name-based (TF1) saver, as RETURNN "
            f"writes them; its parameters load by name (load, load_epoch, preload_from_files for eval/forward/"
            f"search), but a training cannot resume from it (no optimizer state of netcompiler's): to train on "
            f"from its parameters, set import_model_train_epoch1 = '{path}' and another 'model' path")
    graph = trackable_object_graph_pb2.TrackableObjectGraph()
    try:
        graph.ParseFromString(reader.get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"))
    except Exception as exc:  # IndexError, DataLossError, protobuf's DecodeError, ...
        raise _damaged(path, exc) from None
    return graph, shapes


def _value_key(node) -> Optional[str]:
    for attribute in node.attributes:
        if attribute.name == "VARIABLE_VALUE":
            return attribute.checkpoint_key
    return None


def _same_shape(saved, live) -> bool:
    return len(saved) == len(live) and all(b is None or a == b for a, b in zip(saved, live))


def verify_match(root, path: str, reader=None) -> None:
    """Raises CheckpointError unless the variables below `root` and in checkpoint `path` correspond.

    Each top-level object (``model``, ``optimizer``, ...) is compared on its
    own, by the names of its attributes, as TensorFlow's restore matches them.
    That way a renamed or added model variable is reported under the model,
    even where the optimizer's positional variable lists happen to fit.
    A checkpoint value that would land in two different variables is reported too.
    """
    reader = reader or _read_reader(path)
    graph, shapes = _object_graph(reader, path)
    view = tf.train.TrackableView(root)
    root_children = view.children(root)
    nodes = graph.nodes
    tops = [(c.local_name, c.node_id) for c in nodes[0].children if c.local_name in root_children]
    if not tops:
        raise CheckpointError(
            f"checkpoint '{path}' holds none of {sorted(root_children)} "
            f"(it holds: {', '.join(sorted(c.local_name for c in nodes[0].children)) or 'nothing'})")

    wrong_shape: List[str] = []
    only_in_network: List[str] = []
    only_in_checkpoint: List[str] = []
    reported_live, reported_nodes = set(), set()
    targets: Dict[int, Dict[int, str]] = {}  # checkpoint node -> {id(live variable): its name}
    for top, top_node in tops:
        # The checkpoint's nodes below `top`, each with its shortest name.
        ckpt_paths: Dict[int, str] = {}
        queue = deque([(top_node, top)])
        while queue:
            node_id, name = queue.popleft()
            if node_id in ckpt_paths:
                continue
            ckpt_paths[node_id] = name
            queue.extend((c.node_id, f"{name}/{c.local_name}") for c in nodes[node_id].children)
        # The live variables below `top`, each with its shortest name.
        live: Dict[int, Tuple[str, Any]] = {}
        seen = set()
        queue = deque([(top, root_children[top])])
        while queue:
            name, obj = queue.popleft()
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            if _is_variable(obj):
                live[id(obj)] = (name, obj)
            else:
                queue.extend((f"{name}/{k}", child) for k, child in view.children(obj).items())
        # Walk both side by side.
        matched_nodes, matched_live, visited = set(), set(), set()
        queue = deque([(top_node, root_children[top])])
        while queue:
            node_id, obj = queue.popleft()
            if (node_id, id(obj)) in visited:
                continue
            visited.add((node_id, id(obj)))
            if _is_variable(obj):
                key = _value_key(nodes[node_id])
                if key is not None:
                    matched_nodes.add(node_id)
                    matched_live.add(id(obj))
                    targets.setdefault(node_id, {})[id(obj)] = live[id(obj)][0]
                    saved, current = tuple(shapes.get(key, ())), _shape(obj)
                    if not _same_shape(saved, current) and node_id not in reported_nodes:
                        reported_nodes.add(node_id)
                        reported_live.add(id(obj))
                        wrong_shape.append(f"{ckpt_paths[node_id]}: checkpoint {saved}, network {current}")
                continue
            children = view.children(obj)
            queue.extend((c.node_id, children[c.local_name]) for c in nodes[node_id].children
                         if c.local_name in children)
        for node_id, name in ckpt_paths.items():
            if (_value_key(nodes[node_id]) is not None and node_id not in matched_nodes
                    and node_id not in reported_nodes):
                reported_nodes.add(node_id)
                only_in_checkpoint.append(name)
        for var_id, (name, obj) in live.items():
            if var_id not in matched_live and var_id not in reported_live:
                reported_live.add(var_id)
                only_in_network.append(_describe(obj, name))
    ambiguous = [" and ".join(sorted(set(t.values()))) for t in targets.values() if len(t) > 1]

    if wrong_shape or only_in_checkpoint or only_in_network or ambiguous:
        parts = []
        for title, names in (("variables of the network missing in the checkpoint", only_in_network),
                             ("variables in the checkpoint that the network does not have", only_in_checkpoint),
                             ("variables with a different shape", wrong_shape),
                             ("checkpoint values that would go to several variables", ambiguous)):
            if names:
                shown = names[:_MAX_NAMES] + ([f"... ({len(names) - _MAX_NAMES} more)"]
                                              if len(names) > _MAX_NAMES else [])
                parts.append(f"{title}: {', '.join(shown)}")
        raise CheckpointError(f"checkpoint '{path}' does not match the network; " + "; ".join(parts))



def restore(root, path: str) -> None:
    """Restores trackable `root` (e.g. a ``tf.train.Checkpoint``) from checkpoint prefix `path`, strictly.

    Checks first that all variables correspond (see `verify_match`), then reads
    the values. A damaged file gives CheckpointError naming it.
    """
    reader = _read_reader(path)
    verify_match(root, path, reader)
    del reader
    try:
        status = root.read(path)
        status.expect_partial()  # parts that the caller did not ask for are fine (checked above)
        status.assert_existing_objects_matched()
    except Exception as exc:  # DataLossError, OutOfRangeError, ValueError, ... from a damaged file
        raise _damaged(path, exc) from None


def _check_built(objects: Mapping[str, Any]) -> None:
    optimizer_class = getattr(getattr(getattr(tf, "keras", None), "optimizers", None), "Optimizer", None)
    for name, obj in objects.items():
        if optimizer_class is not None and isinstance(obj, optimizer_class) and not getattr(obj, "built", True):
            raise ValueError(f"the optimizer '{name}' has no variables yet: call "
                             f"optimizer.build(model.trainable_variables) before restoring it")
