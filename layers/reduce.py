"""Reductions over axes: reduce, reduce_out (maxout and friends), math_norm (p-norm)."""

from typing import Any, List, Tuple

from netcompiler import frontend as rf
from netcompiler.errors import closest_match
from netcompiler.layer_base import NONE_TYPE, NUMBER, LayerBase, Option
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


def with_kept_dims(y: rf.Tensor, out: Data) -> rf.Tensor:
    """`y` with the size-1 axes of the template `out` that it lacks (`keep_dims`) inserted where `out` has them."""
    for axis, dim in enumerate(out.dims):
        if not y.has_dim(dim):
            y = rf.expand_dim(y, dim, axis=min(axis, len(y.dims)))
    return y


def _names_int_axis(desc) -> bool:
    if isinstance(desc, (list, tuple)):
        return any(_names_int_axis(item) for item in desc)
    return isinstance(desc, int) and not isinstance(desc, bool)


AXES_OR_AXIS = {"axes": Option(None, _AXES_TYPES), "axis": Option(None, _AXES_TYPES, doc="the same as 'axes'")}
"""RETURNN's two names of one option (reduce, math_norm, norm): give one of them; see `axes_option`."""


def axes_option(layer: LayerBase) -> Tuple[str, Any]:
    """("axes" or "axis", its value) of a layer with the `AXES_OR_AXIS` options: exactly one must be given."""
    given = [(name, layer.opts[name]) for name in ("axes", "axis") if layer.opts[name] is not None]
    if len(given) != 1:
        problem = "both 'axes' and 'axis' are set" if given else "neither 'axes' nor 'axis' is set"
        raise layer.error(f"{problem}; give exactly one of them", option="axes",
                          suggestion="e.g. 'axes': 'T' or 'axes': ['T', 'F']")
    return given[0]


class ReduceLayer(LayerBase):
    """Reduces the input over `axes` with `mode`; argmax/argmin give the index (int32, sparse over the reduced dim).

    Options: `mode` (required: "sum", "max", "min", "mean", "logsumexp", "argmax", "argmin"; "avg" = "mean";
    any case), `axes` or `axis` (one of them; any axis description), `keep_dims` (False: reduced axes vanish;
    True: each becomes a static size-1 axis in its place), `enforce_batch_dim_axis` (move the batch axis
    there before resolving int axes; None: 0 if an axis is an int, as in RETURNN, else no move), `use_time_mask` (None: padded frames are masked when reducing over a
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
        **AXES_OR_AXIS,
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
                             f"{found} of the input {x.describe()}", option=option,
                             suggestion=f"name one axis, e.g. '{option}': 'F' (or 'T')")
        return reduced_template(self, x, reduced, self.opts["keep_dims"], dtype="int32", sparse_dim=reduced[0])

    def emit(self, inputs):
        option, desc = self.axes_option()
        reduced = resolve_dims(self.batch_moved(self.input_data), desc, layer=self.name, option=option)
        x = inputs.x
        if not reduced:
            return x
        mode = "mean" if self.mode() == "avg" else self.mode()
        y = rf.reduce(x, mode=mode, axis=reduced, use_mask=self.opts["use_time_mask"] is not False)
        return with_kept_dims(y, self.output) if self.opts["keep_dims"] else y

    def mode(self) -> str:
        mode = self.opts["mode"].lower()
        if mode not in _MODES:
            guess = closest_match(mode, _MODES)
            raise self.error(f"option 'mode' is {self.opts['mode']!r}, expected one of {', '.join(_MODES)}",
                             option="mode", suggestion=f"did you mean '{guess}'?" if guess else None)
        return mode

    def axes_option(self):
        return axes_option(self)

    def batch_moved(self, x: Data) -> Data:
        """The input as the axes are counted: with the batch axis at `enforce_batch_dim_axis`, which defaults to 0
        when an axis is given as an int (as RETURNN counts int axes of reduce in the batch-major layout)."""
        axis = self.opts["enforce_batch_dim_axis"]
        if axis is None and _names_int_axis(self.axes_option()[1]):
            axis = 0
        if axis is None or x.batch_dim_axis in (None, axis):
            return x
        if not -x.batch_ndim <= axis < x.batch_ndim:
            raise self.error(f"'enforce_batch_dim_axis' {axis} is out of range for the input {x.describe()}",
                             option="enforce_batch_dim_axis",
                             suggestion=f"use an int from {-x.batch_ndim} to {x.batch_ndim - 1} (0: batch-major)")
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
            raise self.error(f"the input {x.describe()} has no static feature dim to split", option="from",
                             suggestion="give an input with a static feature dim, e.g. the output of a 'linear' "
                                        "layer with 'n_out'")
        if pieces < 1 or feature.size % pieces:
            raise self.error(f"'num_pieces' {pieces} must be positive and divide the feature size {feature.size} "
                             f"of the input {x.describe()}", option="num_pieces",
                             suggestion="use a divisor of the feature size, e.g. 'num_pieces': "
                                        f"{_smallest_divisor(feature.size)}")
        return x.copy_replace_dim(feature, split_dim(feature, pieces, pad=False), name=self.name)

    def pieces_dim(self) -> Dim:
        """The axis of the pieces that the feature dim is split into (innermost), reduced away."""
        return self.new_dim(self.opts["num_pieces"], SPATIAL, f"{self.name}:pieces")

    def emit(self, inputs):
        x, pieces = inputs.x, self.pieces_dim()
        x = rf.split_dims(x, axis=x.feature_dim, dims=[self.output.feature_dim, pieces])
        return rf.reduce(x, mode=self.opts["mode"], axis=pieces)


def _smallest_divisor(size: int) -> int:
    """The smallest divisor > 1 of `size` (1 for a size of 1): a `num_pieces` that fits."""
    return next((k for k in range(2, int(size ** 0.5) + 1) if size % k == 0), max(size, 1))


class MathNormLayer(LayerBase):
    """The p-norm over `axes`: `sum(abs(x) ** p) ** (1 / p)`.

    Options: `p` (required, > 0), `axes` or `axis` (one of them, as in RETURNN), `keep_dims` (False; as in reduce).
    Padded frames count as 0 when a dynamic axis (or the batch axis) is among `axes`.
    """

    layer_class = "math_norm"
    options = {
        "p": Option(types=NUMBER),
        **AXES_OR_AXIS,
        "keep_dims": Option(False, (bool,)),
    }

    def make_output(self):
        p = self.opts["p"]
        if not 0 < p < float("inf"):
            raise self.error(f"'p' must be a positive finite number, not {p!r}", option="p",
                             suggestion="e.g. 'p': 2 (the Euclidean norm) or 'p': 1")
        x = self.input_data
        check_values(self, x, need_float=True)
        option, desc = axes_option(self)
        reduced = resolve_dims(x, desc, layer=self.name, option=option)
        return reduced_template(self, x, reduced, self.opts["keep_dims"])

    def emit(self, inputs):
        x = inputs.x
        option, desc = axes_option(self)
        reduced = resolve_dims(self.input_data, desc, layer=self.name, option=option)
        p = float(self.opts["p"])
        powered = rf.square(x) if p == 2 else abs(x) if p == 1 else abs(x) ** p
        total = rf.reduce(powered, mode="sum", axis=reduced)  # padded frames count as 0
        # square/sqrt where they fit: TF's graph optimiser rewrites pow(., 2) and pow(., 0.5) into them, and
        # the traced and the eager forward pass must agree bit for bit
        norm = rf.sqrt(total) if p == 2 else total if p == 1 else total ** (1.0 / p)
        return with_kept_dims(norm, self.output) if self.opts["keep_dims"] else norm
