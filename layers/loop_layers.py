"""Layers of RETURNN's `rec` module that carry no state from step to step: positional_encoding,
relative_positional_encoding, generic_attention, rec_unstack, rec_last_output.

Inside a loop body (a `rec` unit dict) a layer sees one step; the step's number is the body's ":i" layer, which
the layers that need it read (and list as a dependency, so that the loop keeps them inside the loop).
"""

import math
from typing import List, Optional, Tuple

import numpy as np

from netcompiler import frontend as rf
from netcompiler.errors import DimMismatchError
from netcompiler.layer_base import NONE_TYPE, REQUIRED, LayerBase, Option, ParamSpec
from netcompiler.references import STEP_INDEX_TEXT
from netcompiler.tensor import INT_DTYPES, SPATIAL, Data, Dim, Tensor, batch_dim, resolve_dim
from netcompiler.tensor.dim import same_size_dim

from .attention import check_float_input

AXIS = (str, int, Dim)
MAX_TIMESCALE = 1.0e4
"""The longest wavelength (over 2 pi) of the sinusoids, as in Tensor2Tensor and RETURNN."""


def sinusoids(position: Tensor, feature: Dim) -> Tensor:
    """RETURNN's (Tensor2Tensor's) positional encoding of int positions: `position`'s dims plus `feature` (n
    channels). With h = n // 2 and rates r_k = exp(-k ln(1e4) / max(h - 1, 1)): channel k < h is sin(p r_k),
    channel h + k is cos(p r_k), and an odd n's last channel is 0."""
    n = feature.size
    half = n // 2
    rates = np.exp(-np.arange(half, dtype=np.float64) * math.log(MAX_TIMESCALE) / max(half - 1, 1))
    frequency = np.zeros(n, np.float32)
    frequency[:half] = frequency[half:2 * half] = rates
    is_cos = np.zeros(n, bool)
    is_cos[half:2 * half] = True
    scaled = rf.cast(position, "float32") * rf.convert_to_tensor(frequency, dims=[feature], dtype="float32")
    cos_channels = rf.convert_to_tensor(is_cos, dims=[feature], dtype="bool")
    return rf.where(cos_channels, rf.cos(scaled), rf.sin(scaled), dim_order=scaled.dims)


def _local_name(layer: LayerBase) -> str:
    prefix = layer.network.prefix
    return layer.name[len(prefix):] if prefix and layer.name.startswith(prefix) else layer.name


def _step_layer(layer: LayerBase) -> LayerBase:
    """The ":i" layer of the loop body `layer` is in (the body makes it once per inference round)."""
    return layer.network.step_index_layer(_local_name(layer), "from")


def _loop_owner(layer: LayerBase) -> Optional[LayerBase]:
    """The rec layer whose loop body `layer` is directly in; None outside a loop body."""
    network = layer.network
    return getattr(network, "owner", None) if network.per_step else None


def _with_dims(x: Tensor, dims) -> Tensor:
    """`x` repeated along those of `dims` it lacks."""
    for dim in dims:
        if not x.has_dim(dim):
            x = rf.expand_dim(x, dim)
    return x


