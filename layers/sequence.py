"""Indexing and sequence layers: slice, gather, pad, window, cumsum, seq_len_mask."""

import functools
from typing import List, Tuple

from netcompiler.layer_base import NONE_TYPE, NUMBER, LayerBase, Option
from netcompiler.lazy_tf import ops, tf
from netcompiler.tensor import (
    INT_DTYPES, SPATIAL, Data, Dim, conv_out_dim, pad_dim, resolve_dim, resolve_dims, slice_dim,
)

AXIS = (str, int, Dim)
AXES = AXIS + (list, tuple)
PAD_MODES = ("constant", "reflect", "symmetric", "replication")


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _axis_dim(layer: LayerBase, x: Data, option: str, doing: str) -> Dim:
    """The one non-batch Dim of `x` that option `option` names."""
    dim = resolve_dim(x, layer.opts[option], layer=layer.name, option=option)
    _check_not_batch(layer, dim, option, doing)
    return dim


def _check_not_batch(layer: LayerBase, dim: Dim, option: str, doing: str) -> None:
    if dim.is_batch:
        raise layer.error(f"cannot {doing} the batch axis (option '{option}' is {layer.opts[option]!r})",
                          option=option, suggestion="name a time, spatial or feature axis")


def _int_at_least(layer: LayerBase, option: str, minimum: int) -> int:
    value = layer.opts[option]
    if value < minimum:
        raise layer.error(f"option '{option}' is {value}, but must be >= {minimum}", option=option)
    return value


def _check_fill_value(layer: LayerBase, x: Data, option: str) -> None:
    """A constant written into `x` (pad value, mask value) must fit its dtype."""
    value = layer.opts[option]
    if x.dtype in INT_DTYPES and isinstance(value, float) and not value.is_integer():
        raise layer.error(f"option '{option}' is {value}, but the input {x.describe()} has dtype {x.dtype}",
                          option=option, suggestion="use an integer value")


def _along(values, data: Data, axis: int):
    """A 1-D tensor (or a scalar) reshaped to lie along `axis` of a tensor laid out as `data`."""
    if values.shape.rank == 0:
        return values
    shape = [1] * data.batch_ndim
    shape[axis] = -1
    return tf.reshape(values, shape)


def _positions(data: Data, x, dim: Dim):
    """The frame indices 0, 1, ... along `dim`, broadcastable to `x` (laid out as `data`)."""
    axis = data.axis_of(dim)
    return _along(tf.range(tf.shape(x)[axis]), data, axis)


def _per_sequence(data: Data, values):
    """Per-sequence int values ([B], or a scalar for all) as int32, broadcastable to a tensor laid out as `data`."""
    return _along(tf.cast(values, tf.int32), data, data.batch_dim_axis)


def _take_frames(data: Data, x, dim: Dim, indices):
    """The frames `indices` of `x` along `dim`, clipped into the axis; `indices` is [N] (the same for every
    sequence) or [B, N] (per sequence). The axis of `dim` becomes N long; the layout stays that of `data`."""
    axis = data.axis_of(dim)
    indices = tf.clip_by_value(indices, 0, tf.shape(x)[axis] - 1)
    if indices.shape.rank == 1:
        return tf.gather(x, indices, axis=axis)
    batch = data.batch_dim_axis
    y = tf.gather(ops.move_axis(x, batch, 0), indices, axis=axis + int(axis < batch), batch_dims=1)
    return ops.move_axis(y, 0, batch)


def _is_per_sequence(data: Data, dim: Dim) -> bool:
    """Whether the frames of `dim` end at each sequence's own length (else at the axis's end)."""
    return dim.is_dynamic and data.has_batch


