"""Indexing layers: slice (x[start:end:step] along one axis) and gather (the frames at given positions)."""

from typing import Tuple

from netcompiler import frontend as rf
from netcompiler.layer_base import NONE_TYPE, LayerBase, Option
from netcompiler.tensor import INT_DTYPES, Dim, slice_dim

from .axis_options import AXIS, axis_dim, is_int
from .sequence_masks import sequence_sizes


class SliceLayer(LayerBase):
    """`x[slice_start:slice_end:slice_step]` along one axis; a dynamic axis gets a derived dim.

    Options: `axis` (required; not the batch axis), `slice_start`, `slice_end`, `slice_step` (None, as
    in Python; negative start/end count from the end of each sequence). Negative steps are not
    supported by netcompiler yet. `axis_kind` (deprecated in RETURNN) is rejected.
    A negative start on a dynamic axis gathers each sequence's frames from its own end (`rf.take_frames`);
    otherwise the slice is one `rf.slice` of the padded tensor (the derived dim's sizes cut off the rest).
    """

    layer_class = "slice"
    options = {
        "axis": Option(types=AXIS),
        "axis_kind": Option(None, (str, NONE_TYPE), doc="deprecated; use 'axis'"),
        "slice_start": Option(None, (int, NONE_TYPE)),
        "slice_end": Option(None, (int, NONE_TYPE)),
        "slice_step": Option(None, (int, NONE_TYPE)),
    }

    def make_output(self):
        if self.opts["axis_kind"] is not None:
            raise self.error("option 'axis_kind' is not supported by netcompiler yet", option="axis_kind",
                             suggestion=f"use 'axis': {self.opts['axis_kind']!r}")
        dim, sliced = self._sliced_dims()
        return self.input_data.copy_replace_dim(dim, sliced, name=self.name)

    def _sliced_dims(self) -> Tuple[Dim, Dim]:
        """The sliced axis of the input and the Dim it becomes."""
        dim = axis_dim(self, self.input_data, "axis", "slice")
        step = self.opts["slice_step"]
        if step is not None and step <= 0:
            raise self.error(f"option 'slice_step' is {step}; only steps > 0 are supported by netcompiler yet",
                             option="slice_step", suggestion="use a positive step such as 1 or 2, or leave it out "
                                                             "(every frame)")
        return dim, slice_dim(dim, self.opts["slice_start"], self.opts["slice_end"], step)

    def emit(self, inputs):
        x = inputs.x
        dim, sliced = self._sliced_dims()
        start, end, step = (self.opts[k] for k in ("slice_start", "slice_end", "slice_step"))
        sizes = sequence_sizes(inputs.run, x, dim) if start is not None and start < 0 else None
        if sizes is not None:  # each sequence's slice begins -start frames before its own end
            frames = rf.range_over_dim(sliced)
            if step not in (None, 1):
                frames = frames * step
            indices = rf.maximum(sizes + start, 0) + frames
            return rf.take_frames(x, indices=indices, axis=dim, clip_to_valid=True)
        if sliced == dim:
            return x
        # a start >= 0 is the same frame in every sequence; the end is in the derived dim's sizes
        return rf.slice(x, axis=dim, start=start, end=end, step=step, out_dim=sliced)


class GatherLayer(LayerBase):
    """Picks entries along `axis` of the input at the indices `position`.

    With an int `position` the axis is removed (`x[..., position, ...]`; negative counts from the end,
    only on static axes). With a layer (integer dtype), axes that input and position share act as
    batch axes and the gathered axis is replaced, in place, by the position's other axes: input
    [B, T, F] gathered on T with position [B, N] gives [B, N, F]. Options: `position` (layer name or
    int, required), `axis` (required; not the batch axis).
    Indices beyond the axis are clipped to its first/last frame (`rf.gather` with `clip_to_valid`; TF on
    CPU would fail on them, TF on GPU gives zeros), so garbage in the padded frames of `position` is harmless.
    """

    layer_class = "gather"
    options = {
        "position": Option(types=(str, int), ref="layer_or_value", doc="index layer or int"),
        "axis": Option(types=AXIS),
    }

    def make_output(self):
        x = self.input_data
        dim = self._gather_axis()
        position = self.opts["position"]
        if is_int(position):
            self._check_index(dim, position)
            return x.copy_without_dims([dim], name=self.name)
        indices = position.output
        if indices.dtype not in INT_DTYPES:
            raise self.error(f"option 'position' names '{position.name}' {indices.describe()}, which has dtype "
                             f"{indices.dtype}; indices must be integers", option="position",
                             suggestion="add a 'cast' layer")
        new_axes = tuple(d for d in indices.dims if d == dim or not x.has_dim(d))
        axis = x.axis_of(dim)
        return x.copy(name=self.name, dims=x.dims[:axis] + new_axes + x.dims[axis + 1:])

    def _gather_axis(self) -> Dim:
        return axis_dim(self, self.input_data, "axis", "gather from")

    def emit(self, inputs):
        dim, position = self._gather_axis(), self.opts["position"]
        if is_int(position):  # a static axis has that index (checked); only a dynamic one may be shorter
            index = position % dim.size if position < 0 else position
            return rf.gather(inputs.x, indices=index, axis=dim, clip_to_valid=dim.is_dynamic)
        # the axes that input and position share are the gather's batch axes
        return rf.gather(inputs.x, indices=inputs.value(position), axis=dim, clip_to_valid=True)

    def _check_index(self, dim: Dim, index: int) -> None:
        if dim.is_dynamic and index < 0:
            raise self.error(f"option 'position' {index} is negative, but {dim.short_repr()} is dynamic",
                             option="position", suggestion="use a non-negative index")
        if not dim.is_dynamic and not -dim.size <= index < dim.size:
            raise self.error(f"option 'position' {index} is out of range for {dim.short_repr()}", option="position",
                             suggestion=f"use an index from {-dim.size} to {dim.size - 1}")