class PositionalEncodingLayer(LayerBase):
    """RETURNN's sinusoidal positional encoding (`sinusoids`): of the frames of the input's time axis outside a
    loop, of the current step inside one (then the input is ":i" by default).

    Options: `n_out` (the number of channels; needed unless `add_to_input`), `axis` (None: the input's time
    axis if it has one, else the step of the loop), `add_to_input` (False: the encoding plus the input, which
    keeps its template), `constant` (-1: a value >= 0 is the position of every frame), `offset` (None: an int
    layer added to the positions; its dims among the output's, without the feature dim).
    The output is float32: the input's dims without its feature dim (the batch dim first if it had none), then
    the channels. Inside and outside a loop a frame at position p gets the same values.
    """

    layer_class = "positional_encoding"
    default_from = None  # as in RETURNN: ":i" inside a loop, "data" outside
    options = {
        "n_out": Option(None, (int, NONE_TYPE)),
        "axis": Option(None, AXIS + (NONE_TYPE,)),
        "add_to_input": Option(False, (bool,)),
        "constant": Option(-1, (int,)),
        "offset": Option(None, (str, NONE_TYPE), ref="layer"),
    }

    @classmethod
    def transform_config_dict(cls, opts, network, get_layer):
        if opts.get("from") is None:
            opts["from"] = STEP_INDEX_TEXT if network.per_step else "data"
        return super().transform_config_dict(opts, network, get_layer)

    def make_output(self):
        if len(self.sources) != 1:
            raise self.error(f"positional_encoding needs exactly one input in 'from', got {len(self.sources)}",
                             option="from")
        x = self.sources[0].output
        axis = self._axis(x)
        if axis is None:
            _step_layer(self)  # made now, so that the body knows this layer reads the step
        n_out = self.opts["n_out"]
        if self.opts["add_to_input"]:
            check_float_input(self, x, self.sources[0].name)
            if x.feature_dim is None or (n_out is not None and x.feature_dim.size != n_out):
                raise self.error(f"with 'add_to_input' the input {x.describe()} must have a feature dim of 'n_out' "
                                 f"({n_out}) channels", option="n_out", kind=DimMismatchError,
                                 suggestion="remove 'n_out' or make it the input's feature size")
            out = x.copy(name=self.name)
        else:
            if n_out is None:
                raise self.error("positional_encoding needs 'n_out' (the number of channels) unless 'add_to_input'",
                                 option="n_out")
            feature = self.new_feature_dim(n_out)
            dims = [d for d in x.dims if d != x.feature_dim]
            if batch_dim not in dims:
                dims.insert(0, batch_dim)
            out = Data(self.name, dims + [feature], "float32", time_dim=axis, feature_dim=feature)
        self._check_offset(out)
        return out

    def _axis(self, x: Data) -> Optional[Dim]:
        """The axis whose frames are encoded; None: the step of the loop."""
        desc = self.opts["axis"]
        if desc is None:
            if x.time_dim is not None:
                return x.time_dim
            if self.network.per_step:
                return None
            raise self.error(f"outside a rec loop the input must have a time axis, not {x.describe()}",
                             option="from", suggestion="give an input with a time axis (e.g. 'data') or 'axis'")
        axis = resolve_dim(x, desc, layer=self.name, option="axis")
        if axis.is_batch or axis == x.feature_dim:
            raise self.error(f"'axis' must be a spatial axis, not {x.dim_label(axis)} of {x.describe()}",
                             option="axis")
        return axis

    def _check_offset(self, out: Data) -> None:
        offset = self.opts["offset"]
        if offset is None:
            return
        data = offset.output
        if data.dtype not in INT_DTYPES or any(not out.has_dim(d) or d == out.feature_dim for d in data.dims):
            raise self.error(f"'offset' layer '{offset.name}' {data.describe()} {data.dtype} must hold ints with dims "
                             f"among the output's {out.describe()} without its feature dim", option="offset",
                             kind=DimMismatchError)

    def dependencies(self) -> List[LayerBase]:
        deps = super().dependencies()
        if self._axis(self.sources[0].output) is None:
            step = _step_layer(self)
            deps += [step] if step not in deps else []
        return deps

    def emit(self, inputs):
        source = inputs.sources[0]
        axis = self._axis(self.sources[0].output)
        constant = self.opts["constant"]
        if constant >= 0:
            position = rf.convert_to_tensor(constant, dtype="int32")
        elif axis is None:
            position = inputs.value(_step_layer(self))
        else:
            position = rf.range_over_dim(axis, like=source)
        if self.opts["offset"] is not None:
            position = position + rf.cast(inputs.value(self.opts["offset"]), "int32")
        out = self.output
        signal = sinusoids(position, out.feature_dim)
        if self.opts["add_to_input"]:
            return inputs.x + signal
        return _with_dims(signal, out.dims)


