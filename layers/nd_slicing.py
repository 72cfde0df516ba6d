"""Slices and scatters at positions that vary per sequence (and per frame): slice_nd (x[start:start + size] along an
axis, start per sequence or per frame) and scatter_nd (its inverse: values written to positions of a new axis)."""

from typing import List, Optional

from netcompiler import frontend as rf
from netcompiler.layer_base import NONE_TYPE, LayerBase, Option
from netcompiler.tensor import SPATIAL, Data, Dim, Tensor, resolve_dim

from .axis_options import AXIS, axis_dim, is_int


def _int_layer(layer: LayerBase, option: str) -> Optional[Data]:
    """The template of the layer option `option` names (None for a constant), checked to hold ints."""
    value = layer.opts[option]
    if not isinstance(value, LayerBase):
        return None
    if not value.output.dtype.startswith(("int", "uint")):
        raise layer.error(f"'{option}' layer '{value.name}' {value.output.describe()} has dtype "
                          f"{value.output.dtype}, but must hold int positions", option=option,
                          suggestion="cast it: {'class': 'cast', 'dtype': 'int32'}")
    return value.output


class SliceNdLayer(LayerBase):
    """`x[start:start + size]` along `axis` (default time), with `start` an int or a layer of int positions per
    sequence ([B]) or per frame ([B, T], [T], ...): the slice becomes a new axis placed where RETURNN's gather puts
    the positions (input axes shared with `start`, then the input's axes before `axis`, then `start`'s own axes and
    the slice, then the input's axes after `axis`). Frames of the slice outside the sequence (before 0 or at and
    beyond its length) are 0.

    Options: `start` (None: 0), `size` (required: an int gives a static slice axis; None: up to the end of each
    sequence, a dynamic axis with sizes length - start, at least `min_size`; a layer [B]: a dynamic axis of those
    sizes), `min_size` (None), `axis` ("T"), `out_spatial_dim` (None: a Dim for the slice axis).
    Emission: positions start + range(size), `rf.gather` with clipped positions, `rf.where` for those outside.
    Not supported (refused): a `size` layer with axes other than the batch, and `size` None with a per-frame start.
    Deliberate departures: a start without batch axis (e.g. [T]) reads each sequence up to its own length (RETURNN
    clips the positions to the longest sequence, so shorter ones read their padding); a static `axis` works (RETURNN
    1.20261022 fails on one).
    """

    layer_class = "slice_nd"
    options = {
        "start": Option(None, (int, str, NONE_TYPE), ref="layer_or_value"),
        "size": Option(types=(int, str, NONE_TYPE), ref="layer_or_value"),
        "min_size": Option(None, (int, NONE_TYPE)),
        "axis": Option("T", AXIS),
        "out_spatial_dim": Option(None, (Dim, NONE_TYPE)),
    }

    def _axis(self) -> Dim:
        return axis_dim(self, self.input_data, "axis", "slice")

    def _start(self) -> Optional[Data]:
        start = _int_layer(self, "start")
        x = self.input_data
        if start is None:
            value = self.opts["start"]
            if value is not None and value < 0:
                raise self.error(f"'start' is {value}, but an int start must be >= 0", option="start")
            return None
        foreign = [d for d in start.dims if not x.has_dim(d)]
        if foreign:
            raise self.error(f"'start' layer '{self.opts['start'].name}' {start.describe()} has axes the input "
                             f"{x.describe()} does not have: {[d.short_repr() for d in foreign]}", option="start")
        return start

    def _slice_dim(self) -> Dim:
        size, start = self.opts["size"], self._start()
        declared = self.opts["out_spatial_dim"]
        if is_int(size):
            if size < 0:
                raise self.error(f"'size' is {size}, but must be >= 0", option="size")
            made = self.new_dim(size, SPATIAL, f"sliced-time:{self.name}")
        else:
            if isinstance(size, LayerBase):
                data = _int_layer(self, "size")
                if any(not d.is_batch for d in data.dims):
                    raise self.error(f"'size' layer '{size.name}' {data.describe()} may only have the batch axis",
                                     option="size", suggestion="give an int size, or sizes per sequence [B]")
            elif start is not None and any(not d.is_batch for d in start.dims):
                raise self.error("'size' None (to the end of each sequence) with a per-frame 'start' is not "
                                 "supported by netcompiler", option="size", suggestion="give an int size")
            made = self.new_dim(None, SPATIAL, f"sliced-time:{self.name}")
        if declared is not None:
            if declared.size != made.size:
                raise self.error(f"'out_spatial_dim' {declared.short_repr()} does not fit the slice "
                                 f"{made.short_repr()}", option="out_spatial_dim")
            return declared
        return made

    def _out_dims(self) -> List[Dim]:
        x, axis, start = self.input_data, self._axis(), self._start()
        positions = list(start.dims) if start is not None else []
        shared = [d for d in x.dims if d != axis and d in positions]
        new = [d for d in positions if d not in shared] + [self._slice_dim()]
        at = x.axis_of(axis)
        before = [d for d in x.dims[:at] if d not in shared]
        after = [d for d in x.dims[at + 1:] if d not in shared]
        return shared + before + new + after

    def make_output(self) -> Data:
        x = self.input_data
        axis = self._axis()
        dims = self._out_dims()
        time = x.time_dim if x.time_dim in dims and x.time_dim != axis else None
        if time is None and axis in dims:
            time = axis  # a per-frame start over the sliced axis itself
        feature = x.feature_dim if x.feature_dim in dims else None
        roles = {"time_dim": time} if time is not None else {}  # else the default: a dynamic slice axis
        return Data(self.name, dims, x.dtype, sparse_dim=x.sparse_dim, feature_dim=feature, **roles)

    def emit(self, inputs):
        x = inputs.x
        axis, sliced = self._axis(), self._slice_dim()
        start = inputs.value(self.opts["start"]) if self._start() is not None else (self.opts["start"] or 0)
        length = inputs.run.size(axis)
        if sliced.is_dynamic:
            inputs.set_size(sliced, self._sizes(inputs, start, length))
        offsets = rf.range_over_dim(sliced, dtype=start.dtype if isinstance(start, Tensor) else "int32")
        positions = rf.cast(rf.combine(offsets, "add", start), "int32")
        y = rf.gather(x, indices=positions, axis=axis, clip_to_valid=True)
        inside = rf.combine(rf.compare(positions, "greater_equal", 0), "logical_and",
                            rf.compare(positions, "less", length))
        y = rf.where(inside, y, 0)
        return rf.permute(y, self.output.dims)

    def _sizes(self, inputs, start, length):
        size = self.opts["size"]
        if isinstance(size, LayerBase):
            sizes = inputs.value(size)
        else:
            sizes = rf.combine(rf.dim_size_tensor(self._axis()), "sub", start)
        sizes = rf.cast(sizes, "int32")
        return rf.maximum(sizes, self.opts["min_size"] or 0)


