"""Layers used to build attention: dot, softmax_over_spatial, stack (through the op layer: `rf.matmul`,
`rf.softmax`, `rf.stack`)."""

from typing import List, Optional

from netcompiler import frontend as rf
from netcompiler.errors import DimMismatchError
from netcompiler.layer_base import NONE_TYPE, NUMBER, LayerBase, Option
from netcompiler.tensor import FLOAT_DTYPES, INT_DTYPES, SPATIAL, Data, Dim, resolve_dim, resolve_dims

from netcompiler.tensor.dim import same_size_dim

from .broadcast import aligned, aligned_dims, fold, in_order_of, source_value

AXES = (str, int, list, tuple, Dim)


class _Unspecified:
    """The default of dot's `var1`/`var2`: not given (the var axes follow from the other options)."""

    def __repr__(self):
        return "<not given>"


NOT_GIVEN = _Unspecified()


def check_float_input(layer: LayerBase, data: Data, name: str, option: str = "from") -> None:
    if data.sparse or data.dtype not in FLOAT_DTYPES:
        raise layer.error(f"input '{name}' {data.describe()} {data.dtype} must hold float values",
                          option=option, suggestion="embed class indices first, e.g. with a 'linear' layer")


class DotLayer(LayerBase):
    """The dot product of two inputs: `(shared..., var1..., red) x (shared..., red, var2...) -> (shared...,
    var1..., var2...)`, summing over the reduce axes.

    Options: `red1` (-1), `red2` (-2): the reduce axes of the first and second input (axis descriptions or
    lists, paired in order); `var1`, `var2`: their kept axes (None: none; not given, as in RETURNN: every axis
    of that input that is neither reduced nor also an axis of the other input); `add_var2_if_empty` (True:
    when `var2` is given but names no axis, add a new spatial axis of size 1 at the end, which is the
    output's feature axis); `debug` (False; RETURNN prints the inputs' shapes at run time: accepted here
    with a notice that it has no effect).
    Decisions: reduce axes pair up if they are the same Dim or both static of the same size (so that
    features of two different linear layers can be multiplied); the remaining (shared) axes pair up the same
    way, identical Dims first, then the others in order. Batch can be neither reduced nor a var axis. The
    output's dims are the first input's shared axes in its order, then var1's, then var2's. A var2 axis that
    is also a var1 axis (attention energies of a sequence with itself, `var1: "T", var2: "T"`) becomes its
    copy `same_size_dim` (same sizes, another Dim: `[B, T, T']`); RETURNN keeps the very same dim twice,
    which a template here cannot hold. As in RETURNN, an output whose non-batch axes are all dynamic has its
    last one (not the time axis) as feature axis (`[B, T, T'|F]`).
    Emission: the second input's axes take the Dims of the first's they pair with, then `rf.matmul` (a size-1
    var2 axis is added to the second input before); padded frames of a dynamic reduce axis are set to 0 on both
    inputs (padding may hold inf, and 0 * inf is NaN); `dropout` applies to each input.
    """

    layer_class = "dot"
    options = {
        "red1": Option(-1, AXES),
        "red2": Option(-2, AXES),
        "var1": Option(NOT_GIVEN, AXES + (NONE_TYPE,)),
        "var2": Option(NOT_GIVEN, AXES + (NONE_TYPE,)),
        "add_var2_if_empty": Option(True, (bool,)),
        "debug": Option(False, (bool,)),
    }

    def make_output(self):
        if self.opts["debug"]:  # RETURNN prints the inputs' shapes while running; nothing else changes
            notice = (f"layer '{self.name}': option 'debug' (RETURNN prints the inputs' shapes at each run) has no "
                      f"effect in netcompiler; the shapes are the templates 'dump-net' shows")
            if notice not in self.network.notices:
                self.network.notices.append(notice)
        if len(self.sources) != 2:
            raise self.error(f"dot needs exactly two inputs in 'from', got {len(self.sources)}", option="from",
                             suggestion="e.g. 'from': ['a', 'b']; multiply more with further dot layers")
        (a_name, a), (b_name, b) = [(src.name, src.output) for src in self.sources]
        for name, data in ((a_name, a), (b_name, b)):
            check_float_input(self, data, name)
        shared, var1, var2, _ = self._plan(a, b)
        dummy = self._dummy_var2(var2)
        dims = shared + var1 + (self._out_var2(var1, var2) if dummy is None else [dummy])
        for i, dim in enumerate(dims):
            if dim in dims[:i]:
                raise self.error(f"the output would have the axis {dim.short_repr()} twice ('{a_name}' "
                                 f"{a.describe()} vs '{b_name}' {b.describe()})", option="var2", kind=DimMismatchError,
                                 suggestion="give one input its own dim for this axis (e.g. 'reinterpret_data')")
        out = Data(self.name, dims, a.dtype)
        if dummy is not None:
            return out.copy(feature_dim=dummy)
        rest = [d for d in dims if not d.is_batch]
        if out.feature_dim is None and rest and all(d.is_dynamic for d in rest) and rest[-1] != out.time_dim:
            return out.copy(feature_dim=rest[-1])
        return out

    def _dummy_var2(self, var2: List[Dim]) -> Optional[Dim]:
        """The size-1 axis `add_var2_if_empty` adds (spatial-kind, as in RETURNN), or None."""
        if var2 or not self.opts["add_var2_if_empty"] or self.opts["var2"] is NOT_GIVEN:
            return None
        return self.new_dim(1, SPATIAL, f"{self.name}:dot-var2")

    @staticmethod
    def _out_var2(var1: List[Dim], var2: List[Dim]) -> List[Dim]:
        """The output's var2 axes: a var1 axis again is its copy (`same_size_dim`)."""
        return [same_size_dim(d) if d in var1 else d for d in var2]

    def _plan(self, a: Data, b: Data):
        """(shared, var1, var2, partner): the first input's shared and var axes, the second's var axes, and for
        each other axis of the second input the axis of the first it pairs with."""
        red1, var1 = self._axes(a, "red1", "var1")
        red2, var2 = self._axes(b, "red2", "var2")
        if self.opts["var1"] is NOT_GIVEN:
            var1 = [d for d in a.dims if d not in red1 and not d.is_batch and not b.has_dim(d)]
        if self.opts["var2"] is NOT_GIVEN:
            var2 = [d for d in b.dims if d not in red2 and not d.is_batch and not a.has_dim(d)]
        self._pair_up(red1, red2, a, b, "red1", "reduce axes")
        shared = [d for d in a.dims if d not in red1 + var1]
        shared_b = [d for d in b.dims if d not in red2 + var2]
        only_a, only_b = [d for d in shared if d not in shared_b], [d for d in shared_b if d not in shared]
        self._pair_up(only_a, only_b, a, b, "from", "shared axes")
        partner = dict(zip(red2, red1))
        partner.update({d: d for d in shared_b if d in shared})
        partner.update(zip(only_b, only_a))
        return shared, var1, var2, partner

    def emit(self, inputs):
        src_a, src_b = self.sources
        shared, var1, var2, partner = self._plan(src_a.output, src_b.output)
        a, b = source_value(inputs, self, src_a), source_value(inputs, self, src_b)
        renames = [(dim_b, dim_a) for dim_b, dim_a in partner.items() if dim_b != dim_a]
        if any(b.has_dim(dim_a) for _, dim_a in renames):  # crossed static axes: rename through stand-ins
            stand_ins = [Dim(dim_b.size, dim_b.kind, f"{dim_b.description}:dot") for dim_b, _ in renames]
            for (dim_b, _), stand_in in zip(renames, stand_ins):
                b = rf.replace_dim(b, in_dim=dim_b, out_dim=stand_in)
            renames = [(stand_in, dim_a) for stand_in, (_, dim_a) in zip(stand_ins, renames)]
        for dim_b, dim_a in renames:
            b = rf.replace_dim(b, in_dim=dim_b, out_dim=dim_a)
        reduced = [d for d in a.dims if d not in shared and d not in var1]
        b = rf.masked(b, [d for d in reduced if d.is_dynamic], 0.0)  # (rf.matmul masks those of a)
        for dim, copy in zip(var2, self._out_var2(var1, var2)):
            if copy != dim:  # the same axis as a var1 axis: its copy in the output
                b = rf.replace_dim(b, in_dim=dim, out_dim=copy)
        dummy = self._dummy_var2(var2)
        if dummy is not None:  # a size-1 axis of b: matmul needs no reshapes then
            b = rf.expand_dim(b, dummy)
        return rf.matmul(a, b, reduce=reduced)

    def _axes(self, data: Data, red_option: str, var_option: str):
        """The reduce and var Dims of one input; they must be disjoint and not batch."""
        red = resolve_dims(data, self.opts[red_option], layer=self.name, option=red_option)
        desc = self.opts[var_option]
        var = [] if desc is None or desc is NOT_GIVEN else resolve_dims(data, desc, layer=self.name,
                                                                        option=var_option)
        for option, dims in ((red_option, red), (var_option, var)):
            if any(d.is_batch for d in dims):
                raise self.error(f"'{option}' {self.opts[option]!r} names the batch axis of {data.describe()}",
                                 option=option, suggestion="name the axes explicitly, e.g. 'F' or 'T'")
        both = [d for d in var if d in red]
        if both:
            raise self.error(f"{both[0].short_repr()} of {data.describe()} is named by both '{red_option}' and "
                             f"'{var_option}'", option=var_option,
                             suggestion=f"keep it in '{red_option}' (summed over) or in '{var_option}' (kept), "
                                        f"not both")
        return red, var

    def _pair_up(self, mine: List[Dim], theirs: List[Dim], a: Data, b: Data, option: str, what: str) -> None:
        """Axes `mine` (of `a`) and `theirs` (of `b`) correspond in order: the same Dims, or static of equal size."""
        fits = len(mine) == len(theirs) and all(
            x == y or (x.size is not None and x.size == y.size) for x, y in zip(mine, theirs))
        if not fits:
            labels = ", ".join(d.short_repr() for d in mine) or "none"
            other = ", ".join(d.short_repr() for d in theirs) or "none"
            raise self.error(f"the {what} do not match: {labels} of '{a.name}' {a.describe()} vs {other} of "
                             f"'{b.name}' {b.describe()}",
                             option=option, kind=DimMismatchError,
                             suggestion="they must be the same dims (or static dims of the same size)")