class RelativePositionalEncodingLayer(LayerBase):
    """Shaw et al. (2018) relative positions: for query frame i and key frame j of the input's time axis, row
    clip(j - i, -clipping, clipping) + clipping of a [2 clipping + 1, n_out] table (a parameter
    "encoding_matrix", or with `fixed` the sinusoids of positions 0 .. 2 clipping).

    Options: `n_out` (the channels), `clipping` (16), `fixed` (False), `forward_weights_init`
    ("glorot_uniform"). The output has no batch dim: outside a loop [T, T', n_out], where T is the input's time
    axis and T' (the key positions) another axis with the same lengths; inside a loop (an input without a time
    axis) the query is the step i: [1, K, n_out] with K the frames 0..i so far (length i + 1 at every step, as
    the history of 'cum_concat'; its own Dim, which a consumer pairs with the keys' axis by position). Like
    'cum_concat' in a loop, it cannot be stacked over the loop (its shape grows with each step).
    """

    layer_class = "relative_positional_encoding"
    options = {
        "n_out": Option(REQUIRED, (int,)),
        "forward_weights_init": Option("glorot_uniform", (str, float, int, dict)),
        "clipping": Option(16, (int,)),
        "fixed": Option(False, (bool,)),
    }

    def make_output(self):
        x = self.input_data
        if x.time_dim is None and not self.network.per_step:
            where = "in a network nested in a loop body" if self.network.inside_loop else "outside a loop"
            raise self.error(f"{where} the input needs a time axis, not {x.describe()}", option="from",
                             suggestion="give an input with a time axis, or use the layer directly in a rec unit")
        if self.opts["clipping"] < 0:
            raise self.error(f"'clipping' must be >= 0, not {self.opts['clipping']}", option="clipping")
        query, key = self._position_dims(x)
        if x.time_dim is None:
            _step_layer(self)
        return Data(self.name, (query, key, self.new_feature_dim(self.opts["n_out"])), "float32",
                    time_dim=query if x.time_dim is not None else key)

    def _position_dims(self, x: Data) -> Tuple[Dim, Dim]:
        """The query and key axes: the time axis and another of its lengths; in a loop step a size-1 axis (the
        step) and the frames so far."""
        time = x.time_dim
        if time is None:
            return (self.new_dim(1, SPATIAL, f"{self.name}:rel-query"),
                    self.new_dim(None, SPATIAL, f"{self.name}:rel-key"))
        return time, same_size_dim(time, f"{time.description}:rel-key")

    def dependencies(self) -> List[LayerBase]:
        deps = super().dependencies()
        return deps + [_step_layer(self)] if self.input_data.time_dim is None else deps

    def _table_dim(self) -> Dim:
        return self.new_dim(2 * self.opts["clipping"] + 1, SPATIAL, f"{self.name}:rel-pos")

    def make_params(self):
        if self.opts["fixed"]:
            return {}
        return {"encoding_matrix": ParamSpec((self._table_dim(), self.output.feature_dim),
                                             self.opts["forward_weights_init"])}

    def emit(self, inputs):
        clipping = self.opts["clipping"]
        query, key = self._position_dims(self.input_data)
        table_dim = self._table_dim()
        if self.opts["fixed"]:
            table = sinusoids(rf.range_over_dim(table_dim), self.output.feature_dim)
        else:
            table = inputs.param("encoding_matrix")
        if self.input_data.time_dim is None:  # a loop step: key frames 0..i against the step i
            step = inputs.value(_step_layer(self))
            inputs.set_size(key, step + 1)  # the same at every sequence (a scalar size: no padding)
            distance = rf.range_over_dim(key) - step
        else:
            positions = rf.range_over_dim(query, like=inputs.sources[0])
            keys = rf.replace_dim(positions, in_dim=query, out_dim=key)
            distance = rf.combine(keys, "sub", positions, dim_order=(query, key))
        index = rf.clip_by_value(distance, -clipping, clipping) + clipping
        return _with_dims(rf.gather(table, indices=index, axis=table_dim), self.output.dims)