class SliceLayer(LayerBase):
    """`x[slice_start:slice_end:slice_step]` along one axis; a dynamic axis gets a derived dim.

    Options: `axis` (required; not the batch axis), `slice_start`, `slice_end`, `slice_step` (None, as
    in Python; negative start/end count from the end of each sequence). Negative steps are not
    supported by netcompiler yet. `axis_kind` (deprecated in RETURNN) is rejected.
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
        x = self.input_data
        dim = self.axis_dim = _axis_dim(self, x, "axis", "slice")
        step = self.opts["slice_step"]
        if step is not None and step <= 0:
            raise self.error(f"option 'slice_step' is {step}; only steps > 0 are supported by netcompiler yet",
                             option="slice_step")
        sliced = slice_dim(dim, self.opts["slice_start"], self.opts["slice_end"], step)
        return x.copy_replace_dim(dim, sliced, name=self.name)

    def emit(self, ctx):
        x, data, dim = ctx.input(self), self.input_data, self.axis_dim
        start, end, step = (self.opts[k] for k in ("slice_start", "slice_end", "slice_step"))
        if start is not None and start < 0 and _is_per_sequence(data, dim):
            return self._slice_from_ends(ctx, x, data, start, step or 1)
        # a start >= 0 is the same frame in every sequence; the end is in the derived dim's sizes
        return x[(slice(None),) * data.axis_of(dim) + (slice(start, end, step),)]

    def _slice_from_ends(self, ctx, x, data: Data, start: int, step: int):
        """Each sequence's slice begins `-start` frames before its own end."""
        first = tf.maximum(ctx.size(self.axis_dim) + start, 0)
        count = tf.reduce_max(ctx.size(self.output.dims[data.axis_of(self.axis_dim)]))
        indices = first[:, None] + tf.range(count)[None, :] * step
        return _take_frames(data, x, self.axis_dim, indices)


class GatherLayer(LayerBase):
    """Picks entries along `axis` of the input at the indices `position`.

    With an int `position` the axis is removed (`x[..., position, ...]`; negative counts from the end,
    only on static axes). With a layer (integer dtype), axes that input and position share act as
    batch axes and the gathered axis is replaced, in place, by the position's other axes: input
    [B, T, F] gathered on T with position [B, N] gives [B, N, F]. Options: `position` (layer name or
    int, required), `axis` (required; not the batch axis).
    Indices beyond the axis are clipped to its first/last frame (TF on CPU would fail on them, TF on GPU
    gives zeros), so garbage in the padded frames of `position` is harmless.
    """

    layer_class = "gather"
    options = {
        "position": Option(types=(str, int), ref="layer_or_value", doc="index layer or int"),
        "axis": Option(types=AXIS),
    }

    def make_output(self):
        x = self.input_data
        dim = self.axis_dim = _axis_dim(self, x, "axis", "gather from")
        position = self.opts["position"]
        if _is_int(position):
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

    def emit(self, ctx):
        x, data, dim = ctx.input(self), self.input_data, self.axis_dim
        position, axis = self.opts["position"], data.axis_of(dim)
        if _is_int(position):
            index = position % dim.size if position < 0 else position
            return tf.gather(x, tf.minimum(index, tf.shape(x)[axis] - 1), axis=axis)
        return self._gather_by_layer(x, data, position.output, ctx.value(position))

    def _gather_by_layer(self, x, data: Data, positions: Data, indices):
        """tf.gather with the axes that `data` and `positions` share as its batch_dims."""
        dim = self.axis_dim
        shared = [d for d in data.dims if d != dim and positions.has_dim(d)]
        new_axes = [d for d in positions.dims if d not in shared]
        rest = [d for d in data.dims if d != dim and d not in shared]
        size = tf.shape(x)[data.axis_of(dim)]
        indices = tf.clip_by_value(indices, 0, tf.cast(size - 1, indices.dtype))
        y = tf.gather(ops.transpose_to(x, data.dims, shared + [dim] + rest),
                      ops.transpose_to(indices, positions.dims, shared + new_axes),
                      axis=len(shared), batch_dims=len(shared))
        return ops.transpose_to(y, shared + new_axes + rest, self.output.dims)

    def _check_index(self, dim: Dim, index: int) -> None:
        if dim.is_dynamic and index < 0:
            raise self.error(f"option 'position' {index} is negative, but {dim.short_repr()} is dynamic",
                             option="position", suggestion="use a non-negative index")
        if not dim.is_dynamic and not -dim.size <= index < dim.size:
            raise self.error(f"option 'position' {index} is out of range for {dim.short_repr()}", option="position")