class ScatterNdLayer(LayerBase):
    """The inverse of a gather: the input's frames along the `position_axis` of `position` are written to the
    positions `position` holds on a new axis (the time axis of `output_dim_via_time_from`, or `out_spatial_dim`);
    frames written to the same position add up, positions written by no frame are 0.

    The output has `position`'s dims (in its order, `position_axis` replaced by the new axis), then the input's
    other dims (as RETURNN's template). Options: `position` (required, an int layer), `position_axis` (required),
    `output_dim_via_time_from` (None), `out_spatial_dim` (None; exactly one of the two), `filter_invalid_indices`
    (False). Emission: a comparison of the positions with the new axis' frames ([..., position_axis, new axis]),
    the input summed where they agree (`rf.where`, `rf.reduce`).
    Deliberate departures: padded frames of `position_axis` are not scattered (RETURNN scatters them too, so their
    garbage can land on valid frames); positions outside the new axis are dropped whether or not
    `filter_invalid_indices` is set (RETURNN fails on them without it).
    """

    layer_class = "scatter_nd"
    options = {
        "position": Option(types=(str,), ref="layer"),
        "position_axis": Option(types=AXIS),
        "output_dim_via_time_from": Option(None, (str, NONE_TYPE), ref="layer"),
        "out_spatial_dim": Option(None, (Dim, NONE_TYPE)),
        "filter_invalid_indices": Option(False, (bool,)),
    }

    def _new_dim(self) -> Dim:
        via, declared = self.opts["output_dim_via_time_from"], self.opts["out_spatial_dim"]
        if (via is None) == (declared is None):
            raise self.error("give exactly one of 'output_dim_via_time_from' and 'out_spatial_dim'",
                             option="output_dim_via_time_from",
                             suggestion="e.g. 'output_dim_via_time_from': 'data' (its time axis)")
        if declared is not None:
            return declared
        if via.output.time_dim is None:
            raise self.error(f"'output_dim_via_time_from' layer '{via.name}' {via.output.describe()} has no time "
                             f"axis", option="output_dim_via_time_from")
        return via.output.time_dim

    def _axes(self):
        """(position axis, the output's dims)."""
        position = _int_layer(self, "position")
        axis = resolve_dim(position, self.opts["position_axis"], layer=self.name, option="position_axis")
        if axis.is_batch:
            raise self.error("'position_axis' cannot be the batch axis", option="position_axis")
        new = self._new_dim()
        x = self.input_data
        if not x.has_dim(axis):
            raise self.error(f"the input {x.describe()} has no axis {position.dim_label(axis)} of 'position_axis' "
                             f"(the axis of the values to scatter)", option="position_axis")
        if new != axis and (x.has_dim(new) or position.has_dim(new)):
            raise self.error(f"the new axis {new.short_repr()} is already an axis of the input or of 'position'",
                             option="output_dim_via_time_from")
        dims = [new if d == axis else d for d in position.dims] + [d for d in x.dims if not position.has_dim(d)]
        return axis, dims

    def make_output(self) -> Data:
        x = self.input_data
        if x.dtype == "bool":
            raise self.error(f"the input {x.describe()} is bool; scattered values are summed", option="from",
                             suggestion="cast it to int32 or float32 first")
        axis, dims = self._axes()
        new = self._new_dim()
        out = Data(self.name, dims, x.dtype, sparse_dim=x.sparse_dim)
        if out.time_dim is None and not new.is_batch:
            out = out.copy(time_dim=new)
        return out

    def emit(self, inputs):
        x = inputs.x
        axis, dims = self._axes()
        new = self._new_dim()
        if new == axis:  # the positions axis and the new axis are the same dim: compare over a copy of it
            source = self.new_dim(None if axis.is_dynamic else axis.size, axis.kind, f"{self.name}:updates")
            if source.is_dynamic:
                inputs.set_size(source, inputs.run.size(axis))
            x = rf.replace_dim(x, in_dim=axis, out_dim=source)
            position = rf.replace_dim(inputs.value(self.opts["position"]), in_dim=axis, out_dim=source)
        else:
            source, position = axis, inputs.value(self.opts["position"])
        frames = rf.cast(rf.range_over_dim(new), position.dtype)
        hit = rf.compare(position, "equal", frames)
        mask = rf.sequence_mask([source])
        if mask is not None:
            hit = rf.combine(hit, "logical_and", mask)
        y = rf.reduce(rf.where(hit, x, 0), mode="sum", axis=source, use_mask=False)
        return rf.permute(y, self.output.dims)
