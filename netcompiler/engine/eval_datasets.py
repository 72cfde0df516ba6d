"""Which datasets a run scores: RETURNN's `dev`, `eval` and `eval_datasets`.

As in RETURNN, training scores after each epoch, and `--task eval` scores, the config's `dev` and `eval`
datasets (those that are set) and then each entry of ``eval_datasets``, a dict name -> dataset options, e.g.
``eval_datasets = {"devtrain": dict(train, fixed_random_subset=100), "dev2": {...}}``. A dataset's scores
are named by its name (``devtrain_score_output``, ``devtrain_error_output``) in the log, the learning-rate
file and TensorBoard, and ``learning_rate_control_error_measure`` may name them. An entry named "dev" or
"eval" takes the place of the config's dataset of that name.

netcompiler also takes ``eval_datasets`` as a list of config keys of datasets (e.g. ``["dev", "train"]``):
then exactly those are scored, each named by its key. Training refuses the name "train" (its scores would
overwrite the training scores): give the training data another name in the dict form.
"""

from __future__ import annotations

from typing import Any, Callable, Dict

from ..errors import ConfigError, InvalidOptionError

_SUBJECT = "config key 'eval_datasets'"


def eval_dataset_options(get: Callable[..., Any], task: str) -> Dict[str, Any]:
    """Name -> dataset options of the datasets `task` ("train" or "eval") scores, in order; `get` reads the
    config. Wrong forms and names are errors naming `eval_datasets`; `--task eval` with nothing to score too."""
    setting = get("eval_datasets")
    if setting is None:
        chosen = _dev_and_eval(get)
    elif isinstance(setting, dict):
        chosen = _dev_and_eval(get)
        chosen.update(_checked_entries(setting))
    elif isinstance(setting, (list, tuple)):
        chosen = _named_config_datasets(setting, get)
    else:
        raise InvalidOptionError(f"expected a dict name -> dataset options (or a list of config keys of "
                                 f"datasets), got {setting!r}", subject=_SUBJECT,
                                 suggestion="e.g. eval_datasets = {'devtrain': {'class': 'HDFDataset', ...}}")
    if task == "train" and "train" in chosen:
        raise InvalidOptionError("names a dataset 'train': its scores would overwrite the training scores of the "
                                 "same names", subject=_SUBJECT,
                                 suggestion="name it otherwise, e.g. eval_datasets = {'devtrain': train}")
    if task == "eval" and not chosen:
        raise ConfigError("nothing to evaluate: the config has neither 'dev' nor 'eval' nor 'eval_datasets'",
                          subject="config", suggestion="add dev = {'class': 'HDFDataset', 'files': [...]}")
    return chosen


def _dev_and_eval(get) -> Dict[str, Any]:
    return {key: get(key) for key in ("dev", "eval") if get(key) is not None}


def _checked_entries(setting: dict) -> Dict[str, Any]:
    for name, opts in setting.items():
        if not isinstance(name, str) or not name or any(c.isspace() for c in name):
            raise InvalidOptionError(f"dataset names must be non-empty strings without spaces, got {name!r}",
                                     subject=_SUBJECT, suggestion="e.g. {'devtrain': {...}}")
        if not isinstance(opts, dict):
            raise InvalidOptionError(f"entry {name!r} must be dataset options (a dict with 'class'), got {opts!r}",
                                     subject=_SUBJECT, suggestion="e.g. {'class': 'HDFDataset', 'files': [...]}")
    return dict(setting)


def _named_config_datasets(keys, get) -> Dict[str, Any]:
    chosen = {}
    for key in keys:
        if not isinstance(key, str):
            raise InvalidOptionError(f"a list must hold config keys of datasets (strings), got {key!r}",
                                     subject=_SUBJECT, suggestion="e.g. ['dev', 'eval']")
        if get(key) is None:
            raise InvalidOptionError(f"names {key!r}, but the config has no dataset '{key}'", subject=_SUBJECT,
                                     suggestion=f"define {key} = {{'class': ...}}, or give the options in the dict "
                                                f"form: eval_datasets = {{'{key}': {{'class': ...}}}}")
        chosen[key] = get(key)
    return chosen