class PadLayer(LayerBase):
    """Adds `padding` frames before and after each of `axes` (each padded axis gets a derived dim).

    Options: `axes` (required; not the batch axis), `padding` (required: an int for both sides of
    every axis, a pair (left, right) for every axis, or a list of pairs, one per axis), `value` (0;
    for mode "constant"), `mode` ("constant", "reflect", "symmetric" or "replication"; reflect needs
    padding < size, symmetric padding <= size, replication a non-empty axis, checked on static axes).
    On a dynamic axis every sequence is padded on its own: right padding follows each sequence's last
    frame, and reflect/symmetric/replication mirror or repeat the sequence's own frames; where a
    sequence is shorter than the padding, reflect and symmetric reflect again (as NumPy's np.pad does).
    """

    layer_class = "pad"
    options = {
        "axes": Option(types=AXES),
        "padding": Option(types=(int, list, tuple), doc="int, (left, right) or [(left, right), ...]"),
        "value": Option(0, NUMBER),
        "mode": Option("constant", (str,), choices=PAD_MODES),
    }

    def make_output(self):
        x = self.input_data
        dims = resolve_dims(x, self.opts["axes"], layer=self.name, option="axes")
        if not dims:
            raise self.error(f"option 'axes' {self.opts['axes']!r} names no axis of {x.describe()}", option="axes")
        _check_fill_value(self, x, "value")
        out = x.copy(name=self.name)
        self.pad_axes = [(dim, left, right) for dim, (left, right) in zip(dims, self._paddings(len(dims)))]
        for dim, left, right in self.pad_axes:
            _check_not_batch(self, dim, "axes", "pad")
            self._check_mode_fits(dim, left, right)
            out = out.copy_replace_dim(dim, pad_dim(dim, left, right))
        return out

    def emit(self, ctx):
        x, data = ctx.input(self), self.input_data
        for dim, left, right in self.pad_axes:
            x = self._pad_axis(ctx, data, x, dim, left, right)
            data = data.copy_replace_dim(dim, pad_dim(dim, left, right))
        return x

    def _pad_axis(self, ctx, data: Data, x, dim: Dim, left: int, right: int):
        mode, axis = self.opts["mode"], data.axis_of(dim)
        per_sequence = _is_per_sequence(data, dim)
        if mode == "replication" or (per_sequence and mode != "constant"):
            lengths = ctx.size(dim)[:, None] if per_sequence else tf.shape(x)[axis]
            offsets = tf.range(tf.shape(x)[axis] + left + right) - left  # relative to the first frame
            return _take_frames(data, x, dim, _mirrored_frames(mode, offsets, lengths))
        value = tf.cast(self.opts["value"], x.dtype)
        paddings = [[0, 0]] * data.batch_ndim
        paddings[axis] = [left, right]
        y = tf.pad(x, paddings, mode=mode.upper(), constant_values=value)
        if per_sequence and right > 0:
            y = tf.where(_positions(data, y, dim) < _per_sequence(data, ctx.size(dim) + left), y, value)
        return y

    def _paddings(self, count: int) -> List[Tuple[int, int]]:
        padding = self.opts["padding"]
        if _is_int(padding):
            pairs = [(padding, padding)] * count
        elif len(padding) == 2 and all(_is_int(p) for p in padding):
            pairs = [tuple(padding)] * count
        elif all(isinstance(p, (list, tuple)) and len(p) == 2 and all(_is_int(q) for q in p) for p in padding):
            pairs = [tuple(p) for p in padding]
        else:
            raise self.error(f"option 'padding' is {padding!r}; expected an int, (left, right) or a list of "
                             f"(left, right) pairs", option="padding")
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
            raise self.error(f"option 'padding' pads {dim.short_repr()} by {most} frames, more than mode '{mode}' "
                             f"can", option="padding")


def _mirrored_frames(mode: str, offsets, lengths):
    """Which frame of a sequence of `lengths` frames each of `offsets` (relative to its first frame; below 0
    or beyond its end in the padding) shows in mode reflect, symmetric or replication; periodic beyond
    one reflection, as np.pad."""
    if mode == "replication":
        return tf.minimum(tf.maximum(offsets, 0), lengths - 1)
    if mode == "reflect":  # ... 2 1 [0 1 2 ... n-1] n-2 ...
        period = tf.maximum(2 * (lengths - 1), 1)
        phase = tf.math.floormod(offsets, period)
        return tf.where(phase < lengths, phase, period - phase)
    period = tf.maximum(2 * lengths, 1)  # symmetric: ... 1 0 [0 1 ... n-1] n-1 ...
    phase = tf.math.floormod(offsets, period)
    return tf.where(phase < lengths, phase, period - 1 - phase)


