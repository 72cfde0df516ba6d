"""Layers that make an axis longer by repeating what is on it: tile (the whole axis k times), repeat (each frame a
number of times, fixed or per frame) and resize (each frame k times: nearest neighbour, linear interpolation, or
the frame followed by k - 1 fill values).

`repeat_frames` (each frame of one axis repeated by per-frame counts, into a new dynamic dim) is shared with
`remove` (layers/axis_shift.py), which keeps each frame once or not at all."""

from netcompiler import frontend as rf
from netcompiler.layer_base import NONE_TYPE, NUMBER, LayerBase, Option
from netcompiler.tensor import SPATIAL, Data, Dim, Tensor, merge_dims, resolve_dim

from .axis_options import AXIS, axis_dim, is_int


def _times_dim(layer: LayerBase, dim: Dim, k: int, before: bool) -> Dim:
    """`dim` taken k times (`k * dim` in RETURNN): k * size if static, else sizes k * sizes (a derived dim)."""
    if k == 1:
        return dim
    copies = layer.new_dim(k, SPATIAL, f"{layer.name}:{k}x")
    parts, text = ([copies, dim], f"{k}*{dim.description}") if before else ([dim, copies], f"{dim.description}*{k}")
    return merge_dims(parts, description=text, kind=dim.kind)


def _move_after_batch(layer: LayerBase, x: Data, dim: Dim) -> Data:
    """`x` batch-major with `dim` moved right behind the batch (where RETURNN's repeat and resize put it)."""
    x = x.copy_with_batch_first()
    rest = [d for d in x.dims if d != dim]
    at = 1 if x.has_batch else 0
    return x.copy(dims=rest[:at] + [dim] + rest[at:], name=layer.name)


def _declared_out_dim(layer: LayerBase, option: str, made: Dim) -> Dim:
    """The dim the config declares in `option` (checked against the one made), else the one made."""
    declared = layer.opts.get(option)
    if declared is None:
        return made
    if declared.size != made.size or declared.is_dynamic != made.is_dynamic:
        raise layer.error(f"'{option}' {declared.short_repr()} does not fit the axis this layer makes "
                          f"({made.short_repr()})", option=option,
                          suggestion=f"leave '{option}' out, or declare a dim of that size")
    return declared


def _set_declared_sizes(inputs, made: Dim, out: Dim) -> None:
    """Sizes of a declared out dim (see `_declared_out_dim`) from those of the dim this layer made."""
    if out is not made and out.is_dynamic and out not in inputs.run.sizes:
        inputs.set_size(out, inputs.run.size(made))


def frames_repeated(x: Tensor, axis: Dim, copies: Dim, out_dim: Dim) -> Tensor:
    """Each frame of `x` along `axis` `copies.size` times in a row (x0 x0 x1 x1 ...), as the axis `out_dim`."""
    at = x.axis_of(axis)
    y = rf.expand_dim(x, copies, axis=at + 1)
    return rf.merge_dims(y, dims=[axis, copies], out_dim=out_dim)[0]


def repeat_frames(x: Tensor, counts: Tensor, axis: Dim, out_dim: Dim, inputs) -> Tensor:
    """Frame t of `x` along `axis` `counts[t]` times in a row (counts: int, over `axis` and maybe the batch; counts
    of padded frames and negative counts are taken as 0), as the new dynamic axis `out_dim`, whose sizes (the sums
    of the counts) are set here.

    Output frame j comes from the frame t whose run of copies holds it: t = the number of frames whose cumulative
    count is <= j (a comparison over [axis, out_dim], no framework repeat op)."""
    if not counts.has_dim(axis):
        counts = rf.expand_dim(counts, axis)
    counts = rf.maximum(counts, 0)
    mask = rf.sequence_mask([axis])
    if mask is not None:
        counts = rf.where(mask, counts, 0)
    inputs.set_size(out_dim, rf.reduce_sum(counts, axis=axis, use_mask=False))
    ends = rf.cumsum(counts, axis=axis)
    frames = rf.range_over_dim(out_dim, dtype=counts.dtype)
    before = rf.cast(rf.compare(ends, "less_equal", frames), "int32")
    source = rf.reduce_sum(before, axis=axis, use_mask=False)
    return rf.gather(x, indices=source, axis=axis, clip_to_valid=True)