class GenericAttentionLayer(LayerBase):
    """Attention with given weights: the weighted sum over the base's time axis, sum_t weights[..., t] *
    base[..., t, F].

    Options: `base` (the layer attended to; its time and feature axes), `weights` (the weights: the base's time
    axis, or a time axis of the same static size, is reduced), `auto_squeeze` (True: weight axes of size 1 that
    match nothing of the base are dropped). The base's other axes (besides batch, time, feature) must each
    pair with an axis of the weights (the same Dim, else from the last one on, one of the same static size).
    The output (as RETURNN's `dot` of weights and base) has the weights' kept axes, then the base's feature
    dim. As in RETURNN, nothing is masked but the weights' padded frames (e.g. from `softmax_over_spatial`).
    Inside a loop the base is usually a "base:" layer and the weights are the step's.
    """

    layer_class = "generic_attention"
    default_from = ()
    options = {
        "base": Option(REQUIRED, (str,), ref="layer"),
        "weights": Option(REQUIRED, (str,), ref="layer"),
        "auto_squeeze": Option(True, (bool,)),
    }

    def make_output(self):
        if self.sources:
            raise self.error("generic_attention takes only 'base' and 'weights', not 'from'", option="from",
                             suggestion="remove 'from'")
        base, weights = self.opts["base"].output, self.opts["weights"].output
        check_float_input(self, base, self.opts["base"].name, option="base")
        check_float_input(self, weights, self.opts["weights"].name, option="weights")
        reduce, _, squeezed, _ = self._plan(base, weights)
        kept = [d for d in weights.dims if d != reduce and d not in squeezed]
        if base.feature_dim in kept:
            raise self.error(f"the weights {weights.describe()} have the base's feature dim "
                             f"{base.feature_dim.short_repr()}", option="weights", kind=DimMismatchError)
        roles = {"time_dim": weights.time_dim} if weights.time_dim in kept else {}  # else the default time axis
        return Data(self.name, kept + [base.feature_dim], "float32", feature_dim=base.feature_dim, **roles)

    def _plan(self, base: Data, weights: Data):
        """(the weights' reduced axis, base axis -> weights axis for the paired ones, the weights' squeezed axes,
        the base's time axis)."""
        time, feature = base.time_dim, base.feature_dim
        if time is None or feature is None or time.is_batch:
            raise self.error(f"the base '{self.opts['base'].name}' {base.describe()} needs a time and a feature axis",
                             option="base")
        if weights.has_dim(time):
            reduce = time
        elif weights.time_dim is not None and time.size is not None and weights.time_dim.size == time.size:
            reduce = weights.time_dim
        else:
            raise self.error(f"the weights {weights.describe()} have no axis to pair with the base's time axis "
                             f"{time.short_repr()} ({base.describe()})", option="weights", kind=DimMismatchError,
                             suggestion="compute the weights over the base's time axis, e.g. with "
                                        "'softmax_over_spatial'")
        base_rest = [d for d in base.dims if not d.is_batch and d not in (time, feature)]
        weights_rest = [d for d in weights.dims if not d.is_batch and d != reduce]
        pairs = {d: d for d in base_rest if d in weights_rest}
        base_rest = [d for d in base_rest if d not in pairs]
        squeezed = []
        for dim in reversed([d for d in weights_rest if d not in pairs]):
            if base_rest and dim.size is not None and dim.size == base_rest[-1].size:
                pairs[base_rest.pop()] = dim
            elif self.opts["auto_squeeze"] and dim.size == 1:
                squeezed.append(dim)
        if base_rest:
            raise self.error(f"the base's axes {', '.join(d.short_repr() for d in base_rest)} ({base.describe()}) "
                             f"pair with no axis of the weights {weights.describe()}", option="weights",
                             kind=DimMismatchError, suggestion="besides time and feature, the base's axes must also "
                                                               "be axes of the weights")
        missing = [d for d in base.dims if d.is_batch and not weights.has_dim(d)]
        if missing:
            raise self.error(f"the weights {weights.describe()} lack the base's batch axis", option="weights",
                             kind=DimMismatchError)
        return reduce, pairs, squeezed, time

    def dependencies(self) -> List[LayerBase]:
        return [self.opts["weights"], self.opts["base"]]

    def emit(self, inputs):
        base_layer, weights_layer = self.opts["base"], self.opts["weights"]
        reduce, pairs, squeezed, time = self._plan(base_layer.output, weights_layer.output)
        weights, base = inputs.value(weights_layer), inputs.value(base_layer)
        renames = [(time, reduce)] + [(b, w) for b, w in pairs.items()]
        for in_dim, out_dim in renames:  # the weights' Dims: none of them is a base axis not paired with it
            if in_dim != out_dim:
                base = rf.replace_dim(base, in_dim=in_dim, out_dim=out_dim)
        # the squeezed axes (of length 1) go through the matmul and are dropped from its result: on the usual
        # [B, 1, T] weights of softmax_over_spatial, that takes them as they are (no squeeze and expand again)
        out = rf.matmul(weights, base, reduce=reduce)
        return rf.squeeze(out, squeezed) if squeezed else out


