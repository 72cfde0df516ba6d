"""Loading a config file: it is Python; its top-level names are the settings.

`network` and `extern_data` (or `num_inputs`/`num_outputs`) define the
network; everything else is kept for the trainer. RETURNN settings that
netcompiler does not use yet are accepted with a notice. Each layer entry of
the `network` literal is mapped to its line, for error messages.
"""

from __future__ import annotations

import ast
import builtins
import os
from typing import Any, Dict, Iterable, List, Optional, Sequence

from .errors import ConfigError, ConfigFileError, SourceLocation, closest_match

# Settings netcompiler reads (the trainer documents their meaning).
USED_KEYS = frozenset({
    "network", "extern_data", "num_inputs", "num_outputs", "task", "train", "dev", "eval", "batch_size",
    "max_seqs", "max_seq_length", "chunking", "batching", "optimizer", "learning_rate", "learning_rate_control",
    "learning_rate_control_error_measure", "learning_rate_control_relative_error_relative_lr",
    "newbob_learning_rate_decay", "newbob_multi_num_epochs", "newbob_multi_update_interval",
    "newbob_relative_error_threshold", "min_learning_rate", "gradient_clip", "gradient_clip_global_norm",
    "num_epochs", "save_interval", "model", "load", "import_model_train_epoch1", "learning_rate_file",
    "adam", "nadam", "random_seed", "forward_output_layer", "output_file", "eval_datasets",
    "log_batch_size", "accum_grad_multiple_step", "stop_on_nonfinite_train_score", "cache_size",
    "tf_log_dir", "cleanup_old_models", "train_epoch_split", "newbob_error_threshold", "momentum",
    "optimizer_epsilon", "learning_rates", "newbob_relative_error_div_by_old", "gradient_clip_norm", "adagrad",
    "adadelta", "rmsprop", "optimize_move_layers_out", "search_output_layer", "search_data", "search_do_eval",
    "search_output_file", "search_output_file_format", "gradient_noise", "gradient_nan_inf_filter",
    "maximize_grad_norm", "backend",
})

# RETURNN settings that are accepted but have no effect here (yet).
RETURNN_KEYS_NOT_USED = frozenset({
    "use_tensorflow", "device", "log", "log_verbosity", "multiprocessing", "update_on_device", "tf_log_memory_usage",
    "debug_print_layer_output_template", "debug_add_check_numerics_on_output", "debug_mode", "tf_session_opts",
    "truncation", "window", "starting_epoch", "learning_rate_control_min_num_epochs_per_new_lr",
    "save_interval_n_step", "max_seq_length_eval", "use_learning_rate_control_always", "pretrain",
    "behavior_version", "log_file", "target", "config",
    "nadam_opts", "adam_opts", "decouple_constraints", "accum_grad_multiple_step_sorted", "use_last_best_model",
    "debug_add_check_numerics_ops", "search_train_network_layers",
})

_PRIVATE_PREFIXES = ("_",)


class Config:
    """A loaded config: its settings, where it came from, and notices about it."""

    def __init__(self, values: Dict[str, Any], path: Optional[str] = None, source: Optional[str] = None):
        self.values = values
        self.path = path
        self._source = source
        self._lines = None  # parsed from `source` only when a message needs a line
        self.overridden: frozenset = frozenset()  # keys set on the command line (++key value)
        self.notices: List[str] = [
            f"config key '{key}' is a RETURNN setting that netcompiler does not use yet; ignored"
            for key in sorted(values) if key in RETURNN_KEYS_NOT_USED
        ] + [
            f"config key '{key}' is no setting netcompiler knows -- did you mean '{guess}'?"
            for key, guess in _near_misses(values)
        ]

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

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
    known = USED_KEYS | RETURNN_KEYS_NOT_USED
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
    view = ConfigView(namespace, overridden)
    namespace["config"] = view
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
    values = {k: v for k, v in namespace.items()
              if not k.startswith(_PRIVATE_PREFIXES) and not _is_module(v) and v is not view}
    values.update(overridden)
    config = Config(values, path, source)
    config.overridden = frozenset(overridden)
    return config


class ConfigView:
    """The `config` object a config file sees, with RETURNN's getters: a key's value is the command line's
    (`++key value`), else what the file has assigned to it so far, else `default`."""

    def __init__(self, namespace: Dict[str, Any], overridden: Dict[str, Any]):
        self._namespace = namespace
        self._overridden = overridden

    def has(self, key: str) -> bool:
        return key in self._overridden or (key in self._namespace and not key.startswith("__"))

    def typed_value(self, key: str, default: Any = None) -> Any:
        """The value as it is (a list stays a list)."""
        if key in self._overridden:
            return self._overridden[key]
        return self._namespace[key] if self.has(key) else default

    def value(self, key: str, default: Any = None) -> Any:
        """The value as a string, as RETURNN gives it (a list joined with ","), or `default` if not set."""
        if not self.has(key):
            return default
        value = self.typed_value(key)
        if isinstance(value, (list, tuple)):
            return ",".join(str(v) for v in value)
        return value if value is None or isinstance(value, str) else str(value)

    def int(self, key: str, default: Any = None) -> Any:
        return self._converted(key, default, int, "an int")

    def float(self, key: str, default: Any = None) -> Any:
        return self._converted(key, default, float, "a number")

    def bool(self, key: str, default: Any = None) -> Any:
        def as_bool(value):
            if isinstance(value, str):
                if value.lower() in ("true", "1", "yes", "on"):
                    return True
                if value.lower() in ("false", "0", "no", "off", "none", ""):
                    return False
                raise ValueError(value)
            return bool(value)
        return self._converted(key, default, as_bool, "a bool")

    def list(self, key: str, default: Any = None) -> Any:
        """The value as a list (a string is split at ","), or `default` (None: [])."""
        if not self.has(key):
            return [] if default is None else default
        value = self.typed_value(key)
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return list(value) if isinstance(value, (list, tuple)) else [value]

    def _converted(self, key: str, default: Any, convert, what: str) -> Any:
        if not self.has(key):
            return default
        value = self.typed_value(key)
        if value is None:
            return default
        try:
            return convert(value)
        except (TypeError, ValueError):
            where = f"++{key} on the command line" if key in self._overridden else f"config key '{key}'"
            raise ConfigError(f"config.{convert.__name__ if convert in (int, float) else 'bool'}({key!r}): "
                              f"{where} is {value!r}, not {what}", subject="config") from None


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
        result[arg[2:]] = _literal(args[i + 1])
        i += 2
    return result


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