class TileLayer(LayerBase):
    """The input repeated as a whole along static axes (TensorFlow's tile): `multiples` {axis: k} makes axis n into
    k * n (x0 .. x(n-1) x0 .. x(n-1) ...), keeping the axis order.

    Options: `multiples` (required: a dict axis -> int >= 1), `out_dims` (None: a dict axis -> Dim, the dims the
    tiled axes become). As in RETURNN, the batch axis and dynamic axes cannot be tiled (k = 1 leaves them as they
    are). Emission: a new axis of k copies in front of the axis, merged with it (`rf.expand_dim`, `rf.merge_dims`).
    """

    layer_class = "tile"
    options = {
        "multiples": Option(types=(dict,), doc="axis -> how many copies"),
        "out_dims": Option(None, (dict, NONE_TYPE), doc="axis -> the Dim the tiled axis becomes"),
    }

    def _tiled(self):
        """[(axis dim, k, out dim)] of the axes tiled more than once."""
        x = self.input_data
        out_dims = self.opts["out_dims"] or {}
        tiled = []
        for desc, k in self.opts["multiples"].items():
            dim = resolve_dim(x, desc, layer=self.name, option="multiples")
            if not is_int(k) or k < 1:
                raise self.error(f"'multiples' of axis {desc!r} is {k!r}, but must be an int >= 1",
                                 option="multiples")
            if k == 1:
                continue
            if dim.is_batch or dim.is_dynamic:
                what = "the batch axis" if dim.is_batch else f"the dynamic axis {x.dim_label(dim)}"
                raise self.error(f"'multiples' cannot tile {what} (RETURNN cannot either)", option="multiples",
                                 suggestion="tile a static axis, or use 'repeat' to repeat frames of a time axis")
            made = _times_dim(self, dim, k, before=True)
            declared = out_dims.get(desc)
            if declared is not None and (not isinstance(declared, Dim) or declared.size != made.size):
                raise self.error(f"'out_dims' of axis {desc!r} must be a Dim of size {made.size}, not {declared!r}",
                                 option="out_dims")
            tiled.append((dim, k, declared or made))
        unknown = [d for d in out_dims if d not in self.opts["multiples"]]
        if unknown:
            raise self.error(f"'out_dims' names axes {unknown} that 'multiples' does not", option="out_dims")
        return tiled

    def make_output(self) -> Data:
        x = self.input_data.copy(name=self.name)
        for dim, _, out in self._tiled():
            x = x.copy_replace_dim(dim, out)
        return x

    def emit(self, inputs):
        x = inputs.x
        for dim, k, out in self._tiled():
            copies = self.new_dim(k, SPATIAL, f"{self.name}:{k}x")
            y = rf.expand_dim(x, copies, axis=x.axis_of(dim))
            x = rf.merge_dims(y, dims=[copies, dim], out_dim=out)[0]
        return x


class RepeatLayer(LayerBase):
    """Each frame of one axis repeated (TensorFlow's repeat, per sequence): `repetitions` k (an int: every frame k
    times, the axis becomes k * axis, sizes k * sizes) or a layer of int counts per frame (e.g. [B, T] durations,
    or [B] / a scalar: the same count for every frame of a sequence), which makes a new dynamic axis whose sizes
    are the sums of the counts over each sequence's frames.

    Options: `repetitions` (required: an int >= 0 or a layer), `axis` ("T"), `out_dim` (None: a Dim for the new
    axis). The output is batch-major with the repeated axis right after the batch, as in RETURNN.
    Deliberate departures: negative counts are taken as 0 (TensorFlow's repeat fails on them); a repetitions layer
    with a batch axis when the input has none is refused.
    """

    layer_class = "repeat"
    options = {
        "repetitions": Option(types=(int, str), ref="layer_or_value", doc="an int or a layer of int counts"),
        "axis": Option("T", AXIS),
        "out_dim": Option(None, (Dim, NONE_TYPE)),
    }

    def _axis(self) -> Dim:
        return axis_dim(self, self.input_data, "axis", "repeat")

    def _made_dim(self) -> Dim:
        axis = self._axis()
        reps = self.opts["repetitions"]
        if isinstance(reps, LayerBase):
            data = reps.output
            if not data.dtype.startswith("int"):
                raise self.error(f"'repetitions' layer '{reps.name}' {data.describe()} has dtype {data.dtype}, but "
                                 f"must hold int counts", option="repetitions",
                                 suggestion="cast it: {'class': 'cast', 'dtype': 'int32'}")
            extra = [d for d in data.dims if d != axis and not (d.is_batch and self.input_data.has_dim(d))]
            if extra:
                raise self.error(f"'repetitions' layer '{reps.name}' {data.describe()} may only have the input's "
                                 f"batch axis and the repeated axis {self.input_data.dim_label(axis)}, not "
                                 f"{[d.short_repr() for d in extra]}", option="repetitions")
            return self.new_dim(None, axis.kind, f"repeated:{self.name}")
        if reps < 0:
            raise self.error(f"'repetitions' is {reps}, but must be >= 0", option="repetitions")
        if reps == 0:
            return self.new_dim(0 if axis.size is not None else None, axis.kind, f"repeated:{self.name}")
        return _times_dim(self, axis, reps, before=False)

    def _out_dim(self) -> Dim:
        return _declared_out_dim(self, "out_dim", self._made_dim())

    def make_output(self) -> Data:
        axis = self._axis()
        return _move_after_batch(self, self.input_data, axis).copy_replace_dim(axis, self._out_dim())

    def emit(self, inputs):
        x = inputs.x
        axis, made, out = self._axis(), self._made_dim(), self._out_dim()
        reps = self.opts["repetitions"]
        if isinstance(reps, LayerBase):
            y = repeat_frames(x, inputs.value(reps), axis, made, inputs)
        elif reps == 0:
            if made.is_dynamic:
                inputs.set_size(made, rf.combine(rf.dim_size_tensor(axis), "mul", 0))
            y = rf.slice(x, axis=axis, start=0, end=0, out_dim=made)
        else:
            y = frames_repeated(x, axis, self.new_dim(reps, SPATIAL, f"{self.name}:{reps}x"), made)
        _set_declared_sizes(inputs, made, out)
        y = rf.replace_dim(y, in_dim=made, out_dim=out) if out is not made else y
        return rf.permute(y, self.output.dims)


