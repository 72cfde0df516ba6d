"""Reductions over axes: reduce, reduce_out (maxout and friends), math_norm (p-norm)."""

from typing import List, Sequence

from netcompiler.errors import closest_match
from netcompiler.layer_base import NONE_TYPE, NUMBER, LayerBase, Option
from netcompiler.lazy_tf import ops, tf
from netcompiler.tensor import FLOAT_DTYPES, SPATIAL, Data, Dim, resolve_dims, split_dim

_AXES_TYPES = (str, int, list, tuple, Dim, NONE_TYPE)


def reduced_template(layer: LayerBase, x: Data, reduced: List[Dim], keep_dims: bool, **changes) -> Data:
    """`x` without the axes `reduced`, or with each replaced by a new static size-1 Dim if `keep_dims`.

    A kept axis keeps its place and role (time, feature); a kept batch axis becomes a spatial axis of size 1.
    """
    if not keep_dims:
        return x.copy_without_dims(reduced, name=layer.name, **changes)
    out = x.copy(name=layer.name)
    for dim in reduced:
        kind = SPATIAL if dim.is_batch else dim.kind
        out = out.copy_replace_dim(dim, layer.new_dim(1, kind, f"{layer.name}:kept:{dim.description}"))
    return out.copy(**changes)


def check_values(layer: LayerBase, x: Data, need_float: bool) -> None:
    """Errors unless `x` holds values (not class indices), and floats if `need_float`."""
    if x.sparse:
        raise layer.error(f"the input {x.describe()} is sparse (class indices); {layer.layer_class} needs values",
                          option="from", suggestion="embed the indices first, e.g. with a 'linear' layer")
    if need_float and x.dtype not in FLOAT_DTYPES:
        raise layer.error(f"the input {x.describe()} has dtype {x.dtype}; this needs floats", option="from",
                          suggestion="add a 'cast' layer")


_MODES = ("sum", "max", "min", "mean", "avg", "logsumexp", "argmax", "argmin")
_FLOAT_MODES = ("mean", "avg", "logsumexp")


# --- emission helpers, shared with the norm layers -------------------------------------------------------
def padding_mask(ctx, data: Data, x, reduced: Sequence[Dim]):
    """Bool mask (broadcastable to `x`, laid out as `data`), True where a frame counts in a reduction over
    `reduced`; None if padding cannot leak in.

    The padded frames of a dynamic dim D vary along D and the batch: reducing over either mixes them in.
    """
    mask = None
    batch_reduced = any(d.is_batch for d in reduced)
    for dim in data.dynamic_dims:
        if dim in reduced or (batch_reduced and data.has_batch):
            valid = ctx.sequence_mask(data, dim, x)
            mask = valid if mask is None else tf.logical_and(mask, valid)
    return mask


def extreme_value(dtype, highest: bool):
    """+inf/-inf for floats, the largest/smallest value for ints: the neutral element of min/max."""
    dtype = tf.as_dtype(dtype)
    if dtype.is_floating:
        return float("inf") if highest else float("-inf")
    return dtype.max if highest else dtype.min


def masked_moments(x, axes: List[int], mask):
    """Mean and (population) variance over `axes` (kept as size-1 axes), counting only frames where `mask`."""
    if mask is None:
        return tf.nn.moments(x, axes, keepdims=True)
    weights = tf.cast(mask, x.dtype)
    return tf.nn.weighted_moments(tf.where(mask, x, tf.zeros_like(x)), axes, weights, keepdims=True)


def _masked_mean(x, axes: List[int], mask, keep_dims: bool):
    total = tf.reduce_sum(tf.where(mask, x, tf.zeros_like(x)), axes, keepdims=keep_dims)
    count = tf.reduce_sum(tf.cast(tf.broadcast_to(mask, tf.shape(x)), x.dtype), axes, keepdims=keep_dims)
    return total / count


_TF_REDUCE = {"sum": "reduce_sum", "max": "reduce_max", "min": "reduce_min", "mean": "reduce_mean",
              "logsumexp": "reduce_logsumexp"}
# what padded frames are set to before reducing: the neutral element of the mode (mean divides by the count)
_FILL_HIGHEST = {"sum": None, "mean": None, "max": False, "logsumexp": False, "argmax": False, "min": True,
                 "argmin": True}