class SoftmaxOverSpatialLayer(LayerBase):
    """Softmax over a spatial axis (default: time), masking frames beyond each sequence's length; the output
    has the input's dims with the softmax axis moved last, as in RETURNN (`[B, T, F]` over T gives
    `[B, F, T]`; an int `axis` in a following layer counts in that order). Roles stay with their dims.

    Options: `axis` (None: "T"), `energy_factor` (None: a scale applied before the softmax), `start` (None: a
    layer of shape (B,) with the first frame), `window_start` and `window_size` (None: layers of shape (B,)
    or ints; only frames in [window_start, window_start + window_size) count; they go together),
    `use_time_mask` (None: mask when the axis is dynamic; True needs a dynamic axis), `log_space` (False:
    True gives log-softmax). Position layers must be ints whose dims are among the input's, without the axis.
    Frames outside the mask get the energy -inf: probability 0 (-inf with `log_space`); as in RETURNN, a row
    without any valid frame gives NaN. Emission: the masks (lengths, start, window) are joined into one, applied
    with `rf.where`, then `rf.softmax` (or its log) over the axis.
    """

    layer_class = "softmax_over_spatial"
    options = {
        "axis": Option(None, (str, int, Dim, NONE_TYPE)),
        "energy_factor": Option(None, NUMBER + (NONE_TYPE,)),
        "start": Option(None, (str, NONE_TYPE), ref="layer"),
        "window_start": Option(None, (str, int, NONE_TYPE), ref="layer_or_value"),
        "window_size": Option(None, (str, int, NONE_TYPE), ref="layer_or_value"),
        "use_time_mask": Option(None, (bool, NONE_TYPE)),
        "log_space": Option(False, (bool,)),
    }

    def make_output(self):
        x = self.input_data
        check_float_input(self, x, self.sources[0].name if len(self.sources) == 1 else "from")
        axis = self._axis(x)
        if self.opts["use_time_mask"] and axis.size is not None:
            raise self.error(f"'use_time_mask' is True, but the axis {axis.short_repr()} of {x.describe()} is "
                             f"static (there are no lengths to mask with)", option="use_time_mask",
                             suggestion="set 'use_time_mask': False, or name a dynamic axis in 'axis'")
        self._check_window()
        for option in ("start", "window_start", "window_size"):
            if isinstance(self.opts[option], LayerBase):
                self._check_position_layer(option, x, axis)
        return x.copy(name=self.name, dims=[d for d in x.dims if d != axis] + [axis])

    def _axis(self, x: Data) -> Dim:
        desc = self.opts["axis"]
        axis = resolve_dim(x, "T" if desc is None else desc, layer=self.name, option="axis")
        if axis.is_batch or axis == x.feature_dim:
            raise self.error(f"the softmax axis must be spatial, not {x.dim_label(axis)} of {x.describe()}",
                             option="axis", suggestion="for the feature dim use {'class': 'activation', "
                                                       "'activation': 'softmax'}")
        return axis

    def _check_window(self) -> None:
        start, size = self.opts["window_start"], self.opts["window_size"]
        if (start is None) != (size is None):
            missing = "window_size" if size is None else "window_start"
            raise self.error(f"'window_start' and 'window_size' go together, but '{missing}' is not given",
                             option=missing, suggestion=f"give '{missing}' too, or leave out both")
        if isinstance(size, int) and size <= 0:
            raise self.error(f"'window_size' must be positive, not {size}", option="window_size",
                             suggestion="give the number of frames in the window, e.g. 'window_size': 5")

    def emit(self, inputs):
        x = inputs.x
        axis = self._axis(self.output)
        if self.opts["energy_factor"] is not None:
            x = x * self.opts["energy_factor"]
        valid = self._valid_frames(inputs, x, axis)
        if valid is not None:
            x = rf.where(valid, x, float("-inf"), dim_order=x.dims)
        y = rf.softmax(x, axis=axis, use_mask=False, log=self.opts["log_space"])
        return rf.permute(y, self.output.dims)

    def _valid_frames(self, inputs, x: rf.Tensor, axis: Dim) -> Optional[rf.Tensor]:
        """Bool Tensor (dims among `x`'s) of the frames the softmax covers, or None for all of them."""
        out, masks = self.output, []
        use_time_mask = self.opts["use_time_mask"]
        if use_time_mask or (use_time_mask is None and axis.is_dynamic):
            masks.append(rf.sequence_mask([axis], like=x))  # None without padding
        bounds = []  # (comparison, frame index): the frames the positions must be at
        start, window_start = self._position(inputs, "start"), self._position(inputs, "window_start")
        if start is not None:
            bounds.append(("greater_equal", start))
        if window_start is not None:
            bounds += [("greater_equal", window_start),
                       ("less", window_start + self._position(inputs, "window_size"))]
        if bounds:
            positions = rf.range_over_dim(axis, like=x)
            masks += [rf.compare(positions, kind, bound, dim_order=in_order_of(out, positions, bound))
                      for kind, bound in bounds]
        masks = [m for m in masks if m is not None]
        return fold(out, "logical_and", masks) if masks else None

    def _position(self, inputs, option: str):
        """The frame index that `option` gives: an int, an int32 Tensor (of a layer), or None."""
        value = self.opts[option]
        if isinstance(value, LayerBase):
            return rf.cast(inputs.value(value), "int32")
        return value

    def _check_position_layer(self, option: str, x: Data, axis: Dim) -> None:
        layer = self.opts[option]
        data = layer.output
        extra = [d for d in data.dims if not x.has_dim(d) or d == axis]
        if data.dtype not in INT_DTYPES or extra:
            raise self.error(f"'{option}' layer '{layer.name}' {data.describe()} {data.dtype} must hold ints with "
                             f"dims among those of the input {x.describe()}, without the softmax axis "
                             f"{axis.short_repr()}", option=option, kind=DimMismatchError,
                             suggestion="give int frame indices over the other axes, e.g. [B] from a 'length' "
                                        "layer or a 'cast' with 'dtype': 'int32'")


