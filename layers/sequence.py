"""Sequence layers, each respecting every sequence's own length: window (a sliding window over an axis), cumsum
(running sums), seq_len_mask (frames past each sequence's end set to a value). Slice and gather are in
layers/indexing.py, pad in layers/padding.py."""

from typing import Optional, Tuple

from netcompiler import frontend as rf
from netcompiler.layer_base import NONE_TYPE, NUMBER, LayerBase, Option
from netcompiler.tensor import INT_DTYPES, SPATIAL, Dim, Tensor, conv_out_dim, pad_dim

from .axis_options import AXIS, axis_dim, check_fill_value, int_at_least, is_int
from .cum_concat import frame_dim, in_loop_step
from .sequence_masks import all_of, compare_in, sequence_sizes


class WindowLayer(LayerBase):
    """A sliding window over one axis: a new axis '<layer>:window' of size `window_size` right after it.

    [B, T, F] windowed over T gives [B, T', W, F], batch first. Options: `window_size` (int,
    required), `window_left`, `window_right` (None; where the window sits around its frame, with
    `window_left + window_right == window_size - 1`; only with padding "same"), `axis` ("T"; not the
    batch axis), `padding` ("same": T' = ceil(T / stride), or "valid": T' = ceil((T - W + 1) / stride)),
    `stride` (1). Without `window_left`/`window_right`, window_right = window_size // 2 (as RETURNN).
    Frames outside a sequence are zeros, as for the sequence alone: "same" sets each sequence's padding
    to zero and pads the axis (`rf.masked`, `rf.pad`) before `rf.window` takes the windows.
    In a loop body (as RETURNN): the input of the last `window_size` steps [B, W, ...], the current step's last,
    zeros before the first step (a step state); that is window_left = window_size - 1, window_right = 0 over time.
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
        if in_loop_step(self):
            x = self.input_data
            at = 1 if x.dims and x.dims[0].is_batch else 0
            return x.copy(name=self.name, dims=x.dims[:at] + (self._loop_window_dim(),) + x.dims[at:])
        dim, windowed, window = self._window_dims()
        out = self.input_data.copy_replace_dim(dim, windowed, name=self.name)
        axis = out.axis_of(windowed)
        return out.copy(dims=out.dims[:axis + 1] + (window,) + out.dims[axis + 1:]).copy_with_batch_first()

    def _window_dims(self) -> Tuple[Dim, Dim, Dim]:
        """The windowed axis of the input, the Dim it becomes (one frame per window) and the window's Dim."""
        dim = axis_dim(self, self.input_data, "axis", "window over")
        size = int_at_least(self, "window_size", 1)
        stride = int_at_least(self, "stride", 1)
        padding = self.opts["padding"].lower()
        if padding not in ("same", "valid"):
            raise self.error(f"option 'padding' is {self.opts['padding']!r}, expected 'same' or 'valid'",
                             option="padding")
        self._check_left_right(size, padding)
        return dim, conv_out_dim(dim, size, stride, 1, padding), self.new_dim(size, SPATIAL, f"{self.name}:window")

    def _loop_window_dim(self) -> Dim:
        """The window's Dim in a loop body, where only the window over the steps so far is possible."""
        size = int_at_least(self, "window_size", 1)
        wrong = {"window_left": (None, size - 1), "window_right": (None, 0), "stride": (1,), "axis": ("T",)}
        for key, allowed in wrong.items():
            if self.opts[key] not in allowed:
                raise self.error(f"in a loop body a window holds the last {size} steps, so option '{key}' must be "
                                 f"{' or '.join(repr(a) for a in allowed)}, not {self.opts[key]!r}", option=key,
                                 suggestion="move the layer out of the rec unit to window over other axes")
        if self.opts["padding"].lower() != "same":
            raise self.error(f"in a loop body a window pads before the first step (padding 'same'), not "
                             f"{self.opts['padding']!r}", option="padding")
        return self.new_dim(size, SPATIAL, f"{self.name}:window")

    def initial_step_state(self, inputs):
        if not in_loop_step(self):
            return None
        return {"window": rf.zeros(self.output.dims, dtype=self.output.dtype)}

    def _loop_emit(self, inputs):
        window, one = self._loop_window_dim(), frame_dim(self)
        frame = rf.expand_dim(inputs.x, one)
        if window.size == 1:
            latest = rf.replace_dim(frame, in_dim=one, out_dim=window)
        else:
            earlier = self.new_dim(window.size - 1, SPATIAL, f"{self.name}:window-earlier")
            kept = rf.slice(inputs.step_state["window"], axis=window, start=1, out_dim=earlier)
            latest = rf.concat((kept, earlier), (frame, one), out_dim=window)
        inputs.set_step_state({"window": latest})
        return latest

    def emit(self, inputs):
        if inputs.loop_state is not None:
            return self._loop_emit(inputs)
        x = inputs.x
        dim, windowed, window = self._window_dims()
        if self.opts["padding"].lower() == "same":
            if sequence_sizes(inputs.run, x, dim) is not None:
                x = rf.masked(x, [dim], 0)
            left, right = self._left_right()
            if left or right:
                padded = pad_dim(dim, left, right)
                x, dim = rf.pad(x, axes=[dim], padding=[(left, right)], out_dims=[padded]), padded
        return rf.window(x, axis=dim, window_dim=window, out_dim=windowed, stride=self.opts["stride"])

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
    sums from the end). On a dynamic axis each sequence is summed on its own (reverse: from its own end,
    its padding set to zero first). In a loop body (as RETURNN): the sum of the input over the steps so far (a
    step state; `axis` must be "T", no `reverse`).
    """

    layer_class = "cumsum"
    options = {
        "axis": Option("T", AXIS),
        "additional_left_summand_per_element": Option(None, (str, int, float, NONE_TYPE)),
        "reverse": Option(False, (bool,)),
    }

    def make_output(self):
        x = self.input_data
        self._sum_axis()
        if x.dtype in ("bool", "string"):
            raise self.error(f"'from': the input {x.describe()} has dtype {x.dtype}, which cannot be summed",
                             option="from", suggestion="add a 'cast' layer")
        if isinstance(self.opts["additional_left_summand_per_element"], str):
            raise self.error("option 'additional_left_summand_per_element' as a string is not supported by "
                             "netcompiler yet", option="additional_left_summand_per_element")
        check_fill_value(self, x, "additional_left_summand_per_element")
        return x.copy(name=self.name, sparse_dim=None)

    def _sum_axis(self) -> Optional[Dim]:
        """The summed axis; None in a loop body, where the steps are summed."""
        if in_loop_step(self):
            for key, allowed in (("axis", "T"), ("reverse", False)):
                if self.opts[key] != allowed:
                    raise self.error(f"in a loop body cumsum sums over the steps, so option '{key}' must be "
                                     f"{allowed!r}, not {self.opts[key]!r}", option=key,
                                     suggestion="move the layer out of the rec unit to sum over other axes")
            return None
        return axis_dim(self, self.input_data, "axis", "sum over")

    def initial_step_state(self, inputs):
        if not in_loop_step(self):
            return None
        return {"sum": rf.zeros(self.output.dims, dtype=self.output.dtype)}

    def emit(self, inputs):
        x, dim, reverse = inputs.x.copy(sparse_dim=None), self._sum_axis(), self.opts["reverse"]
        summand = self.opts["additional_left_summand_per_element"]
        if summand is not None:
            x = x + summand
        if inputs.loop_state is not None:
            total = inputs.step_state["sum"] + x
            inputs.set_step_state({"sum": total})
            return total
        if reverse and sequence_sizes(inputs.run, x, dim) is not None:  # forward sums never read the padding
            x = rf.masked(x, [dim], 0)
        return rf.cumsum(x, axis=dim, reverse=reverse)


class SeqLenMaskLayer(LayerBase):
    """The input with the frames beyond each sequence's length along `axis` set to `mask_value`.

    Options: `mask_value` (number, required), `axis` ("T"), `seq_len_source` (None: the lengths of the
    axis itself; else the lengths of that layer's time axis), `start`, `window_start` (None; layers of
    shape [B], integer: also mask frames before start / outside [window_start, window_start +
    window_size)), `window_size` (None; int or such a layer; given exactly when `window_start` is). A
    static axis needs one of these. The frames to keep are compared with `rf.range_over_dim` of the axis.
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
        dim = self._mask_axis()
        check_fill_value(self, x, "mask_value")
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

    def _mask_axis(self) -> Dim:
        return axis_dim(self, self.input_data, "axis", "mask")

    def emit(self, inputs):
        x = inputs.x
        keep = all_of(x, list(self._conditions(inputs, x)))
        return rf.where(keep, x, self.opts["mask_value"])

    def _conditions(self, inputs, x: Tensor):
        """Bool Tensors over dims of `x` (in its order), True on the frames to keep."""
        dim = self._mask_axis()
        pos = rf.range_over_dim(dim, like=x)
        source = self.opts["seq_len_source"]
        if source is not None:
            yield compare_in(x, inputs.run.size(source.output.time_dim), "greater", pos)
        elif dim.is_dynamic:
            yield compare_in(x, inputs.run.size(dim), "greater", pos)
        if self.opts["start"] is not None:
            yield compare_in(x, self._per_sequence(inputs, "start"), "less_equal", pos)
        if self.opts["window_start"] is not None:
            window_start = self._per_sequence(inputs, "window_start")
            size = self.opts["window_size"]
            window_end = window_start + (size if is_int(size) else self._per_sequence(inputs, "window_size"))
            yield compare_in(x, window_start, "less_equal", pos)
            yield compare_in(x, window_end, "greater", pos)

    def _per_sequence(self, inputs, option: str) -> Tensor:
        """The values ([B]) of the layer that option `option` names, as int32 (the frame positions' dtype)."""
        return rf.cast(inputs.value(self.opts[option]), "int32")

    def _check_per_sequence(self, option: str) -> None:
        value = self.opts[option]
        if value is None:
            return
        if is_int(value):
            int_at_least(self, option, 1)
            return
        data = value.output
        if data.dtype not in INT_DTYPES or any(not d.is_batch for d in data.dims):
            raise self.error(f"'{option}' '{value.name}' is {data.describe()} {data.dtype}; it must be integers "
                             f"of shape [B]", option=option)
