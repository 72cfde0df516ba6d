"""Frames added to the time axis of each sequence: postfix_in_time (after its last frame, e.g. an end-of-sequence
label) and prefix_in_time (before its first)."""

from netcompiler import frontend as rf
from netcompiler.layer_base import NUMBER, LayerBase, Option
from netcompiler.tensor import Data, Dim, pad_dim

from .axis_options import check_fill_value
from .sequence_masks import compare_in, sequence_sizes


class _TimeAffix(LayerBase, register=False):
    """What postfix_in_time and prefix_in_time share: the input's time dim grown by `repeat` frames."""

    def _time(self, x: Data) -> Dim:
        if x.time_dim is None:
            raise self.error(f"the input {x.describe()} has no time axis", option="from")
        return x.time_dim

    def _repeat(self) -> int:
        repeat = self.opts["repeat"]
        if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 0:
            raise self.error(f"'repeat' must be an int >= 0, not {repeat!r}", option="repeat")
        return repeat

    def _out_time(self, x: Data) -> Dim:
        left, right = (self._repeat(), 0) if self.layer_class == "prefix_in_time" else (0, self._repeat())
        return pad_dim(self._time(x), left, right)

    def _sizes_now(self, inputs) -> None:
        """Computes the new time dim's sizes here, where this layer runs: a loop over that dim (e.g. over a target
        registered from this layer) must not compute them first inside its own graph."""
        inputs.run.size(self._out_time(self.input_data))


class PostfixInTimeLayer(_TimeAffix):
    """Appends `repeat` frames of `postfix` to each sequence, right after its own last frame: the time dim grows
    by `repeat` (sizes + repeat).

    Options: `postfix` (0.0: a number, or a layer whose dims are among the input's without time, e.g. [B, F];
    for a sparse input, a class index), `repeat` (1). Emission: `rf.pad` of the time axis, then `rf.where`
    puts the postfix on each sequence's frames at and after its length.
    """

    layer_class = "postfix_in_time"
    options = {
        "postfix": Option(0.0, NUMBER + (str,), ref="layer_or_value", doc="a number or a layer"),
        "repeat": Option(1, (int,)),
    }

    def make_output(self) -> Data:
        x = self.input_data
        time = self._time(x)
        postfix = self.opts["postfix"]
        if isinstance(postfix, LayerBase):
            data = postfix.output
            if data.dtype != x.dtype or any(d == time or not x.has_dim(d) for d in data.dims):
                raise self.error(f"'postfix' layer '{postfix.name}' {data.describe()} {data.dtype} must have the "
                                 f"input's dtype ({x.dtype}) and dims among the input's {x.describe()} without its "
                                 f"time axis", option="postfix")
        else:
            check_fill_value(self, x, "postfix")
            if x.sparse_dim is not None and x.sparse_dim.size is not None and not 0 <= postfix < x.sparse_dim.size:
                raise self.error(f"'postfix' {postfix} is no class of the sparse input {x.describe()} (0 to "
                                 f"{x.sparse_dim.size - 1})", option="postfix",
                                 suggestion="first add a class: {'class': 'reinterpret_data', "
                                            "'increase_sparse_dim': 1}")
        return x.copy(name=self.name).copy_replace_dim(time, self._out_time(x))

    def emit(self, inputs):
        x = inputs.x
        time = self._time(self.input_data)
        out_time = self._out_time(self.input_data)
        postfix = self.opts["postfix"]
        value = inputs.value(postfix) if isinstance(postfix, LayerBase) else postfix
        if not isinstance(value, rf.Tensor) and x.dtype.startswith("int"):
            value = int(value)
        y = rf.pad(x, axes=[time], padding=[(0, self._repeat())], out_dims=[out_time], mode="constant", value=0)
        ends = sequence_sizes(inputs.run, x, time)
        if ends is None:
            ends = inputs.run.size(time)
        frames = rf.range_over_dim(out_time, like=y)
        self._sizes_now(inputs)
        return rf.where(compare_in(y, frames, "less", ends), y, value, dim_order=y.dims)


class PrefixInTimeLayer(_TimeAffix):
    """Puts `repeat` frames of the constant `prefix` before each sequence: the time dim grows by `repeat`.

    Options: `prefix` (0.0, a number; for a sparse input, a class index), `repeat` (1). Emission: `rf.pad`
    of the time axis on the left.
    """

    layer_class = "prefix_in_time"
    options = {
        "prefix": Option(0.0, NUMBER, doc="the value of the added frames"),
        "repeat": Option(1, (int,)),
    }

    def make_output(self) -> Data:
        x = self.input_data
        check_fill_value(self, x, "prefix")
        return x.copy(name=self.name).copy_replace_dim(self._time(x), self._out_time(x))

    def emit(self, inputs):
        x = inputs.x
        value = self.opts["prefix"]
        value = int(value) if x.dtype.startswith("int") else value
        self._sizes_now(inputs)
        return rf.pad(x, axes=[self._time(self.input_data)], padding=[(self._repeat(), 0)],
                      out_dims=[self._out_time(self.input_data)], mode="constant", value=value)
