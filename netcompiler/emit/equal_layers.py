"""Equal layers: layers of a network that compute the same function of their inputs and parameters (same class,
options and input and output layouts; e.g. the 5000 linear layers of a deep chain), found from their templates.

On a backend that has them, each class of many equal layers gets its parameters as groups (one stacked variable
per parameter name: `CompiledNetwork`) and is emitted as calls of one traced function (`SharedEmission`): a
graph then grows by a few nodes per layer instead of the ~30 a written-out linear layer and its update take, which
is what builds a 5000-layer chain in a minute (benchmarks/README.md, "chain_floor.py"). A class of fewer than
`min_layers` layers stays written out: a call per layer costs a little time and memory in the step.
"""

from __future__ import annotations

from typing import Any, Dict, Hashable, List, Optional, Tuple

from ..tensor import Data, Tensor

SHAREABLE_CLASSES = frozenset({"linear"})
"""Layer classes whose emission reads only their sources, parameters and options (no state, no other layers)."""

DEFAULT_MIN_LAYERS = 256
"""Fewest equal layers that are grouped and share a function, unless the config says (`tf_equal_layers_min`)."""

CONFIG_KEY = "tf_equal_layers_min"

_NOT_EMISSION = frozenset({"from", "L2", "is_output_layer", "forward_weights_init", "bias_init", "trainable"})
"""Options that do not change what the layer computes from its inputs and parameters (initial values, the
L2 term, being an output: all outside the emission)."""


def _layout(data: Data) -> Tuple[Any, ...]:
    """What the emission sees of a template: dynamic and batch dims themselves (their sizes are the run's),
    static ones by kind and size, and which is the feature dim; dtype and sparsity."""
    dims = tuple(dim if dim.is_dynamic or dim.is_batch else (dim.kind, dim.size) for dim in data.dims)
    return dims, data.feature_dim_axis, data.dtype, data.sparse


def emission_key(layer) -> Optional[Hashable]:
    """What two layers share when they compute the same function, or None for a layer that cannot share."""
    if layer.layer_class not in SHAREABLE_CLASSES or getattr(layer, "loss", None) is not None \
            or layer.opts.get("reuse_params") or layer.opts.get("batch_norm"):
        return None
    options = tuple(sorted((key, repr(value)) for key, value in layer.opts.items() if key not in _NOT_EMISSION))
    params = tuple((name, spec.sizes, spec.dtype, spec.trainable) for name, spec in sorted(layer.params.items()))
    return (layer.layer_class, options, params, _layout(layer.output),
            tuple(_layout(source.output) for source in layer.sources))


def min_layers_setting(values: Dict[str, Any], log=None) -> int:
    """The config's `tf_equal_layers_min` (an int >= 2, or 0 / None / False: never), else `DEFAULT_MIN_LAYERS`.
    0 where `gradient_clip_norm` is set: it clips each parameter's gradient by its own norm, which a group's one
    gradient would change (a notice says so when the config also set the key)."""
    from ..errors import InvalidOptionError

    value = values.get(CONFIG_KEY, DEFAULT_MIN_LAYERS)
    if value is None or value is False:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0 or value == 1:
        raise InvalidOptionError(f"expected an int >= 2 (the fewest equal layers that share parameter groups and "
                                 f"one traced function) or 0 for never, not {value!r}", subject=f"config key "
                                 f"'{CONFIG_KEY}'", suggestion=f"e.g. {DEFAULT_MIN_LAYERS} (the default), or 0")
    if value and values.get("gradient_clip_norm"):
        if CONFIG_KEY in values and log is not None:
            print(f"notice: config key '{CONFIG_KEY}' has no effect with 'gradient_clip_norm' (each parameter's "
                  f"gradient clipped by its own norm): every layer keeps parameters of its own", file=log)
        return 0
    return value


def equal_layer_classes(network, min_layers: int) -> List[List[Any]]:
    """The classes of at least `min_layers` equal layers of `network`'s top level, each in build order."""
    if not min_layers or min_layers < 2:
        return []
    classes: Dict[Hashable, List[Any]] = {}
    for layer in network.layers.values():
        key = emission_key(layer)
        if key is not None:
            classes.setdefault(key, []).append(layer)
    return [members for members in classes.values() if len(members) >= min_layers]


class SharedEmission:
    """Emits the layers of equal-layer classes as calls of one traced function per class and pass: the first
    layer's emission, traced with its sources and parameters as the function's arguments."""

    def __init__(self, classes: List[List[Any]]):
        self._class_of = {id(layer): members[0] for members in classes for layer in members}
        self._functions: Dict[int, Any] = {}
        """Per class (id of its first layer): the backend's traced function of this pass."""

    def covers(self, layer) -> bool:
        return id(layer) in self._class_of

    def emit(self, ctx, layer) -> Optional[Tensor]:
        """`layer`'s output as a call of its class's function, or None where the backend has none (eager)."""
        first = self._class_of[id(layer)]
        function = self._functions.get(id(first))
        if function is None:
            function = ctx.run.backend.shared_function_raw(lambda *raws: self._trace(ctx, first, raws))
            if function is None:
                return None
            self._functions[id(first)] = function
        names = sorted(layer.params)
        raws = [ctx.value_for(layer, source).raw for source in layer.sources] + \
            [ctx.param(layer, name).raw for name in names]
        return Tensor(layer.output, function(*raws))

    @staticmethod
    def _trace(ctx, first, raws):
        """The body of the class's function: `first`'s emission on the given sources and parameters."""
        from .context import EmitContext, LayerInputs, conform_to_template

        sources, params = raws[:len(first.sources)], raws[len(first.sources):]
        names = sorted(first.params)
        own = {first.param_full_name(name): Tensor(ctx.param(first, name).data, raw)
               for name, raw in zip(names, params)}
        scratch = EmitContext(first.network, ctx.run, own, {})
        for source, raw in zip(first.sources, sources):
            scratch.preset(source, lambda source=source, raw=raw: Tensor(source.output, raw))
        return conform_to_template(first, first.emit(LayerInputs(scratch, first)), ctx.run.backend).raw
