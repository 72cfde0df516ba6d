"""Loading a config file: it is Python; its top-level names are the settings.

`network` and `extern_data` (or `num_inputs`/`num_outputs`) define the
network; everything else is kept for the trainer. Every setting RETURNN
defines is in the table `KEY_KINDS`: used (implemented), no effect (accepted
with a notice saying why) or refused (compile-net stops: ignoring it would
change the result). Unknown keys that look like a misspelled one get a "did
you mean" notice. Each layer entry of
the `network` literal is mapped to its line, for error messages.
"""

from __future__ import annotations

import ast
import builtins
import os
import re
from typing import Any, Dict, Iterable, List, Optional, Sequence

from .config_namespace import ConfigNamespace, set_global_config
from .errors import ConfigError, ConfigFileError, SourceLocation, closest_match
from .extern_data import shadowed_input_notices
from .network_meta import apply_network_config

# --- the table of config keys ----------------------------------------------------------------------------
# Every setting RETURNN (or netcompiler) defines is one of three kinds:
USED = "used"
"""Implemented: netcompiler reads it and it does what it does in RETURNN."""
NO_EFFECT = "no effect"
"""Accepted with a notice: it changes nothing that netcompiler computes (logging, devices, debugging)."""
REFUSED = "refused"
"""Not implemented, and ignoring it would change the result: compile-net refuses to run (dump-net says so in a
notice). Set to its no-op value (`RefusedKey.inert`) it is accepted with a notice."""

# Settings netcompiler reads (the trainer documents their meaning).
USED_KEYS = frozenset({
    "network", "extern_data", "num_inputs", "num_outputs", "task", "train", "dev", "eval", "batch_size",
    "max_seqs", "max_seq_length", "chunking", "batching", "optimizer", "learning_rate", "learning_rate_control",
    "learning_rate_control_error_measure", "learning_rate_control_relative_error_relative_lr",
    "newbob_learning_rate_decay", "newbob_multi_num_epochs", "newbob_multi_update_interval",
    "newbob_relative_error_threshold", "min_learning_rate", "gradient_clip", "gradient_clip_global_norm",
    "newbob_learning_rate_growth", "newbob_relative_error_grow_threshold",
    "learning_rate_control_min_num_epochs_per_new_lr", "dynamic_learning_rate",
    "num_epochs", "save_interval", "model", "load", "import_model_train_epoch1", "learning_rate_file",
    "adam", "nadam", "random_seed", "forward_output_layer", "output_file", "eval_datasets",
    "accum_grad_multiple_step", "stop_on_nonfinite_train_score", "tf_log_dir", "cleanup_old_models",
    "newbob_error_threshold", "momentum", "start_epoch",
    "optimizer_epsilon", "learning_rates", "newbob_relative_error_div_by_old", "gradient_clip_norm", "adagrad",
    "adadelta", "rmsprop", "optimize_move_layers_out", "search_output_layer", "search_data", "search_do_eval",
    "search_output_file", "search_output_file_format", "gradient_noise", "gradient_nan_inf_filter",
    "maximize_grad_norm", "backend", "torch_num_threads", "get_model", "train_step", "forward_step",
    "calculate_exp_loss", "sparse_input",
    "model_outputs", "behavior_version", "load_epoch", "preload_from_files", "load_ignore_missing_vars",
    "allow_random_model_init", "export_path", "min_seq_length",
    "pretrain", "get_network", "pretrain_learning_rate", "pretrain_repetitions", "pretrain_construction_algo",
    "pretrain_copy_output_layer", "pretrain_greedy", "use_learning_rate_control_always",  # network_schedule.py
    "use_last_best_model",  # engine/last_best_model.py
    "distributed_tf", "torch_distributed",  # several workers: engine/distributed.py
    "learning_curve_file",  # netcompiler's own: the learning-curve PNG (engine/learning_curve.py)
    "tf_amp", "torch_amp", "tf_jit", "torch_compile",  # bfloat16 and compiled steps: engine/precision.py
    "tf_equal_layers_min",  # equal layers in parameter groups and one traced function: emit/equal_layers.py
})