class RecUnstackLayer(LayerBase):
    """Inside a loop: the frame of the input (a layer outside the loop, via "base:") at the current step, along
    the loop's dim; outside a loop: the input as it is.

    Options: `axis` (None: the loop's dim; given, it must be the loop's dim), `declare_rec_time` (False; the
    loop's dim is that of the rec layer's input or target, so this can only confirm it).
    """

    layer_class = "rec_unstack"
    options = {
        "axis": Option(None, AXIS + (NONE_TYPE,)),
        "declare_rec_time": Option(False, (bool,)),
    }

    def make_output(self):
        if len(self.sources) != 1:
            raise self.error(f"rec_unstack needs exactly one input in 'from', got {len(self.sources)}", option="from")
        x = self.sources[0].output
        owner = _loop_owner(self)
        if owner is None:
            if self.opts["axis"] is not None:
                resolve_dim(x, self.opts["axis"], layer=self.name, option="axis")
            return x.copy(name=self.name)
        time = self._loop_dim(x, owner)
        _step_layer(self)
        return x.copy_without_dims([time], name=self.name)

    def _loop_dim(self, x: Data, owner: LayerBase) -> Dim:
        time = owner.loop_dim()
        desc = self.opts["axis"]
        axis = time if desc is None else resolve_dim(x, desc, layer=self.name, option="axis")
        if axis == time and x.has_dim(time):
            return time
        if self.opts["declare_rec_time"]:
            raise self.error(f"'declare_rec_time': the loop of '{owner.name}' runs over {time.short_repr()} (from its "
                             f"input, target or 'end'), netcompiler cannot make {axis.short_repr()} of {x.describe()} "
                             f"its dim yet", option="declare_rec_time",
                             suggestion=f"give '{owner.name}' this layer's input as 'from' (or a target over it)")
        raise self.error(f"the input {x.describe()} does not have the loop's dim {time.short_repr()} at 'axis'",
                         option="axis" if desc is not None else "from", kind=DimMismatchError,
                         suggestion="unstack a layer outside the loop ('base:x') over the rec layer's time axis")

    def dependencies(self) -> List[LayerBase]:
        deps = super().dependencies()
        return deps + [_step_layer(self)] if _loop_owner(self) is not None else deps

    def emit(self, inputs):
        x = inputs.sources[0]
        owner = _loop_owner(self)
        if owner is None:
            return x
        step = inputs.value(_step_layer(self))
        return rf.gather(x, indices=step, axis=self._loop_dim(self.sources[0].output, owner))


class RecLastOutputLayer(LayerBase):
    """The value of layer `sub_layer_name` of the unit of rec layer `rec_layer` at each sequence's last step (zero
    for an empty sequence); RETURNN needs `need_last` on that layer, netcompiler takes the frame from its
    accumulated values ("rec/x").

    Options: `rec_layer` (a rec layer with a unit dict), `sub_layer_name` (a layer of its unit).
    """

    layer_class = "rec_last_output"
    default_from = ()
    options = {
        "rec_layer": Option(REQUIRED, (str,), ref="layer"),
        "sub_layer_name": Option(REQUIRED, (str,)),
    }

    def make_output(self):
        accumulated, time = self._accumulated()
        return accumulated.output.copy_without_dims([time], name=self.name)

    def _accumulated(self):
        """(the rec layer's accumulated layer of the sub-layer, the loop's dim)."""
        rec = self.opts["rec_layer"]
        name = self.opts["sub_layer_name"]
        if rec.layer_class != "rec" or not isinstance(rec.opts.get("unit"), dict):
            raise self.error(f"'rec_layer' '{rec.name}' must be a rec layer with a unit dict, not "
                             f"{rec.layer_class!r}" + (" with a built-in unit" if rec.layer_class == "rec" else ""),
                             option="rec_layer")
        accumulated = rec.loop_sub_layer(name)
        if accumulated is None:
            raise self.error(f"the unit of '{rec.name}' has no layer '{name}' (its layers: "
                             f"{', '.join(map(str, rec.opts['unit']))})", option="sub_layer_name")
        return accumulated, rec.loop_dim()

    def dependencies(self) -> List[LayerBase]:
        return [self.opts["rec_layer"], self._accumulated()[0]]

    def emit(self, inputs):
        accumulated, time = self._accumulated()
        values = inputs.value(accumulated)  # runs the loop first: a loop until 'end' sets its lengths
        sizes = inputs.run.size(time)
        last = max(sizes - 1, 0) if isinstance(sizes, int) else rf.maximum(sizes - 1, 0)
        return rf.gather(values, indices=last, axis=time)
