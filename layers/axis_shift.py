"""Layers that move frames along an axis: shift_axis (all frames a fixed amount to the left or right, padding or
cutting at the ends) and remove (a symbol taken out of each sequence, the rest closing up)."""

from netcompiler import frontend as rf
from netcompiler.layer_base import NONE_TYPE, NUMBER, LayerBase, Option
from netcompiler.tensor import Data, Dim, pad_dim, resolve_dim, slice_dim

from .repeat_tile import _declared_out_dim, _set_declared_sizes, repeat_frames
from .axis_options import AXIS, axis_dim, check_fill_value


class ShiftAxisLayer(LayerBase):
    """The frames of one axis shifted by `amount` (> 0: to the right, the last `amount` frames of the padded axis
    dropped; < 0: to the left, the first ones dropped). With `pad`, `pad_value` fills the frames that became
    empty, so the padded length stays; without, the axis is |amount| shorter.

    Options: `axis` (required), `amount` (required, a non-zero int), `pad` (True), `pad_value` (0),
    `adjust_size_info` (True). Sizes of a dynamic axis, as in RETURNN: size + amount for a left shift, size +
    amount (right, with `pad`) or size (right, without) otherwise, clipped into [0, the padded length]; with
    `adjust_size_info` False and `pad`, the axis keeps its dim and sizes. Emission: `rf.pad` and `rf.slice` of
    the padded tensor, as RETURNN does.
    Deliberate departures: a static axis with `pad` keeps its size (RETURNN's template claims size - |amount|, which
    its own values do not have); `adjust_size_info` False without `pad` on a dynamic axis is refused (the sizes
    would run past the shortened axis).
    """

    layer_class = "shift_axis"
    options = {
        "axis": Option(types=AXIS),
        "amount": Option(types=(int,)),
        "pad": Option(True, (bool,)),
        "pad_value": Option(0, NUMBER + (bool,)),
        "adjust_size_info": Option(True, (bool,)),
    }

    def _axis(self) -> Dim:
        return axis_dim(self, self.input_data, "axis", "shift")

    def _amount(self) -> int:
        amount = self.opts["amount"]
        if amount == 0:
            raise self.error("'amount' 0 shifts nothing (RETURNN refuses it too)", option="amount",
                             suggestion="leave the layer out, or give a non-zero amount")
        return amount

    def _out_dim(self) -> Dim:
        axis, amount, pad = self._axis(), self._amount(), self.opts["pad"]
        if axis.is_dynamic:
            if pad and not self.opts["adjust_size_info"]:
                return axis
            if not pad and not self.opts["adjust_size_info"]:
                raise self.error("'adjust_size_info' False without 'pad' on a dynamic axis would keep sizes longer "
                                 "than the shortened axis", option="adjust_size_info",
                                 suggestion="set 'pad': True, or leave 'adjust_size_info' at True")
            return self.new_dim(None, axis.kind, f"{self.name}_shift_axis")
        if pad:
            return axis
        return slice_dim(axis, 0, -abs(amount), None, description=f"{self.name}_shift_axis") \
            if abs(amount) < axis.size else self.new_dim(0, axis.kind, f"{self.name}_shift_axis")

    def make_output(self) -> Data:
        x = self.input_data
        if self.opts["pad"]:
            check_fill_value(self, x, "pad_value")
        return x.copy(name=self.name).copy_replace_dim(self._axis(), self._out_dim())

    def emit(self, inputs):
        x = inputs.x
        axis, amount, pad, out = self._axis(), self._amount(), self.opts["pad"], self._out_dim()
        n = abs(amount)
        value = self.opts["pad_value"]
        value = int(value) if x.dtype.startswith(("int", "uint")) or x.dtype == "bool" else value
        if pad:
            padded = pad_dim(axis, n if amount > 0 else 0, n if amount < 0 else 0)
            y = rf.pad(x, axes=[axis], padding=[(n, 0) if amount > 0 else (0, n)], out_dims=[padded],
                       mode="constant", value=value)
            y = rf.slice(y, axis=padded, start=0 if amount > 0 else n, end=-n if amount > 0 else None, out_dim=out)
        else:
            y = rf.slice(x, axis=axis, start=0 if amount > 0 else n, end=-n if amount > 0 else None, out_dim=out)
        if out.is_dynamic and out != axis:
            delta = amount if amount < 0 or pad else 0
            length = rf.convert_to_tensor(rf.shape_of([axis])[0], dtype="int32")
            if not pad:
                length = rf.maximum(rf.combine(length, "sub", n), 0)
            sizes = rf.combine(rf.dim_size_tensor(axis), "add", delta)
            inputs.set_size(out, rf.clip_by_value(sizes, 0, length))
        return y


class RemoveLayer(LayerBase):
    """Sparse sequences with every frame of class `symbol` taken out, the remaining frames closing up in order: the
    axis becomes a new dynamic dim whose sizes are the numbers of frames kept.

    Options: `symbol` (required, a class index; negative counts from the end), `axis` ("T"), `out_dim` (None).
    The input must be one sparse [B, T] source (RETURNN's condition). Emission: `repeat_frames` with a count of 1
    on kept frames, 0 on removed ones.
    Deliberate departure: RETURNN 1.20261022 cannot build this layer (its template leaves the new dim without
    sizes: corpus cause returnn-remove-undefined-dim); here it works as RETURNN's code intends.
    """

    layer_class = "remove"
    options = {
        "symbol": Option(types=(int,)),
        "axis": Option("T", AXIS),
        "out_dim": Option(None, (Dim, NONE_TYPE)),
    }

    def _axis(self) -> Dim:
        x = self.input_data
        if len(self.sources) != 1 or not x.sparse or x.batch_ndim != 2 or not x.has_batch:
            raise self.error(f"the input must be one sparse source [B, T], not {x.describe()}", option="from",
                             suggestion="for other inputs use 'masked_computation' with a 'compare' mask")
        dim = resolve_dim(x, self.opts["axis"], layer=self.name, option="axis")
        if dim.is_batch:
            raise self.error("cannot remove frames of the batch axis", option="axis", suggestion="use 'T'")
        return dim

    def _symbol(self) -> int:
        symbol, classes = self.opts["symbol"], self.input_data.sparse_dim.size
        if classes is not None:
            if not -classes <= symbol < classes:
                raise self.error(f"'symbol' {symbol} is no class of the input {self.input_data.describe()} "
                                 f"({classes} classes)", option="symbol")
            symbol %= classes
        return symbol

    def _made_dim(self) -> Dim:
        axis = self._axis()
        return self.new_dim(None, axis.kind, f"{self.name}_removed_items")

    def make_output(self) -> Data:
        axis = self._axis()
        self._symbol()
        x = self.input_data.copy_with_batch_first().copy(name=self.name)
        return x.copy_replace_dim(axis, _declared_out_dim(self, "out_dim", self._made_dim()))

    def emit(self, inputs):
        x = inputs.x
        axis, made = self._axis(), self._made_dim()
        out = _declared_out_dim(self, "out_dim", made)
        keep = rf.cast(rf.compare(x, "not_equal", self._symbol()), "int32")
        y = repeat_frames(x, keep, axis, made, inputs)
        _set_declared_sizes(inputs, made, out)
        y = rf.replace_dim(y, in_dim=made, out_dim=out) if out is not made else y
        return rf.masked(rf.permute(y, self.output.dims), [out], 0)

