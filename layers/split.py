"""The split layer and its parts "<layer>/0", "<layer>/1", ..."""

from typing import List, Tuple

from netcompiler import frontend as rf
from netcompiler.layer_base import NONE_TYPE, MissingOptionError, Option
from netcompiler.layer_parts import LayerWithParts, PartLayer
from netcompiler.tensor import Dim, resolve_dim

from .shape import AXIS_TYPES, size_text


class SplitLayer(LayerWithParts):
    """Cuts one static axis into consecutive parts, reachable as sublayers "<layer>/0", "<layer>/1", ...;
    the layer's own output is its input unchanged.

    Options: `axis` (None: the feature axis), `num_splits` (None; that many equal parts) or
    `size_splits` (None; a list of positive part sizes summing to the axis size) -- exactly one of the two.
    Parts of the same size share one Dim `<layer>:part<size>` (so that e.g. "split/0" and "split/1" of
    `num_splits: 2` can be combined elementwise); a single part keeps the input's Dim.
    Emission: the layer emits its input once; each part is a static slice of it (`rf.slice`), so a part that
    no one reads costs nothing.
    """

    layer_class = "split"
    options = {
        "axis": Option(None, AXIS_TYPES + (NONE_TYPE,), doc="the axis to split; default: the feature axis"),
        "num_splits": Option(None, (int, NONE_TYPE)),
        "size_splits": Option(None, (list, tuple, NONE_TYPE)),
    }

    def make_output(self):
        self.part_dims()  # checks the options
        return self.input_data.copy(name=self.name)

    def emit(self, inputs):
        return inputs.x

    def split_dim(self) -> Dim:
        """The (static) axis that is split."""
        x = self.input_data
        axis = self.opts["axis"]
        dim = resolve_dim(x, "F" if axis is None else axis, layer=self.name, option="axis")
        if dim.is_batch or dim.is_dynamic:
            raise self.error(f"'axis': {x.dim_label(dim)} of the input {x.describe()} is dynamic; "
                             f"split needs a static size", option="axis")
        return dim

    def part_dims(self) -> List[Dim]:
        """The Dim of each part: one per size, shared by the parts of that size; a single part keeps the axis's."""
        dim = self.split_dim()
        sizes = self._part_sizes(dim)
        if len(sizes) == 1:
            return [dim]
        shared = {s: self.new_dim(s, dim.kind, f"{self.name}:part{s}") for s in sizes}
        return [shared[s] for s in sizes]

    def part_range(self, index: int) -> Tuple[int, int]:
        """Where part `index` starts and ends on the split axis."""
        parts = self.part_dims()
        start = sum(d.size for d in parts[:index])
        return start, start + parts[index].size

    def _part_sizes(self, dim: Dim) -> List[int]:
        num, sizes = self.opts["num_splits"], self.opts["size_splits"]
        if num is None and sizes is None:
            raise self.error("split needs 'num_splits' or 'size_splits'", option="num_splits",
                             kind=MissingOptionError)
        if num is not None and sizes is not None:
            raise self.error("give either 'num_splits' or 'size_splits', not both", option="size_splits")
        if num is not None:
            if num < 1 or dim.size % num:
                raise self.error(f"'num_splits' is {num}, which does not divide the axis {dim.short_repr()} "
                                 f"({size_text(dim)})", option="num_splits")
            return [dim.size // num] * num
        sizes = list(sizes)
        if not sizes or not all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in sizes):
            raise self.error(f"'size_splits' is {sizes!r}; expected a non-empty list of positive ints",
                             option="size_splits")
        if sum(sizes) != dim.size:
            raise self.error(f"'size_splits' {sizes!r} sum to {sum(sizes)}, but the axis {dim.short_repr()} has "
                             f"{size_text(dim)}", option="size_splits")
        return sizes

    # --- sublayers --------------------------------------------------------------------------------
    def sub_layer_names(self) -> List[str]:
        return [str(i) for i in range(len(self.part_dims()))]

    def make_part_layer(self, part: str) -> "SplitPartLayer":
        return SplitPartLayer(self, part)


class SplitPartLayer(PartLayer):
    """Part `index` of a split layer: its input with the split axis cut to that part (no own options)."""

    @property
    def index(self) -> int:
        return int(self.part)

    def make_output(self):
        parent = self.parent
        return parent.output.copy_replace_dim(parent.split_dim(), parent.part_dims()[self.index], name=self.name)

    def emit(self, inputs):
        parent = self.parent
        start, stop = parent.part_range(self.index)
        return rf.slice(inputs.value(parent), axis=parent.split_dim(), start=start, end=stop,
                        out_dim=parent.part_dims()[self.index])