def reduce_tensor(x, axes: List[int], mode: str, keep_dims: bool, mask=None):
    """`x` reduced over `axes` with `mode` (sum, max, min, mean, logsumexp, argmax, argmin; argmax/argmin over
    exactly one axis, giving int32), counting only the frames where the bool `mask` (broadcastable) is True."""
    if mask is not None and mode == "mean":
        return _masked_mean(x, axes, mask, keep_dims)
    if mask is not None:
        highest = _FILL_HIGHEST[mode]
        fill = 0 if highest is None else extreme_value(x.dtype, highest)
        x = tf.where(mask, x, tf.cast(fill, x.dtype))
    if mode in ("argmax", "argmin"):
        (axis,) = axes
        fn = tf.argmax if mode == "argmax" else tf.argmin
        y = fn(x, axis=axis, output_type=tf.int32)
        return tf.expand_dims(y, axis) if keep_dims else y
    return getattr(tf, _TF_REDUCE[mode])(x, axis=axes, keepdims=keep_dims)


class ReduceLayer(LayerBase):
    """Reduces the input over `axes` with `mode`; argmax/argmin give the index (int32, sparse over the reduced dim).

    Options: `mode` (required: "sum", "max", "min", "mean", "logsumexp", "argmax", "argmin"; "avg" = "mean";
    any case), `axes` or `axis` (one of them; any axis description), `keep_dims` (False: reduced axes vanish;
    True: each becomes a static size-1 axis in its place), `enforce_batch_dim_axis` (None: move the batch axis
    there before resolving int axes), `use_time_mask` (None: padded frames are masked when reducing over a
    dynamic axis).
    Decisions: argmax/argmin need exactly one, non-batch axis; reducing over no axis (e.g. "T?" without time)
    gives the input unchanged; mean/logsumexp need float input. Masking (unless `use_time_mask` is False) covers
    every dynamic axis that is reduced, and every dynamic axis when the batch axis is reduced: padded frames are
    set to the mode's neutral element (sum: 0, max/argmax/logsumexp: -inf, min/argmin: +inf; for ints the
    dtype's extremes) and mean divides by the number of valid frames. (RETURNN masks only the time axis.)
    """

    layer_class = "reduce"
    options = {
        "mode": Option(types=(str,), doc='"sum", "max", "mean", "argmax", ...'),
        "axes": Option(None, _AXES_TYPES),
        "axis": Option(None, _AXES_TYPES, doc="the same as 'axes'"),
        "keep_dims": Option(False, (bool,)),
        "enforce_batch_dim_axis": Option(None, (int, NONE_TYPE)),
        "use_time_mask": Option(None, (bool, NONE_TYPE)),
    }

    def make_output(self):
        mode = self.mode()
        x = self.batch_moved(self.input_data)
        check_values(self, x, need_float=mode in _FLOAT_MODES)
        option, desc = self.axes_option()
        reduced = resolve_dims(x, desc, layer=self.name, option=option)
        if mode not in ("argmax", "argmin"):
            return reduced_template(self, x, reduced, self.opts["keep_dims"])
        if len(reduced) != 1 or reduced[0].is_batch:
            found = ", ".join(x.dim_label(d) for d in reduced) or "none"
            raise self.error(f"mode '{mode}' needs exactly one non-batch axis, but '{option}' {desc!r} names "
                             f"{found} of the input {x.describe()}", option=option)
        return reduced_template(self, x, reduced, self.opts["keep_dims"], dtype="int32", sparse_dim=reduced[0])

    def emit(self, ctx):
        data = self.batch_moved(self.input_data)
        x = ops.transpose_to(ctx.input(self), self.input_data.dims, data.dims)
        reduced = resolve_dims(data, self.axes_option()[1], layer=self.name, option="axes")
        if not reduced:
            return x
        mode = "mean" if self.mode() == "avg" else self.mode()
        mask = padding_mask(ctx, data, x, reduced) if self.opts["use_time_mask"] is not False else None
        return reduce_tensor(x, [data.axis_of(d) for d in reduced], mode, self.opts["keep_dims"], mask)

    def mode(self) -> str:
        mode = self.opts["mode"].lower()
        if mode not in _MODES:
            guess = closest_match(mode, _MODES)
            raise self.error(f"option 'mode' is {self.opts['mode']!r}, expected one of {', '.join(_MODES)}",
                             option="mode", suggestion=f"did you mean '{guess}'?" if guess else None)
        return mode

    def axes_option(self):
        """("axes" or "axis", its value): exactly one of the two must be given."""
        given = [(name, self.opts[name]) for name in ("axes", "axis") if self.opts[name] is not None]
        if len(given) != 1:
            problem = "both 'axes' and 'axis' are set" if given else "neither 'axes' nor 'axis' is set"
            raise self.error(f"{problem}; give exactly one of them", option="axes",
                             suggestion="e.g. 'axes': 'T' or 'axes': ['T', 'F']")
        return given[0]

    def batch_moved(self, x: Data) -> Data:
        axis = self.opts["enforce_batch_dim_axis"]
        if axis is None or x.batch_dim_axis in (None, axis):
            return x
        if not -x.batch_ndim <= axis < x.batch_ndim:
            raise self.error(f"'enforce_batch_dim_axis' {axis} is out of range for the input {x.describe()}",
                             option="enforce_batch_dim_axis")
        others = [d for d in x.dims if not d.is_batch]
        others.insert(axis % x.batch_ndim, x.dims[x.batch_dim_axis])
        return x.copy(dims=others)