# Settings that change nothing here: key -> why (shown in the notice).
NO_EFFECT_KEYS: Dict[str, str] = {
    "use_tensorflow": "the backend is chosen by 'backend'",
    "device": "TensorFlow/PyTorch place the computation", "update_on_device": "the backend places the update",
    "multiprocessing": "datasets are read in the training process",
    "log": "compile-net prints to stdout/stderr", "log_file": "compile-net prints to stdout/stderr",
    "log_verbosity": "compile-net prints one line per epoch", "log_batch_size": "the progress line shows "
    "sequences per epoch; batch sizes are not logged",
    "tf_log_memory_usage": "memory is not logged", "tf_session_opts": "netcompiler runs TensorFlow 2 eagerly "
    "or in tf.function, without a session",
    "debug_print_layer_output_template": "dump-net prints the templates",
    "debug_add_check_numerics_on_output": "non-finite losses stop training anyway",
    "debug_add_check_numerics_ops": "non-finite losses stop training anyway", "debug_mode": "debugging only",
    "truncation": "RETURNN's TensorFlow backend ignores it too", "config": "the config object itself",
    "cache_size": "datasets are read without a cache; results are the same",
    "save_interval_n_step": "checkpoints are written per epoch ('save_interval'), so a crash costs at most "
    "the current epoch",
    "search_train_network_layers": "the trained network is the one built for training",
    "torch_dataloader_opts": "batches are made in the training process; results are the same",
}


class RefusedKey:
    """Why ignoring a key would change the result, its no-op values and what to do instead."""

    def __init__(self, why: str, suggestion: str, inert: Iterable[Any] = (None, False)):
        self.why = why
        self.suggestion = suggestion
        self.inert = tuple(inert)

    def is_inert(self, value: Any) -> bool:
        return any(value is v or (type(value) is type(v) and value == v) for v in self.inert)


REFUSED_KEYS: Dict[str, RefusedKey] = {
    "train_epoch_split": RefusedKey("it splits each epoch of the train data into parts", "set 'partition_epoch': "
                                    "N in the train dataset instead", inert=(None, 1)),
    "window": RefusedKey("it concatenates neighbouring input frames (a sliding window)",
                         "add a 'window' layer to the network", inert=(None, 1)),
    "max_seq_length_eval": RefusedKey("it would drop long sequences from the dev/eval scores",
                                      "remove it (every sequence is evaluated)"),
    "target": RefusedKey("a default target other than 'classes' is not read by the losses",
                         "give 'target' in each loss layer", inert=(None, "classes")),
    "adam_opts": RefusedKey("optimizer options are not passed on", "use the 'optimizer' dict, e.g. "
                            "{'class': 'adam', 'epsilon': 1e-8}", inert=(None, {})),
    "nadam_opts": RefusedKey("optimizer options are not passed on", "use the 'optimizer' dict, e.g. "
                             "{'class': 'nadam', 'epsilon': 1e-8}", inert=(None, {})),
    "decouple_constraints": RefusedKey("decoupled weight decay is not implemented", "remove it (L2 is added to "
                                       "the loss)"),
    "accum_grad_multiple_step_sorted": RefusedKey("batches are not sorted for gradient accumulation",
                                                  "remove it"),
    "reset_updater_vars_mod_step": RefusedKey("the optimizer's state is never reset", "remove it",
                                              inert=(None, False, 0)),
    "grad_noise_rel_grad_norm": RefusedKey("gradient noise relative to the gradient norm is not implemented",
                                           "use 'gradient_noise' (a fixed stddev)", inert=(None, False, 0, 0.0)),
    "use_horovod": RefusedKey("distributed training is not implemented", "train on one process"),
}

KEY_KINDS: Dict[str, str] = {**{key: USED for key in USED_KEYS}, **{key: NO_EFFECT for key in NO_EFFECT_KEYS},
                             **{key: REFUSED for key in REFUSED_KEYS}}
"""The table: every known config key and its kind (USED, NO_EFFECT or REFUSED)."""

RETURNN_KEYS_NOT_USED = frozenset(NO_EFFECT_KEYS)
"""The keys accepted with a notice (the old name of NO_EFFECT_KEYS)."""


def writes_checkpoints(values: Dict[str, Any]) -> bool:
    """False for `model = None` set explicitly (as in RETURNN: training saves no model); an unset `model` means
    the default path out/<config name>/model."""
    return not ("model" in values and values["model"] is None)


def model_notices(values: Dict[str, Any]) -> List[str]:
    if writes_checkpoints(values):
        return []
    return ["config key 'model' is None: training writes no checkpoints (as in RETURNN), so a crash loses the "
            "whole run and eval/forward need 'load'"]


def tensorboard_dir(values: Dict[str, Any], model_prefix: str) -> str:
    """Where training writes its TensorBoard logs: `tf_log_dir`, else "tensorboard" beside the checkpoints."""
    directory = values.get("tf_log_dir")
    if directory is None:
        return os.path.join(os.path.dirname(model_prefix) or ".", "tensorboard")
    if not isinstance(directory, str) or not directory:
        raise ConfigError(f"expected a folder name, got {directory!r}", subject="config key 'tf_log_dir'",
                          suggestion="e.g. tf_log_dir = 'out/tensorboard'")
    return directory