RESIZE_KINDS = ("nn", "nearest_neighbor", "linear", "fill", "cubic")


class ResizeLayer(LayerBase):
    """Up-sampling of one axis by an int `factor` k (the axis becomes k * axis, sizes k * sizes), frame by frame:
    `kind` "nn"/"nearest_neighbor" repeats each frame k times; "linear" interpolates between frame t and t + 1
    (output frame j = t*k + i is x[t] + (x[t+1] - x[t]) * i/k, TF's resize_bilinear without align_corners);
    "fill" puts frame t followed by k - 1 frames of `fill_value`.

    Options: `factor` (required, int >= 1), `axis` (required), `kind` ("nn"), `fill_value` (None; required for
    "fill"; for sparse input a class index, negative counts from the end), `fill_dropout` (None: a rate p in
    [0, 1): each of the k - 1 frames after frame t is dropped with probability p, one draw per (t, i) shared by
    the batch, as in RETURNN, at every run, not only in training; the axis becomes a new dynamic dim whose sizes
    count the frames kept), `out_dim` (None). The output is batch-major with the resized axis right after the
    batch, as in RETURNN.
    Deliberate departures: "linear" interpolates each sequence alone: its last frame is followed by itself
    (RETURNN resizes the padded batch, so a shorter sequence's last frames mix in its padding). Refused: a float
    or layer `factor` (RETURNN resizes the padded batch, so the values would depend on the other sequences'
    lengths) and kind "cubic".
    """

    layer_class = "resize"
    options = {
        "factor": Option(types=NUMBER + (str,), ref="layer_or_value", doc="out length = in length * factor"),
        "axis": Option(types=AXIS),
        "kind": Option("nn", (str,), choices=RESIZE_KINDS),
        "fill_value": Option(None, NUMBER + (NONE_TYPE,)),
        "fill_dropout": Option(None, NUMBER + (NONE_TYPE,), rate=True),
        "out_dim": Option(None, (Dim, NONE_TYPE)),
    }

    def _axis(self) -> Dim:
        return axis_dim(self, self.input_data, "axis", "resize")

    def _factor(self) -> int:
        factor = self.opts["factor"]
        if not is_int(factor):
            what = f"layer '{factor.name}'" if isinstance(factor, LayerBase) else repr(factor)
            raise self.error(f"'factor' {what} is not supported: only an int factor resizes each sequence on its "
                             f"own (RETURNN resizes the padded batch, so other factors make a sequence's values depend "
                             f"on the longest sequence)", option="factor", suggestion="use an int factor")
        if factor < 1:
            raise self.error(f"'factor' is {factor}, but must be >= 1", option="factor")
        return factor

    def _kind(self) -> str:
        kind = self.opts["kind"]
        if kind == "cubic":
            raise self.error("'kind' 'cubic' is not supported by netcompiler", option="kind",
                             suggestion="use 'linear' or 'nn'")
        x = self.input_data
        if kind == "fill":
            value = self.opts["fill_value"]
            if value is None:
                raise self.error("kind 'fill' needs 'fill_value'", option="fill_value", suggestion="e.g. 0")
            if self._factor() < 2:
                raise self.error("kind 'fill' needs 'factor' >= 2 (RETURNN's condition)", option="factor")
            if (x.sparse or x.dtype.startswith("int")) and not is_int(value):
                raise self.error(f"'fill_value' {value!r} must be an int for the {x.dtype} input {x.describe()}",
                                 option="fill_value")
        elif kind == "linear" and not x.dtype.startswith("float"):
            raise self.error(f"kind 'linear' interpolates floats; the input {x.describe()} is {x.dtype}",
                             option="kind", suggestion="use 'nn' for ints and class indices")
        return "nn" if kind == "nearest_neighbor" else kind

    def _fill_value(self):
        value = self.opts["fill_value"]
        x = self.input_data
        if x.sparse and value < 0:
            value += x.sparse_dim.size
        return value

    def _fill_dropout(self) -> float:
        return float(self.opts["fill_dropout"] or 0.0)

    def _made_dim(self) -> Dim:
        """The resized axis as emitted: k * axis, or with `fill_dropout` a new dynamic dim (frames dropped)."""
        resized = _times_dim(self, self._axis(), self._factor(), before=False)
        return self.new_dim(None, resized.kind, f"{self.name}_resize") if self._fill_dropout() else resized

    def make_output(self) -> Data:
        axis = self._axis()
        self._kind()
        out = _declared_out_dim(self, "out_dim", self._made_dim())
        return _move_after_batch(self, self.input_data, axis).copy_replace_dim(axis, out)

    def emit(self, inputs):
        x = inputs.x
        axis, k, kind, made = self._axis(), self._factor(), self._kind(), self._made_dim()
        out = _declared_out_dim(self, "out_dim", made)
        resized = _times_dim(self, axis, k, before=False)
        copies = self.new_dim(k, SPATIAL, f"{self.name}:{k}x")
        if kind == "nn" or k == 1:
            y = frames_repeated(x, axis, copies, resized)
        elif kind == "fill":
            at = x.axis_of(axis) + 1
            first = self.new_dim(1, SPATIAL, f"{self.name}:first")
            rest = self.new_dim(k - 1, SPATIAL, f"{self.name}:fill")
            fill = rf.full(x.dims[:at] + (rest,) + x.dims[at:], self._fill_value(), dtype=x.dtype,
                           sparse_dim=x.sparse_dim)
            y = rf.concat((rf.expand_dim(x, first, axis=at), first), (fill, rest), out_dim=copies)
            y = rf.merge_dims(y, dims=[axis, copies], out_dim=resized)[0]
        else:
            y = self._linear(x, axis, k, resized, inputs)
        if made != resized:
            y = self._drop_fill_frames(y, axis, copies, resized, made, inputs)
        _set_declared_sizes(inputs, made, out)
        y = rf.replace_dim(y, in_dim=made, out_dim=out) if out is not made else y
        return rf.permute(y, self.output.dims)

    def _drop_fill_frames(self, y: Tensor, axis: Dim, copies: Dim, resized: Dim, made: Dim, inputs) -> Tensor:
        """`fill_dropout`: frame i > 0 of each group of k kept where a uniform draw over [axis, copies] (shared
        by the batch) is >= the rate; the frames kept close up into the new dim `made`."""
        kept = rf.compare(rf.random_uniform([axis, copies]), "greater_equal", self._fill_dropout())
        kept = rf.combine(kept, "logical_or", rf.compare(rf.range_over_dim(copies), "equal", 0))
        counts = rf.merge_dims(rf.cast(kept, "int32"), dims=[axis, copies], out_dim=resized)[0]
        return repeat_frames(y, counts, resized, made, inputs)

    @staticmethod
    def _linear(x: Tensor, axis: Dim, k: int, made: Dim, inputs) -> Tensor:
        """Output frame j: x[t] + (x[t'] - x[t]) * (j % k) / k with t = j // k, t' = min(t + 1, last frame of the
        sequence)."""
        frames = rf.range_over_dim(made)
        low = rf.combine(frames, "floordiv", k)
        high = rf.combine(low, "add", 1)
        sizes = inputs.run.size(axis)
        last = rf.combine(sizes, "sub", 1) if isinstance(sizes, Tensor) else sizes - 1
        high = rf.minimum(high, last)
        frac = rf.combine(rf.cast(rf.combine(frames, "mod", k), x.dtype), "truediv", float(k))
        at_low = rf.gather(x, indices=low, axis=axis, clip_to_valid=True)
        at_high = rf.gather(x, indices=high, axis=axis, clip_to_valid=True)
        return rf.combine(at_low, "add", rf.combine(rf.combine(at_high, "sub", at_low), "mul", frac))