class ReduceOutLayer(LayerBase):
    """Splits the feature dim F into (F // num_pieces, num_pieces) and reduces the pieces (maxout with "max").

    Options: `mode` (required: "sum", "max" or "mean"), `num_pieces` (required; must divide F).
    The output feature dim is `split_dim(F, num_pieces)`: the same derivation gives the same Dim.
    """

    layer_class = "reduce_out"
    options = {
        "mode": Option(types=(str,), choices=("sum", "max", "mean")),
        "num_pieces": Option(types=(int,)),
    }

    def make_output(self):
        x = self.input_data
        check_values(self, x, need_float=self.opts["mode"] == "mean")
        pieces, feature = self.opts["num_pieces"], x.feature_dim
        if feature is None or feature.size is None:
            raise self.error(f"the input {x.describe()} has no static feature dim to split", option="from")
        if pieces < 1 or feature.size % pieces:
            raise self.error(f"'num_pieces' {pieces} must be positive and divide the feature size {feature.size} "
                             f"of the input {x.describe()}", option="num_pieces")
        return x.copy_replace_dim(feature, split_dim(feature, pieces, pad=False), name=self.name)

    def emit(self, ctx):
        x = ctx.input(self)
        axis, pieces = self.input_data.feature_dim_axis, self.opts["num_pieces"]
        shape = ops.shape_list(x)
        x = tf.reshape(x, shape[:axis] + [shape[axis] // pieces, pieces] + shape[axis + 1:])
        return reduce_tensor(x, [axis + 1], self.opts["mode"], keep_dims=False)


class MathNormLayer(LayerBase):
    """The p-norm over `axes`: `sum(abs(x) ** p) ** (1 / p)`.

    Options: `p` (required, > 0), `axes` (required), `keep_dims` (False; as in reduce).
    Padded frames count as 0 when a dynamic axis (or the batch axis) is among `axes`.
    """

    layer_class = "math_norm"
    options = {
        "p": Option(types=NUMBER),
        "axes": Option(types=_AXES_TYPES[:-1]),
        "keep_dims": Option(False, (bool,)),
    }

    def make_output(self):
        p = self.opts["p"]
        if not 0 < p < float("inf"):
            raise self.error(f"'p' must be a positive finite number, not {p!r}", option="p")
        x = self.input_data
        check_values(self, x, need_float=True)
        reduced = resolve_dims(x, self.opts["axes"], layer=self.name, option="axes")
        return reduced_template(self, x, reduced, self.opts["keep_dims"])

    def emit(self, ctx):
        data, x = self.input_data, ctx.input(self)
        reduced = resolve_dims(data, self.opts["axes"], layer=self.name, option="axes")
        p = float(self.opts["p"])
        powered = tf.square(x) if p == 2 else tf.abs(x) if p == 1 else tf.abs(x) ** p
        total = reduce_tensor(powered, [data.axis_of(d) for d in reduced], "sum", self.opts["keep_dims"],
                              padding_mask(ctx, data, powered, reduced))
        # square/sqrt where they fit: TF's graph optimiser rewrites pow(., 2) and pow(., 0.5) into them, and
        # the traced and the eager forward pass must agree bit for bit
        return tf.sqrt(total) if p == 2 else total if p == 1 else total ** (1.0 / p)
