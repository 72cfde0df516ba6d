"""Equal layers: layers of a network that compute the same function of their inputs and parameters (same class,
options and input and output layouts; e.g. the 5000 linear layers of a deep chain), found from their templates.

On a backend that has them, each class of many equal layers gets its parameters as groups (one stacked variable
per parameter name: `CompiledNetwork`) and is emitted as calls of one traced function (`SharedEmission`): a
graph then grows by a few nodes per layer instead of the ~30 a written-out linear layer and its update take, which
is what builds a 5000-layer chain in a minute (benchmarks/README.md, "chain_floor.py"). A class of fewer than
`min_layers` layers stays written out: the functions' steps keep more for the backward pass (TensorFlow derives a
function's gradient from its graph and keeps what that gradient reads: on a 400-layer chain the peak was 1.48x,
at the same speed and a third less build time; benchmarks/README.md, session 21).
"""

from __future__ import annotations

from typing import Any, Dict, Hashable, List, Optional, Tuple

from ..tensor import Data, Tensor

SHAREABLE_CLASSES = frozenset({"linear"})
"""Layer classes whose emission reads only their sources, parameters and options (no state, no other layers)."""

DEFAULT_MIN_LAYERS = 1024
"""Fewest equal layers that are grouped and share a function, unless the config says (`tf_equal_layers_min`)."""

CONFIG_KEY = "tf_equal_layers_min"

_NOT_EMISSION = frozenset({"from", "L2", "is_output_layer", "forward_weights_init", "bias_init"})
"""Options that do not change what the layer computes from its inputs and parameters (initial values, the
L2 term, being an output: all outside the emission)."""


def _layout(data: Data) -> Tuple[Any, ...]:
    """What the emission sees of a template: dynamic and batch dims themselves (their sizes are the run's),
    static ones by kind and size, and which is the feature dim; dtype and sparsity."""
    dims = tuple(dim if dim.is_dynamic or dim.is_batch else (dim.kind, dim.size) for dim in data.dims)
    return dims, data.feature_dim_axis, data.dtype, data.sparse


def emission_key(layer) -> Optional[Hashable]:
    """What two layers share when they compute the same function, or None for a layer that cannot share."""
    if layer.layer_class not in SHAREABLE_CLASSES or layer.loss is not None \
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
    from ..limits import is_int

    value = values.get(CONFIG_KEY, DEFAULT_MIN_LAYERS)
    if value is None or value is False:
        return 0
    if not is_int(value) or value < 0 or value == 1:
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


BLOCK_LAYERS = 8
"""Most consecutive layers of a chain one call computes: a call costs ~0.25 ms of TensorFlow's time per step,
forward and backward; a call per layer made a 400-layer chain's step 20% slower (benchmarks/README.md,
session 21)."""


def blocks_of(members: List[Any], size: int = BLOCK_LAYERS) -> List[List[Any]]:
    """`members` (of one class, in build order) cut into blocks: runs of up to `size` layers each reading only
    the layer before it."""
    blocks: List[List[Any]] = []
    for layer in members:
        if blocks and len(blocks[-1]) < size and layer.sources == [blocks[-1][-1]]:
            blocks[-1].append(layer)
        else:
            blocks.append([layer])
    return blocks


class SharedEmission:
    """How the layers of equal-layer classes are emitted: each class cut into blocks of consecutive layers
    (`blocks_of`), every block a call of the class's function for blocks of its length (the first such block's
    emission, traced with its inputs and parameters as arguments). `for_pass` gives the state of one pass."""

    def __init__(self, classes: List[List[Any]]):
        self._block_of: Dict[int, Tuple[List[Any], List[Any]]] = {}
        """id(layer) -> (its block, the first block of the same class and length: what the function traces)."""
        for members in classes:
            traced: Dict[int, List[Any]] = {}
            for block in blocks_of(members):
                traced.setdefault(len(block), block)
                self._block_of.update((id(layer), (block, traced[len(block)])) for layer in block)

    def for_pass(self) -> "SharedPass":
        return SharedPass(self._block_of)


class SharedPass:
    """The functions traced in one pass (a train step's trace, an eval step's: each its own) and the outputs of
    the blocks emitted so far."""

    def __init__(self, block_of: Dict[int, Tuple[List[Any], List[Any]]]):
        self._block_of = block_of
        self._functions: Dict[int, Any] = {}
        """id(first layer of the traced block) -> the backend's function."""
        self._outputs: Dict[int, Any] = {}
        """id(layer) -> its raw output, for the layers of blocks already called."""

    def covers(self, layer) -> bool:
        return id(layer) in self._block_of

    def emit(self, ctx, layer) -> Optional[Tensor]:
        """`layer`'s output from a call of its block's function, or None where the backend has none (eager)."""
        if id(layer) not in self._outputs:
            block, traced = self._block_of[id(layer)]
            function = self._functions.get(id(traced[0]))
            if function is None:
                function = ctx.run.backend.shared_function_raw(lambda *raws: _block_body(ctx, traced, raws))
                if function is None:
                    return None
                self._functions[id(traced[0])] = function
            raws = [ctx.value_for(block[0], source).raw for source in block[0].sources]
            raws += [ctx.param(member, name).raw for member in block for name in sorted(member.params)]
            outputs = function(*raws)
            self._outputs.update((id(member), raw) for member, raw in zip(block, outputs))
        return Tensor(layer.output, self._outputs.pop(id(layer)))


def _block_body(ctx, block: List[Any], raws) -> List[Any]:
    """A block's function: its layers' emissions, the first one's sources and every layer's parameters (in
    order, each layer's by name) given as `raws`; returns every layer's output."""
    from .context import EmitContext

    first = block[0]
    sources, params = raws[:len(first.sources)], iter(raws[len(first.sources):])
    own = {layer.param_full_name(name): Tensor(ctx.param(layer, name).data, next(params))
           for layer in block for name in sorted(layer.params)}
    scratch = EmitContext(first.network, ctx.run, own, {})
    for source, raw in zip(first.sources, sources):
        scratch.preset(source, lambda source=source, raw=raw: Tensor(source.output, raw))
    return [scratch.value(layer).raw for layer in block]
