"""The Python API: `netcompiler.load_network(config)` for users and tools.

    net = netcompiler.load_network("configs/demo-12ax-lstm.py")    # or a config dict
    net.layers["lstm"]                       # the template (Data) of a layer
    net.params["lstm/rec/W"]                 # a parameter's value as a NumPy array (settable)
    out = net.forward({"data": x}, {"data": lengths})
    out = net.forward({"img": x}, {"img": [lengths_h, lengths_w]})   # several dynamic axes (or {"T": ..})
    out["output"].value, out["output"].template, out["output"].sizes

Templates need no framework; parameters and `forward` run on a backend
("tensorflow"), created on first use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Iterator, Mapping, MutableMapping, Optional, Union

import numpy as np

from .builtin import load_builtin_layers
from .config import Config, load_config
from .errors import ConfigError, closest_match
from .network import Network, build_network
from .tensor import Data, Dim, resolve_axis


@dataclass
class LayerOutput:
    """One layer's output of a forward pass: its values (padded, laid out as `template`), its template, and the
    per-sequence sizes of its dynamic dims."""

    value: np.ndarray
    template: Data
    sizes: Dict[Dim, np.ndarray]


def load_network(config: Union[str, Mapping[str, Any]], *, extern_data: Optional[Mapping[str, Any]] = None,
                 overrides=()) -> "LoadedNetwork":
    """The network of a config file (path), of a config dict (with "network" and "extern_data"), or of a plain
    network dict (then `extern_data` is given here). Errors in it are `ConfigError`s naming layer and option."""
    load_builtin_layers()
    if isinstance(config, str):
        loaded = load_config(config, overrides)
    elif isinstance(config, Mapping):
        values = dict(config) if "network" in config else {"network": dict(config)}
        if extern_data is not None:
            values["extern_data"] = dict(extern_data)
        loaded = Config(values)
    else:
        raise TypeError(f"load_network takes a config path or dict, not {type(config).__name__}")
    from .engine.epoch_networks import final_config  # pretrain / get_network: the final network

    return LoadedNetwork(build_network(final_config(loaded)), seed=loaded.get("random_seed", 42))


class LoadedNetwork:
    """A built network: its templates, its parameters as NumPy arrays, and forward passes on a backend."""

    def __init__(self, network: Network, seed: int = 42):
        self.network = network
        self.seed = seed
        self.layers: Dict[str, Data] = {layer.name: layer.output for layer in network.all_layers()}
        """Layer name -> output template, every built layer (nested ones as "sub/inner")."""
        self._models: Dict[str, Any] = {}
        self.params = ParamValues(self)

    @property
    def notices(self):
        return list(self.network.notices)

    def model(self, backend: str = "tensorflow"):
        """The `CompiledNetwork` on `backend` (made on first use, with the current parameter values)."""
        if backend not in self._models:
            from .emit.model import CompiledNetwork

            model = CompiledNetwork(self.network, seed=self.seed, backend=backend)
            for name, value in self.params.assigned.items():
                model.backend.assign_raw(model.params[name], value)
            self._models[backend] = model
        return self._models[backend]

    def forward(self, inputs: Mapping[str, Any], seq_lens: Optional[Mapping[str, Any]] = None, *,
                backend: str = "tensorflow", training: bool = False) -> Dict[str, LayerOutput]:
        """Every built layer's output for these inputs (a loop body's layers: only those read from outside as
        "rec/x", stacked over the loop; NumPy arrays laid out as extern_data says). `seq_lens`: per key, the
        lengths of its dynamic axes, one int per sequence: one array (the time axis), a list of arrays (one per
        dynamic axis, in axis order), or a dict by axis (a Dim or an axis description such as "T" or
        "dim:..."); an axis without lengths is taken as full. Layers that need an input not given (e.g. a loss
        target) are left out."""
        model = self.model(backend)
        inputs = {key: np.asarray(value) for key, value in inputs.items()}
        given = dict(seq_lens or {})
        sizes: Dict[Dim, np.ndarray] = {}
        for key, value in inputs.items():
            data = self.network.extern_data.get(key)
            if data is None:
                guess = closest_match(key, self.network.extern_data)
                raise ConfigError(f"forward: no extern data '{key}'", subject="inputs",
                                  suggestion=f"did you mean '{guess}'?" if guess else
                                  f"keys: {', '.join(self.network.extern_data)}")
            sizes.update(_lengths_by_dim(key, data, value, given.get(key)))
        lengths = {key: sizes[data.time_dim] for key, data in self.network.extern_data.items()
                   if key in inputs and data.time_dim in sizes}
        ctx = model.forward(inputs, lengths, training=training, emit_all=False)
        outputs = {}
        computable = _computable(self.network, set(inputs))
        with ctx.run:
            for dim, per_sequence in sizes.items():
                if dim not in ctx.run.sizes:  # the dynamic axes other than the time axis
                    ctx.run.set_size(dim, per_sequence)
            for layer in self.network.all_layers():
                if layer.network.inside_loop or not computable(layer):
                    continue  # inside a loop: a value per step only; what is read from outside ("rec/x") is stacked
                tensor = ctx.value(layer)
                sizes = {dim: np.asarray(model.backend.to_numpy(ctx.run.size(dim).raw))
                         for dim in layer.output.dynamic_dims}
                outputs[layer.name] = LayerOutput(model.backend.to_numpy(tensor.raw), layer.output, sizes)
        return outputs


def _lengths_by_dim(key: str, data: Data, value: np.ndarray, given: Any) -> Dict[Dim, np.ndarray]:
    """The lengths of each dynamic axis of extern data `key` (template `data`, array `value`) from the form a
    caller gave them in (see `LoadedNetwork.forward`); axes not given: full."""
    dynamic = list(data.dynamic_dims)
    expected = (f"one int array [batch] (the time axis), a list of {len(dynamic)} such arrays (one per dynamic "
                f"axis: {', '.join(data.dim_label(d) for d in dynamic)}), or a dict by axis")
    by_dim: Dict[Dim, Any] = {}
    if isinstance(given, Mapping):
        for axis, lengths in given.items():
            try:
                dim = axis if isinstance(axis, Dim) else data.dims[resolve_axis(data, axis)]
            except ConfigError as exc:
                raise ConfigError(f"forward: seq_lens['{key}'] names axis {axis!r}: {exc}", subject="seq_lens",
                                  suggestion=expected) from None
            if dim not in dynamic:
                raise ConfigError(f"forward: seq_lens['{key}'] gives lengths for {data.dim_label(dim)}, which is "
                                  f"not a dynamic axis of {data.describe()}", subject="seq_lens",
                                  suggestion=expected)
            by_dim[dim] = lengths
    elif given is not None:
        per_axis = list(given) if isinstance(given, (list, tuple)) and any(np.ndim(g) for g in given) else None
        array = np.asarray(given) if per_axis is None else None
        if array is not None and array.ndim == 1 and data.time_dim in dynamic:
            by_dim[data.time_dim] = array
        elif array is not None and array.ndim == 2 and array.shape[0] == len(dynamic):
            by_dim.update(zip(dynamic, array))
        elif per_axis is not None and len(per_axis) == len(dynamic):
            by_dim.update(zip(dynamic, per_axis))
        else:
            what = f"has shape {array.shape}" if array is not None else f"is a list of {len(per_axis)} arrays"
            raise ConfigError(f"forward: seq_lens['{key}'] {what}, which does not fit {data.describe()}",
                              subject="seq_lens", suggestion=f"give {expected}")
    batch = value.shape[data.batch_dim_axis] if data.batch_dim_axis is not None else None
    result = {}
    for dim in dynamic if batch is not None else ():
        padded = value.shape[data.axis_of(dim)]
        lengths = np.asarray(by_dim[dim]) if dim in by_dim else np.full([batch], padded, np.int32)
        if lengths.shape != (batch,) or lengths.dtype.kind not in "iu" or (lengths > padded).any() \
                or (lengths < 0).any():
            raise ConfigError(f"forward: the lengths of {data.dim_label(dim)} of '{key}' are {lengths.tolist()}; "
                              f"expected {batch} ints from 0 to {padded} (one per sequence, at most the padded "
                              f"length)", subject="seq_lens",
                              suggestion=f"e.g. np.full({batch}, {padded}) when no sequence is padded")
        result[dim] = lengths.astype(np.int32)
    return result


def _computable(network: Network, given: set):
    """A predicate: can `layer` be computed from the extern data keys `given`? A layer cannot when it reads,
    directly or through other layers (a nested network's layers also through their owner), the source of a key
    that was not given."""
    known: Dict[int, bool] = {}

    def check(layer) -> bool:
        key = id(layer)
        if key not in known:
            known[key] = True  # a guard against cycles through a nested network's owner
            owner = getattr(layer.network, "owner", None)
            if layer.layer_class == "source" and layer.network.parent is None:
                known[key] = layer.opts["data_key"] in given
            else:
                deps = list(layer.dependencies()) + ([owner] if owner is not None and owner is not layer else [])
                known[key] = all(check(dep) for dep in deps)
        return known[key]

    return check


class ParamValues(MutableMapping):
    """Parameter name -> NumPy array. Setting one checks its shape and reaches every backend's variables."""

    def __init__(self, owner: LoadedNetwork):
        self._owner = owner
        self._specs = {name: spec for name, _, spec in owner.network.all_params()}
        self.assigned: Dict[str, np.ndarray] = {}

    def __getitem__(self, name: str) -> np.ndarray:
        self._check_name(name)
        model = self._owner.model()
        return np.array(model.backend.to_numpy(model.params[name]))

    def __setitem__(self, name: str, value: Any) -> None:
        self._check_name(name)
        spec = self._specs[name]
        value = np.asarray(value, dtype=spec.dtype)
        if tuple(value.shape) != spec.sizes:
            raise ConfigError(f"parameter '{name}' has shape {spec.sizes}, not {tuple(value.shape)}",
                              subject="params", suggestion=f"give an array of shape {spec.sizes}")
        self.assigned[name] = value
        for model in self._owner._models.values():
            model.backend.assign_raw(model.params[name], value)

    def __delitem__(self, name: str) -> None:
        raise TypeError("parameters cannot be removed")

    def __iter__(self) -> Iterator[str]:
        return iter(self._specs)

    def __len__(self) -> int:
        return len(self._specs)

    def _check_name(self, name: str) -> None:
        if name not in self._specs:
            guess = closest_match(name, self._specs)
            raise KeyError(f"no parameter '{name}'" + (f"; did you mean '{guess}'?" if guess else ""))
