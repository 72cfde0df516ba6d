"""The network's inputs: `extern_data` (or the older `num_inputs`/`num_outputs`) as templates."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from .errors import ConfigError, InvalidOptionError, UnknownOptionError, closest_match
from .limits import INT64_MAX, beyond_int64, is_int, short_int
from .tensor import DTYPES, FEATURE, SPATIAL, Data, Dim, batch_dim
from .tensor.axes import resolve_axis

_ENTRY_OPTIONS = {
    "dim", "shape", "sparse", "dtype", "dims", "dim_tags", "sparse_dim", "batch_dim_axis", "time_dim_axis",
    "feature_dim_axis", "available_for_inference", "same_dim_tags_as", "vocab",
}


def data_from_options(key: str, opts: Dict[str, Any]) -> Data:
    """The template of extern data entry `key`, from RETURNN's Data keyword options.

    Without `dims`, the shape defaults to (time, dim) for dense and (time,) for
    sparse data; the first dynamic axis is the time dim `time:KEY`, a dense
    entry's feature dim `KEY:feature` is chosen as RETURNN does (see
    `_dims_from_shape`), a sparse entry's class dim is `KEY:sparse`.
    """
    subject = f"extern_data '{key}'"
    if not isinstance(opts, dict):
        raise InvalidOptionError(f"must be a dict of options such as {{'dim': 40}}, not {opts!r}", subject=subject)
    for name in opts:
        if name not in _ENTRY_OPTIONS:
            guess = closest_match(name, _ENTRY_OPTIONS)
            raise UnknownOptionError(f"option '{name}' unknown", subject=subject, option=name,
                                     suggestion=f"did you mean '{guess}'?" if guess else None)
    sparse = bool(opts.get("sparse", False) or opts.get("sparse_dim") is not None)
    dtype = opts.get("dtype", "int32" if sparse else "float32")
    if dtype not in DTYPES:
        raise InvalidOptionError(f"dtype {dtype!r} unknown", subject=subject, option="dtype",
                                 suggestion=f"did you mean {closest_match(dtype, DTYPES)!r}?")
    dim = opts.get("dim")
    if dim is not None and not _positive_int(dim):
        raise InvalidOptionError(f"'dim' must be a positive int (below 2**63), not {_shown(dim)}", subject=subject, option="dim")
    dim = None if dim is None else int(dim)  # a NumPy int counts; Dim sizes are Python ints
    sparse_dim: Optional[Dim] = opts.get("sparse_dim")
    if sparse_dim is not None and not isinstance(sparse_dim, Dim):
        raise InvalidOptionError(f"'sparse_dim' must be a Dim, not {sparse_dim!r}", subject=subject,
                                 option="sparse_dim", suggestion="e.g. FeatureDim('vocab', 500)")
    if sparse and sparse_dim is None:
        if dim is None:
            raise InvalidOptionError("sparse data needs 'dim' (the number of classes)", subject=subject, option="dim")
        sparse_dim = Dim(dim, FEATURE, f"{key}:sparse")
    dims = opts.get("dims", opts.get("dim_tags"))
    shape_feature_dim = None
    if dims is not None:
        if not isinstance(dims, (list, tuple)) or not all(isinstance(d, Dim) for d in dims):
            raise InvalidOptionError("'dims' must be a list of Dim objects", subject=subject, option="dims")
        dims = list(dims)
    else:
        dims, shape_feature_dim = _dims_from_shape(key, opts, sparse, dim, subject)
    time_dim = _role_dim(dims, opts.get("time_dim_axis"), "time_dim_axis", subject)
    feature_dim = _role_dim(dims, opts.get("feature_dim_axis"), "feature_dim_axis", subject)
    roles = {}
    if time_dim is not None:
        roles["time_dim"] = time_dim
    if feature_dim is not None:
        roles["feature_dim"] = feature_dim
    elif shape_feature_dim is not None:
        roles["feature_dim"] = shape_feature_dim
    try:
        data = Data(key, dims, dtype, sparse_dim=sparse_dim, **roles)
    except ValueError as exc:
        raise InvalidOptionError(str(exc), subject=subject) from None
    if not sparse and dim is not None and data.dim != dim:
        raise InvalidOptionError(f"'dim' is {dim} but the feature dim of {data.describe()} has size {data.dim}",
                                 subject=subject, option="dim")
    same = opts.get("same_dim_tags_as") or {}
    if not isinstance(same, dict):
        raise InvalidOptionError("'same_dim_tags_as' must be a dict: axis -> Dim", subject=subject,
                                 option="same_dim_tags_as")
    for axis_desc, other in same.items():
        mine = data.dims[resolve_axis(data, axis_desc, option="same_dim_tags_as")]
        if not isinstance(other, Dim):
            raise InvalidOptionError("'same_dim_tags_as' values must be Dim objects", subject=subject,
                                     option="same_dim_tags_as")
        mine.declare_same_as(other)
    return data


def _dims_from_shape(key, opts, sparse, dim, subject):
    """The dims of `shape` (plus the batch dim), with the feature dim of dense data as `feature_dim`.

    As in RETURNN: the first dynamic axis is the time axis; the feature axis of dense data is the last static
    axis (`{'dim': 5, 'shape': (5, None)}` is `[B, F|5, T]`), else a last `None` axis that `dim` sizes, else
    (`'dim': None`) the last dynamic axis after the time axis; data with only a time axis (int sequences of
    `shape: (None,)`) has no feature axis.
    """
    shape = opts.get("shape")
    if shape is None:
        shape = (None,) if sparse else (None, dim)
    if not isinstance(shape, (list, tuple)) or not all(s is None or _positive_int(s) for s in shape):
        raise InvalidOptionError(f"'shape' must be a tuple of ints (below 2**63) and None, not {_shown(shape)}", subject=subject,
                                 option="shape")
    shape = tuple(None if s is None else int(s) for s in shape)
    feature_axis = None if sparse else _feature_axis_of_shape(shape, dim)
    dims = []
    dynamic_count = 0
    for i, size in enumerate(shape):
        if i == feature_axis and (size is not None or dim is not None):
            dims.append(Dim(size if size is not None else dim, FEATURE, f"{key}:feature"))
        elif size is None:
            dims.append(Dim(None, SPATIAL, f"time:{key}" if dynamic_count == 0 else f"{key}:spatial{dynamic_count}"))
            dynamic_count += 1
        else:
            dims.append(Dim(size, SPATIAL, f"{key}:static{i}"))
    feature_dim = None if feature_axis is None else dims[feature_axis]
    batch_axis = opts.get("batch_dim_axis", 0)
    if batch_axis is not None and (not is_int(batch_axis) or not 0 <= batch_axis <= len(dims)):
        raise InvalidOptionError(f"'batch_dim_axis' must be an axis index 0..{len(dims)} or None, not {batch_axis!r}",
                                 subject=subject, option="batch_dim_axis")
    if batch_axis is not None:
        dims.insert(int(batch_axis), batch_dim)
    return dims, feature_dim


def _feature_axis_of_shape(shape, dim) -> Optional[int]:
    """The axis of `shape` (no batch axis) that is the feature axis of dense data (see `_dims_from_shape`)."""
    static = [i for i, size in enumerate(shape) if size is not None]
    if static:
        return static[-1]
    if shape and dim is not None:
        return len(shape) - 1
    dynamic_after_time = [i for i, size in enumerate(shape) if size is None][1:]
    return dynamic_after_time[-1] if dynamic_after_time else None


def _shown(value) -> str:
    """repr(value), with huge integers shortened (repr of an int of more than 4300 digits raises)."""
    big = beyond_int64(value)
    return repr(value) if big is None or big.bit_length() <= 256 else f"{type(value).__name__} with {short_int(big)}"


def _positive_int(value) -> bool:
    return is_int(value) and 0 < value <= INT64_MAX


def _role_dim(dims, axis, option, subject):
    if axis is None:
        return None
    if not is_int(axis) or not -len(dims) <= axis < len(dims):
        raise InvalidOptionError(f"'{option}' {axis!r} is not an axis of {len(dims)} axes", subject=subject,
                                 option=option)
    return dims[axis]


def extern_data_from_config(values: Dict[str, Any]) -> Dict[str, Data]:
    """All extern data templates a config defines, by key.

    `extern_data` wins; otherwise `num_inputs` (dense "data") and
    `num_outputs` ({key: dim}, {key: [dim, ndim]} with ndim 1 for sparse, or {key: {data options}} as an
    `extern_data` entry).
    """
    if values.get("extern_data") is not None:
        entries = values["extern_data"]
        if not isinstance(entries, dict):
            raise InvalidOptionError("must be a dict: key -> options", subject="config key 'extern_data'")
        return {key: data_from_options(key, opts) for key, opts in entries.items()}
    entries = _entries_of_num_settings(values)
    if not entries:
        raise ConfigError("the config defines no inputs", subject="config", suggestion="add extern_data = "
                          "{'data': {'dim': ...}, 'classes': {'dim': ..., 'sparse': True}}")
    return {key: data_from_options(key, opts) for key, opts in entries.items()}


_MAX_NUM_OUTPUTS_NDIM = 8
"""Axes (besides the batch) a `num_outputs` entry [dim, ndim] may give its data."""


def _entries_of_num_settings(values: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """The extern_data entries (key -> data options) that `num_inputs` and `num_outputs` define."""
    entries: Dict[str, Dict[str, Any]] = {}
    if values.get("num_inputs") is not None:
        entries["data"] = {"dim": values["num_inputs"], "sparse": bool(values.get("sparse_input", False))}
    outputs = values.get("num_outputs")
    if is_int(outputs):
        outputs = {"classes": [int(outputs), 1]}
    if outputs is not None and not isinstance(outputs, dict):
        raise InvalidOptionError(f"must be a number of classes or a dict key -> dim or [dim, ndim], not "
                                 f"{type(outputs).__name__}", subject="config key 'num_outputs'",
                                 option="num_outputs", suggestion="e.g. num_outputs = 10, or "
                                 "num_outputs = {'data': [9, 2], 'classes': [10, 1]}")
    for key, spec in (outputs or {}).items():
        if isinstance(spec, dict):  # RETURNN takes a dict entry as the data's options, as in extern_data
            entries[key] = dict(spec)
            continue
        if is_int(spec):
            spec = [int(spec), 1 if key != "data" else 2]
        if not isinstance(spec, (list, tuple)) or len(spec) < 2:
            raise InvalidOptionError(f"num_outputs['{key}'] must be dim, [dim, ndim] or a dict of data options, "
                                     f"not {spec!r}", subject="config key 'num_outputs'", option="num_outputs",
                                     suggestion=f"e.g. num_outputs = {{'{key}': [10, 1]}} (ndim 1: sparse labels)")
        size, ndim = spec[0], spec[1]
        if not is_int(ndim) or ndim < 1:
            raise InvalidOptionError(f"num_outputs['{key}']: ndim must be an int >= 1 (1: sparse labels, 2: dense "
                                     f"frames), not {ndim!r}", subject="config key 'num_outputs'", option="num_outputs",
                                     suggestion=f"e.g. num_outputs = {{'{key}': [{size!r}, 1]}}")
        if ndim > _MAX_NUM_OUTPUTS_NDIM:  # (each axis is a dynamic dim of its own)
            raise InvalidOptionError(f"num_outputs['{key}']: ndim {ndim} is more axes than a data entry has (at most "
                                     f"{_MAX_NUM_OUTPUTS_NDIM})", subject="config key 'num_outputs'",
                                     option="num_outputs", suggestion=f"e.g. num_outputs = {{'{key}': [{size!r}, 2]}} "
                                     "(ndim 2: frames of dim features)")
        entries[key] = {"dim": size, "sparse": True} if ndim == 1 else \
            {"dim": size, "shape": (None,) * (ndim - 1) + (size,)}  # as RETURNN: ndim - 1 dynamic axes, then dim
    return entries


def shadowed_input_notices(values: Dict[str, Any]) -> List[str]:
    """Notices for `num_inputs`/`num_outputs` set beside `extern_data` (which alone then defines the inputs) with
    other dims than extern_data's; agreeing ones are the usual helper variables and get none."""
    extern = values.get("extern_data")
    if not isinstance(extern, dict):
        return []
    notices = []
    for key in ("num_inputs", "num_outputs"):
        if values.get(key) is None:
            continue
        try:
            implied = _entries_of_num_settings({key: values[key]})
        except InvalidOptionError:
            why = f"{values[key]!r} is no {key} setting"
        else:
            differing = [data_key for data_key, opts in implied.items()
                         if not isinstance(extern.get(data_key), dict)
                         or extern[data_key].get("dim") != opts.get("dim")]
            if not differing:
                continue
            why = f"its '{differing[0]}' is not {implied[differing[0]].get('dim')!r}"
        notices.append(f"config key '{key}' has no effect: extern_data defines the network's inputs, and {why}; "
                       f"ignored")
    return notices