class WindowLayer(LayerBase):
    """A sliding window over one axis: a new axis '<layer>:window' of size `window_size` right after it.

    [B, T, F] windowed over T gives [B, T', W, F], batch first. Options: `window_size` (int,
    required), `window_left`, `window_right` (None; where the window sits around its frame, with
    `window_left + window_right == window_size - 1`; only with padding "same"), `axis` ("T"; not the
    batch axis), `padding` ("same": T' = ceil(T / stride), or "valid": T' = ceil((T - W + 1) / stride)),
    `stride` (1). Without `window_left`/`window_right`, window_right = window_size // 2 (as RETURNN).
    Frames outside a sequence are zeros, as for the sequence alone.
    """

    layer_class = "window"
    options = {
        "window_size": Option(types=(int,)),
        "window_left": Option(None, (int, NONE_TYPE)),
        "window_right": Option(None, (int, NONE_TYPE)),
        "axis": Option("T", AXIS),
        "padding": Option("same", (str,)),
        "stride": Option(1, (int,)),
    }

    def make_output(self):
        x = self.input_data
        dim = self.axis_dim = _axis_dim(self, x, "axis", "window over")
        size = _int_at_least(self, "window_size", 1)
        stride = _int_at_least(self, "stride", 1)
        padding = self.opts["padding"].lower()
        if padding not in ("same", "valid"):
            raise self.error(f"option 'padding' is {self.opts['padding']!r}, expected 'same' or 'valid'",
                             option="padding")
        self._check_left_right(size, padding)
        windowed = conv_out_dim(dim, size, stride, 1, padding)
        out = x.copy_replace_dim(dim, windowed, name=self.name)
        axis = out.axis_of(windowed)
        window = self.new_dim(size, SPATIAL, f"{self.name}:window")
        return out.copy(dims=out.dims[:axis + 1] + (window,) + out.dims[axis + 1:]).copy_with_batch_first()

    def emit(self, ctx):
        x, data, dim = ctx.input(self), self.input_data, self.axis_dim
        axis = data.axis_of(dim)
        if self.opts["padding"].lower() == "same":
            if _is_per_sequence(data, dim):
                x = ctx.masked(data, x, dim, 0)
            paddings = [[0, 0]] * data.batch_ndim
            paddings[axis] = list(self._left_right())
            x = tf.pad(x, paddings)
        y = tf.signal.frame(x, self.opts["window_size"], self.opts["stride"], axis=axis)  # window after axis
        batch = data.batch_dim_axis
        return y if batch is None else ops.move_axis(y, batch + int(batch > axis), 0)

    def _left_right(self) -> Tuple[int, int]:
        size, left, right = (self.opts[k] for k in ("window_size", "window_left", "window_right"))
        if right is None:
            right = size // 2 if left is None else size - 1 - left
        return size - 1 - right, right

    def _check_left_right(self, size: int, padding: str) -> None:
        given = {k: self.opts[k] for k in ("window_left", "window_right") if self.opts[k] is not None}
        if given and padding != "same":
            raise self.error(f"option '{next(iter(given))}' places the window's padding, so it needs padding 'same', "
                             f"not {padding!r}", option=next(iter(given)))
        for key, value in given.items():
            if not 0 <= value < size:
                raise self.error(f"option '{key}' is {value}, but must be in 0..{size - 1} (window_size - 1)",
                                 option=key)
        if len(given) == 2 and sum(given.values()) != size - 1:
            raise self.error(f"options 'window_left' + 'window_right' must be window_size - 1 = {size - 1}, not "
                             f"{sum(given.values())}", option="window_left")


class CumsumLayer(LayerBase):
    """The cumulative sum along one axis (class indices become plain integers: no sparse dim).

    Options: `axis` ("T"; not the batch axis), `additional_left_summand_per_element` (None; a number
    added before each element; strings are not supported by netcompiler yet), `reverse` (False:
    sums from the end). On a dynamic axis each sequence is summed on its own (reverse: from its own end).
    """

    layer_class = "cumsum"
    options = {
        "axis": Option("T", AXIS),
        "additional_left_summand_per_element": Option(None, (str, int, float, NONE_TYPE)),
        "reverse": Option(False, (bool,)),
    }

    def make_output(self):
        x = self.input_data
        self.axis_dim = _axis_dim(self, x, "axis", "sum over")
        if x.dtype in ("bool", "string"):
            raise self.error(f"'from': the input {x.describe()} has dtype {x.dtype}, which cannot be summed",
                             option="from", suggestion="add a 'cast' layer")
        if isinstance(self.opts["additional_left_summand_per_element"], str):
            raise self.error("option 'additional_left_summand_per_element' as a string is not supported by "
                             "netcompiler yet", option="additional_left_summand_per_element")
        _check_fill_value(self, x, "additional_left_summand_per_element")
        return x.copy(name=self.name, sparse_dim=None)

    def emit(self, ctx):
        x, data, dim = ctx.input(self), self.input_data, self.axis_dim
        summand = self.opts["additional_left_summand_per_element"]
        if summand is not None:
            x = x + tf.cast(summand, x.dtype)
        if _is_per_sequence(data, dim):
            x = ctx.masked(data, x, dim, 0)
        return tf.cumsum(x, axis=data.axis_of(dim), reverse=self.opts["reverse"])