class StackLayer(LayerBase):
    """Stacks its inputs along a new static axis of size len(inputs) (`rf.stack`).

    Options: `axis` (None: the new axis goes right after the last batch or spatial axis, i.e. before a
    trailing feature dim; an int is its position in the output, counting batch, negative from the end).
    All inputs must have the same dims (in any order; the first input's order is kept; feature dims of the
    same size count as the same, as in `combine`), dtype and sparse dim. `dropout` applies to each float input.
    """

    layer_class = "stack"
    options = {"axis": Option(None, (int, NONE_TYPE))}

    def make_output(self):
        if not self.sources:
            raise self.error("stack needs at least one input in 'from'", option="from",
                             suggestion="e.g. 'from': ['a', 'b']")
        first = self.sources[0].output
        for src in self.sources[1:]:
            data = src.output
            same_dims = set(aligned_dims(data, first)) == set(first.dims)
            if not same_dims or data.dtype != first.dtype or data.sparse_dim != first.sparse_dim:
                raise self.error(f"inputs must have the same dims and dtype: '{self.sources[0].name}' "
                                 f"{first.describe()} {first.dtype} vs '{src.name}' {data.describe()} {data.dtype}",
                                 option="from", kind=DimMismatchError,
                                 suggestion="make them match first, e.g. with a 'cast' or 'reinterpret_data' layer")
        new = self.new_dim(len(self.sources), SPATIAL, f"{self.name}:stack")
        position = self._position(first)
        dims = first.dims[:position] + (new,) + first.dims[position:]
        return first.copy(name=self.name, dims=dims, time_dim=first.time_dim)

    def _position(self, first: Data) -> int:
        axis: Optional[int] = self.opts["axis"]
        ndim = first.batch_ndim
        if axis is None:
            kept = [i for i, d in enumerate(first.dims) if d != first.feature_dim]
            return kept[-1] + 1 if kept else 0
        if not -(ndim + 1) <= axis <= ndim:
            raise self.error(f"'axis' {axis} is out of range for the new axis of a {ndim + 1}-axis output "
                             f"(input {first.describe()})", option="axis",
                             suggestion=f"use an int in [{-(ndim + 1)}, {ndim}]")
        return axis % (ndim + 1)

    def emit(self, inputs):
        first = self.sources[0].output
        position = self._position(first)
        values = [aligned(source_value(inputs, self, src), first) for src in self.sources]
        return rf.stack(values, out_dim=self.output.dims[position], axis=position)