def key_notice(key: str, value: Any) -> Optional[str]:
    """The notice for a set key: why it has no effect, or that compile-net refuses it; None for a used key."""
    if key in NO_EFFECT_KEYS:
        return f"config key '{key}' has no effect in netcompiler ({NO_EFFECT_KEYS[key]}); ignored"
    refused = REFUSED_KEYS.get(key)
    if refused is None:
        return None
    if refused.is_inert(value):
        return f"config key '{key}' is {value!r}, which changes nothing; ignored"
    return f"config key '{key}' is not supported: {refused.why}; compile-net refuses it -- {refused.suggestion}"


_PRIVATE_PREFIXES = ("_",)


_SUBJECT_KEY = re.compile(r"^(?:config key|dataset) '(\w+)'")
"""The top-level setting an error's subject names."""


class Config:
    """A loaded config: its settings, where it came from, and notices about it."""

    def __init__(self, values: Dict[str, Any], path: Optional[str] = None, source: Optional[str] = None,
                 namespace: Optional[ConfigNamespace] = None):
        self.values = values
        self._namespace = namespace
        self.path = path
        self._source = source
        self._lines = None  # parsed from `source` only when a message needs a line
        self.overridden: frozenset = frozenset()  # keys set on the command line (++key value)
        network_config_notices = apply_network_config(values)  # the network's '#config' entry
        self.notices: List[str] = network_config_notices + [
            notice for notice in (key_notice(key, values[key]) for key in sorted(values)) if notice is not None
        ] + shadowed_input_notices(values) + model_notices(values) + [
            f"config key '{key}' is no setting netcompiler knows -- did you mean '{guess}'?"
            for key, guess in _near_misses(values)
        ]

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def with_values(self, values: Dict[str, Any]) -> "Config":
        """The same config file with other settings `values` (one epoch's, when the network changes per epoch)."""
        config = Config(values, self.path, self._source, namespace=self._namespace)
        config.overridden = self.overridden
        return config

    @property
    def namespace(self) -> ConfigNamespace:
        """The `config` object the file saw (RETURNN's Config: what `self.network.get_config()` gives)."""
        if self._namespace is None:
            self._namespace = ConfigNamespace(dict(self.values), {}, {})
        return self._namespace

    def check_refused(self) -> None:
        """A ConfigError for the first set key that netcompiler refuses (see REFUSED_KEYS): running without it
        would silently give another result than RETURNN."""
        for key in sorted(self.values):
            refused = REFUSED_KEYS.get(key)
            if refused is not None and not refused.is_inert(self.values[key]):
                raise ConfigError(f"{refused.why}; netcompiler does not support it",
                                  subject=f"config key '{key}'", suggestion=refused.suggestion,
                                  location=self.key_location(key))

    def __contains__(self, key: str) -> bool:
        return key in self.values

    def _line_map(self):
        if self._lines is None:
            self._lines = network_line_map(ast.parse(self._source)) if self._source is not None else ({}, None)
        return self._lines

    @property
    def layer_lines(self) -> Dict[str, int]:
        return self._line_map()[0]

    @property
    def network_line(self) -> Optional[int]:
        return self._line_map()[1]

    def key_location(self, key: str) -> Optional[SourceLocation]:
        """Where top-level setting `key` is assigned (its last assignment), or the command line if overridden."""
        if key in self.overridden:
            return SourceLocation(f"command line ++{key}")
        if self._source is None or not self.path:
            return None
        line = None
        for node in ast.parse(self._source).body:
            targets = (node.targets if isinstance(node, ast.Assign) else
                       [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else [])
            if any(isinstance(t, ast.Name) and t.id == key for t in targets):
                line = node.lineno
        return SourceLocation(self.path, line) if line else None

    def locate(self, exc: ConfigError) -> ConfigError:
        """`exc` with the line of the top-level setting its subject names ("config key 'x'", "dataset 'x'") where
        it has no line yet; returns it (for the entry points' error handlers)."""
        match = _SUBJECT_KEY.match(exc.subject or "")
        if match and (exc.location is None or exc.location.line is None):
            exc.with_context(location=self.key_location(match.group(1)))
        return exc

    def layer_location(self, path: str) -> SourceLocation:
        """Where layer `path` ("enc", "sub/out") is written; the network's line if not known."""
        line = self.layer_lines.get(path, self.network_line)
        return SourceLocation(self.path, line) if self.path else None

    @property
    def network(self) -> Dict[str, Any]:
        net = self.values.get("network")
        if net is None:
            guess = closest_match("network", self.values)
            raise ConfigFileError("the config defines no 'network'", subject=f"config {self.path}",
                                  suggestion=f"did you mean '{guess}'?" if guess else
                                  "add network = {'output': {'class': ..., 'from': 'data'}}")
        if not isinstance(net, dict):
            raise ConfigFileError(f"'network' must be a dict of layer name -> layer options, not {type(net).__name__}",
                                  subject=f"config {self.path}")
        return net


def _near_misses(values: Dict[str, Any]):
    """(key, known setting) for keys that look like a misspelled setting. A config may define any helper
    names, so only plain values (numbers, strings, lists, dicts) with a close match are suspects."""
    known = KEY_KINDS
    for key in sorted(values):
        if key not in known and isinstance(values[key], (int, float, str, list, tuple, dict, type(None))):
            guess = closest_match(key, known)
            if guess is not None:
                yield key, guess


def load_config(path: str, overrides: Sequence[str] = ()) -> Config:
    """Runs the config file and returns its settings (plus command-line overrides)."""
    if not os.path.isfile(path):
        raise ConfigFileError(f"config file '{path}' does not exist", subject="config")
    with open(path, encoding="utf-8") as f:
        source = f.read()
    overridden = parse_overrides(overrides)
    namespace: Dict[str, Any] = {"__name__": "__netcompiler_config__", "__file__": path, "__builtins__": builtins}
    view = ConfigNamespace(namespace, override_texts(overrides), overridden)
    namespace["config"] = view
    set_global_config(view)
    try:
        exec(compile(source, path, "exec"), namespace)  # noqa: S102 - a config file is Python, as in RETURNN
    except SyntaxError as exc:
        if exc.filename and os.path.abspath(exc.filename) == os.path.abspath(path):
            raise ConfigFileError(f"syntax error: {exc.msg}", location=SourceLocation(path, exc.lineno)) from None
        raise ConfigFileError(f"running the config failed: {exc}", location=SourceLocation(path)) from None
    except Exception as exc:  # the config's own code failed: report where
        line = _innermost_line(exc, path)
        raise ConfigFileError(f"running the config failed: {type(exc).__name__}: {exc}",
                              location=SourceLocation(path, line)) from None
    view.finish_loading()
    values = {k: v for k, v in namespace.items()
              if not k.startswith(_PRIVATE_PREFIXES) and not _is_module(v) and v is not view}
    config = Config(values, path, source, namespace=view)
    config.overridden = frozenset(overridden)
    return config


def _is_module(value: Any) -> bool:
    return type(value).__name__ == "module"


def _innermost_line(exc: BaseException, path: str) -> Optional[int]:
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if os.path.abspath(tb.tb_frame.f_code.co_filename) == os.path.abspath(path):
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def parse_overrides(args: Iterable[str]) -> Dict[str, Any]:
    """`++key value` pairs from the command line; values are Python literals, else strings."""
    args = list(args)
    result: Dict[str, Any] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("++") or len(arg) <= 2:
            raise ConfigError(f"expected '++key value', got {arg!r}", subject="command line",
                              suggestion="write overrides as ++learning_rate 0.001")
        if i + 1 >= len(args):
            raise ConfigError(f"'{arg}' has no value", subject="command line",
                              suggestion=f"write {arg} VALUE")
        text = args[i + 1]
        result[arg[2:]] = _literal(text[1:] if text.startswith("+-") else text)  # RETURNN's way to write -0.1
        i += 2
    return result


def override_texts(args: Iterable[str]) -> Dict[str, str]:
    """`++key value` pairs as the texts they are (RETURNN's reading: "+-0.1" is "-0.1"); `parse_overrides`
    checks their form."""
    args = list(args)
    return {key[2:]: text[1:] if text.startswith("+-") else text for key, text in zip(args[::2], args[1::2])}


def _literal(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def network_line_map(tree: ast.Module):
    """Maps layer paths ("enc", "sub/out") to the line of their entry in the `network` literal."""
    lines: Dict[str, int] = {}
    network_line = None
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, ast.AnnAssign) else [])
        for target in targets:
            if isinstance(target, ast.Name) and target.id == "network":
                network_line = node.lineno
                if isinstance(node.value, ast.Dict):
                    _collect_layer_lines(node.value, "", lines)
            elif (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)
                  and target.value.id == "network" and isinstance(target.slice, ast.Constant)):
                lines[str(target.slice.value)] = node.lineno
                if isinstance(node.value, ast.Dict):
                    _collect_nested(node.value, f"{target.slice.value}/", lines)
    return lines, network_line


def _collect_layer_lines(net: ast.Dict, prefix: str, lines: Dict[str, int]) -> None:
    for key, value in zip(net.keys, net.values):
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            lines[prefix + key.value] = key.lineno
            if isinstance(value, ast.Dict):
                _collect_nested(value, f"{prefix}{key.value}/", lines)


def _collect_nested(layer: ast.Dict, prefix: str, lines: Dict[str, int]) -> None:
    """Subnetworks ("subnetwork") and loop bodies ("unit") are networks inside a layer entry."""
    for key, value in zip(layer.keys, layer.values):
        if isinstance(key, ast.Constant) and key.value in ("subnetwork", "unit") and isinstance(value, ast.Dict):
            _collect_layer_lines(value, prefix, lines)