class SeqLenMaskLayer(LayerBase):
    """The input with the frames beyond each sequence's length along `axis` set to `mask_value`.

    Options: `mask_value` (number, required), `axis` ("T"), `seq_len_source` (None: the lengths of the
    axis itself; else the lengths of that layer's time axis), `start`, `window_start` (None; layers of
    shape [B], integer: also mask frames before start / outside [window_start, window_start +
    window_size)), `window_size` (None; int or such a layer; given exactly when `window_start` is). A
    static axis needs one of these.
    """

    layer_class = "seq_len_mask"
    options = {
        "mask_value": Option(types=NUMBER),
        "axis": Option("T", AXIS),
        "seq_len_source": Option(None, (str, NONE_TYPE), ref="layer"),
        "start": Option(None, (str, NONE_TYPE), ref="layer"),
        "window_start": Option(None, (str, NONE_TYPE), ref="layer"),
        "window_size": Option(None, (str, int, NONE_TYPE), ref="layer_or_value"),
    }

    def make_output(self):
        x = self.input_data
        dim = self.axis_dim = _axis_dim(self, x, "axis", "mask")
        _check_fill_value(self, x, "mask_value")
        for option in ("start", "window_start", "window_size"):
            self._check_per_sequence(option)
        self._check_window_pair()
        source = self.opts["seq_len_source"]
        if source is not None and not getattr(source.output.time_dim, "is_dynamic", False):
            raise self.error(f"option 'seq_len_source' names '{source.name}' {source.output.describe()}, which has "
                             f"no dynamic time axis to take lengths from", option="seq_len_source")
        windowed = any(self.opts[k] is not None for k in ("start", "window_start", "window_size"))
        if source is None and not dim.is_dynamic and not windowed:
            raise self.error(f"option 'axis' {self.opts['axis']!r} is {dim.short_repr()}, which is static: there is "
                             f"nothing to mask", option="axis", suggestion="give 'seq_len_source'")
        return x.copy(name=self.name)

    def _check_window_pair(self) -> None:
        given = [k for k in ("window_start", "window_size") if self.opts[k] is not None]
        if len(given) == 1:
            missing = "window_size" if given[0] == "window_start" else "window_start"
            raise self.error(f"option '{given[0]}' needs option '{missing}' (the window is [window_start, "
                             f"window_start + window_size))", option=given[0])

    def emit(self, ctx):
        x, data = ctx.input(self), self.input_data
        mask = functools.reduce(tf.logical_and, self._conditions(ctx, data, _positions(data, x, self.axis_dim)))
        return tf.where(mask, x, tf.cast(self.opts["mask_value"], x.dtype))

    def _conditions(self, ctx, data: Data, pos):
        """Bool tensors broadcastable to the input, True on the frames to keep."""
        source = self.opts["seq_len_source"]
        if source is not None:
            yield pos < _per_sequence(data, ctx.size(source.output.time_dim))
        elif self.axis_dim.is_dynamic:
            yield pos < _per_sequence(data, ctx.size(self.axis_dim))
        if self.opts["start"] is not None:
            yield pos >= _per_sequence(data, ctx.value(self.opts["start"]))
        if self.opts["window_start"] is not None:
            window_start = _per_sequence(data, ctx.value(self.opts["window_start"]))
            size = self.opts["window_size"]
            size = size if _is_int(size) else _per_sequence(data, ctx.value(size))
            yield tf.logical_and(pos >= window_start, pos < window_start + size)

    def _check_per_sequence(self, option: str) -> None:
        value = self.opts[option]
        if value is None:
            return
        if _is_int(value):
            _int_at_least(self, option, 1)
            return
        data = value.output
        if data.dtype not in INT_DTYPES or any(not d.is_batch for d in data.dims):
            raise self.error(f"'{option}' '{value.name}' is {data.describe()} {data.dtype}; it must be integers "
                             f"of shape [B]", option=option)
