"""The layer `pad`: frames added at both ends of axes, constant or mirrored within each sequence's own length."""

from typing import List, Tuple

from netcompiler import frontend as rf
from netcompiler.layer_base import NONE_TYPE, NUMBER, LayerBase, Option
from netcompiler.tensor import Dim, Tensor, pad_dim, resolve_dims

from .axis_options import AXES, check_fill_value, check_not_batch, is_int
from .sequence_masks import compare_in, sequence_sizes

PAD_MODES = ("constant", "reflect", "symmetric", "replication")


class PadLayer(LayerBase):
    """Adds `padding` frames before and after each of `axes` (each padded axis gets a derived dim).

    Options: `axes` (required; not the batch axis), `padding` (required: an int for both sides of
    every axis, a pair (left, right) for every axis, or a list of pairs, one per axis), `value` (0;
    for mode "constant"), `mode` ("constant", "reflect", "symmetric" or "replication"; reflect needs
    padding < size, symmetric padding <= size, replication a non-empty axis, checked on static axes).
    On a dynamic axis every sequence is padded on its own: right padding follows each sequence's last
    frame, and reflect/symmetric/replication mirror or repeat the sequence's own frames; where a
    sequence is shorter than the padding, reflect and symmetric reflect again (as NumPy's np.pad does).
    `handle_dynamic_dims` (None: True) False is RETURNN's old behaviour: the padded batch is padded as a whole,
    so right padding comes after the longest sequence and a shorter sequence's new frames are whatever its input
    holds beyond its length (RETURNN's default below behavior_version 21; here only when asked for).
    Emission: `rf.pad` of the padded tensor, then the right padding of each sequence set to `value`
    (`rf.where`); mirrored and repeated frames are gathered by index (`rf.take_frames`).
    """

    layer_class = "pad"
    options = {
        "axes": Option(types=AXES),
        "padding": Option(types=(int, list, tuple), doc="int, (left, right) or [(left, right), ...]"),
        "value": Option(0, NUMBER),
        "mode": Option("constant", (str,), choices=PAD_MODES),
        "handle_dynamic_dims": Option(None, (bool, NONE_TYPE), doc="False: pad the padded batch as a whole"),
    }

    def make_output(self):
        x = self.input_data
        check_fill_value(self, x, "value")
        out = x.copy(name=self.name)
        for dim, left, right in self._pad_axes():
            self._check_mode_fits(dim, left, right)
            out = out.copy_replace_dim(dim, pad_dim(dim, left, right))
        return out

    def _pad_axes(self) -> List[Tuple[Dim, int, int]]:
        """Each padded axis of the input with its (left, right) padding."""
        x = self.input_data
        dims = resolve_dims(x, self.opts["axes"], layer=self.name, option="axes")
        if not dims:
            raise self.error(f"option 'axes' {self.opts['axes']!r} names no axis of {x.describe()}", option="axes",
                             suggestion="name the axes to pad, e.g. 'T' or ['T', 'F']")
        pads = [(dim, left, right) for dim, (left, right) in zip(dims, self._paddings(len(dims)))]
        for dim, _, _ in pads:
            check_not_batch(self, dim, "axes", "pad")
        return pads

    def emit(self, inputs):
        x = inputs.x
        for dim, left, right in self._pad_axes():
            x = self._pad_axis(inputs.run, x, dim, left, right)
        return x

    def _pad_axis(self, run: rf.RunContext, x: Tensor, dim: Dim, left: int, right: int) -> Tensor:
        mode, value, out_dim = self.opts["mode"], self.opts["value"], pad_dim(dim, left, right)
        sizes = sequence_sizes(run, x, dim) if self.opts["handle_dynamic_dims"] is not False else None
        if mode == "replication" or (sizes is not None and mode != "constant"):
            offsets = rf.range_over_dim(out_dim)  # relative to the first frame
            if left:
                offsets = offsets - left
            # repeating the axis's own first/last frame is what clipping into the axis does
            indices = offsets if sizes is None else _mirrored_frames(mode, offsets, sizes)
            return rf.take_frames(x, indices=indices, axis=dim, clip_to_valid=True)
        y = rf.pad(x, axes=[dim], padding=[(left, right)], out_dims=[out_dim], mode=mode, value=value)
        if sizes is not None and right > 0:  # the right padding follows each sequence's own end
            ends = sizes + left if left else sizes
            y = rf.where(compare_in(y, ends, "greater", rf.range_over_dim(out_dim, like=y)), y, value)
        return y

    def _paddings(self, count: int) -> List[Tuple[int, int]]:
        padding = self.opts["padding"]
        if is_int(padding):
            pairs = [(padding, padding)] * count
        elif len(padding) == 2 and all(is_int(p) for p in padding):
            pairs = [tuple(padding)] * count
        elif all(isinstance(p, (list, tuple)) and len(p) == 2 and all(is_int(q) for q in p) for p in padding):
            pairs = [tuple(p) for p in padding]
        else:
            raise self.error(f"option 'padding' is {padding!r}; expected an int, (left, right) or a list of "
                             f"(left, right) pairs", option="padding", suggestion="e.g. 'padding': (2, 1)")
        if len(pairs) != count:
            raise self.error(f"option 'padding' has {len(pairs)} pairs, but 'axes' names {count} axes",
                             option="padding", suggestion="give one (left, right) pair per axis")
        if any(p < 0 for pair in pairs for p in pair):
            raise self.error(f"option 'padding' {padding!r} is negative", option="padding",
                             suggestion="use a 'slice' layer to remove frames")
        return pairs

    def _check_mode_fits(self, dim: Dim, left: int, right: int) -> None:
        mode, size, most = self.opts["mode"], dim.size, max(left, right)
        if mode == "constant" or size is None or most == 0:
            return
        fits = {"reflect": most < size, "symmetric": most <= size, "replication": size > 0}[mode]
        if not fits:
            limit = {"reflect": size - 1, "symmetric": size}.get(mode)
            raise self.error(f"option 'padding' pads {dim.short_repr()} by {most} frames, more than mode '{mode}' "
                             f"can", option="padding",
                             suggestion=f"pad by at most {limit} frames with mode '{mode}', or use mode 'constant'"
                             if limit is not None else "use mode 'constant'")


def _mirrored_frames(mode: str, offsets: Tensor, lengths: Tensor) -> Tensor:
    """Which frame of a sequence of `lengths` frames (e.g. [B]) each of `offsets` ([N]: relative to its first
    frame; below 0 or beyond its end in the padding) shows in mode reflect, symmetric or replication; periodic
    beyond one reflection, as np.pad. Laid out as [*lengths.dims, N]."""
    if mode == "replication":
        return rf.minimum(lengths - 1, rf.maximum(offsets, 0))
    # within a period, the frame is the phase on the way there and (period [- 1]) - phase on the way back,
    # whichever is smaller
    if mode == "reflect":  # ... 2 1 [0 1 2 ... n-1] n-2 ...
        period = rf.maximum(2 * (lengths - 1), 1)
        back = period
    else:  # symmetric: ... 1 0 [0 1 ... n-1] n-1 ...
        period = rf.maximum(2 * lengths, 1)
        back = period - 1
    phase = rf.combine(offsets, "mod", period, dim_order=lengths.dims + offsets.dims)
    return rf.minimum(phase, back - phase)
