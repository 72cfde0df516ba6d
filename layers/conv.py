"""Convolution and pooling over the spatial axes of the input: conv, pool.

Both layers work on "the spatial axes": every axis of the input except the
batch and the feature axis, in the input's order. Their number must equal the
length of `filter_size` / `pool_size`. The output is laid out
[B, spatial..., F]; each spatial output dim is `conv_out_dim(...)` of its input
dim, so a strided conv over dynamic time gives a derived dynamic Dim that
computes its lengths from the input lengths (and stride 1 with "same" padding
keeps the very same Dim).

Emission: the input is arranged as [B, spatial..., C] (channels last) and every spatial axis is padded
explicitly, then TF's conv/pool runs with "VALID" padding. "same" pads each axis as TF's "SAME" would for that
axis alone; over a dynamic axis it does so per sequence, for its own length (each sequence is moved to its
own left padding, padded frames set to zero), so every sequence gives exactly what it would give computed
alone -- also with strides, where TF's "SAME" on the padded batch would shift short sequences. Frames that
padding added never count in a pool: max ignores them, avg divides by the number of real frames in the window
(as TF's "SAME" does on static axes); a window without any real frame gives 0. "valid" windows of valid output
frames never reach past a sequence's end, so they need no masking.
"""

from typing import List, Sequence, Tuple

from netcompiler.errors import DimMismatchError
from netcompiler.layer_base import NONE_TYPE, LayerBase, Option, ParamSpec
from netcompiler.lazy_tf import ops, tf
from netcompiler.tensor import FEATURE, SPATIAL, Data, Dim, conv_out_dim, split_dim

from .activations import activate, check_activation
from .reduce import check_values

_INT_OR_TUPLE = (int, tuple, list)


def _not_supported(layer: LayerBase, names_and_defaults: Sequence[Tuple[str, object]]) -> None:
    for name, default in names_and_defaults:
        if layer.opts[name] != default:
            raise layer.error(f"option '{name}' is not supported by netcompiler yet", option=name,
                              suggestion=f"remove '{name}'")


class _WindowedLayer(LayerBase):
    """What conv and pool share: window sizes, strides, dilation and padding per spatial axis."""

    window_option = "filter_size"
    spatial_suggestion = None

    def window(self) -> Tuple[int, ...]:
        return self._positive_ints(self.opts[self.window_option], self.window_option, None)

    def per_axis(self, option: str, n: int) -> Tuple[int, ...]:
        """Option `option` (an int for all axes, or one int per axis) as n ints."""
        value = self.opts[option]
        if isinstance(value, int):
            value = (value,) * n
        return self._positive_ints(value, option, n)

    def _positive_ints(self, value, option: str, n) -> Tuple[int, ...]:
        if not isinstance(value, (tuple, list)) or not value:
            raise self.error(f"'{option}' must be a non-empty tuple of ints, not {value!r}", option=option)
        if any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in value):
            raise self.error(f"'{option}' must hold positive ints, not {value!r}", option=option)
        if n is not None and len(value) != n:
            raise self.error(f"'{option}' has {len(value)} entries, but '{self.window_option}' has {n}",
                             option=option, suggestion="give one int for all axes, or one per axis")
        return tuple(value)

    def padding(self) -> str:
        padding = self.opts["padding"]
        if padding.lower() not in ("same", "valid"):
            raise self.error(f"'padding' is {padding!r}, expected 'same' or 'valid'", option="padding")
        return padding.lower()

    def settings(self) -> Tuple[Tuple[int, ...], Tuple[int, ...], Tuple[int, ...], str]:
        """(window, strides, dilation) per spatial axis and the padding; strides default to the window."""
        window = self.window()
        strides = self.per_axis("strides", len(window)) if self.opts["strides"] is not None else window
        dilation = self.per_axis("dilation_rate", len(window))
        if max(dilation) > 1 and max(strides) > 1:
            raise self.error(f"'dilation_rate' {dilation} and 'strides' {strides} cannot both be > 1",
                             option="dilation_rate")
        return window, strides, dilation, self.padding()

    def spatial_out_dims(self, x: Data, spatial: List[Dim]) -> List[Dim]:
        """The output dim of each spatial input dim; checks the options against the input.

        Remembers `spatial` as `self.spatial_in` (the axes the emission pads)."""
        window = self.window()
        if len(window) != len(spatial):
            found = ", ".join(x.dim_label(d) for d in spatial) or "none"
            raise self.error(
                f"'{self.window_option}' {window} has {len(window)} entries, but the input {x.describe()} "
                f"has {len(spatial)} spatial axes ({found})", option=self.window_option, kind=DimMismatchError,
                suggestion=self.spatial_suggestion)
        window, strides, dilation, padding = self.settings()
        self.spatial_in = list(spatial)
        out = []
        for dim, size, stride, rate in zip(spatial, window, strides, dilation):
            span = (size - 1) * rate + 1
            if padding == "valid" and dim.size is not None and dim.size < span:
                raise self.error(f"'{self.window_option}' {window} spans {span} frames on the axis "
                                 f"{x.dim_label(dim)}, but the input {x.describe()} has only {dim.size} there",
                                 option=self.window_option,
                                 kind=DimMismatchError, suggestion="use padding 'same' or a smaller window")
            out.append(conv_out_dim(dim, size, stride, rate, padding))
        return out

    # --- emission -------------------------------------------------------------------------------------
    def channels_last(self, ctx, expand: int = 0, add_feature: bool = False, split=None):
        """The input as [B, spatial..., C]: the input's spatial axes in order, `expand` new size-1 axes, then
        the feature axis as a spatial axis with 1 channel (`add_feature`, or when there is no feature axis),
        or split into (F // split, split channels), or else as the channels."""
        data, x = self.input_data, ctx.input(self)
        feature = data.feature_dim
        spatial = [d for d in data.dims if not d.is_batch and d != feature]
        x = ops.transpose_to(x, data.dims, [d for d in data.dims if d.is_batch] + spatial +
                             ([feature] if feature is not None else []))
        if not data.has_batch:
            x = x[None]
        for _ in range(expand):
            x = tf.expand_dims(x, 1 + len(spatial))
        if add_feature or feature is None:
            return x[..., None]
        if split is not None:
            shape = ops.shape_list(x)
            return tf.reshape(x, shape[:-1] + [shape[-1] // split, split])
        return x

    def pad_spatial(self, ctx, x):
        """`x` [B, spatial..., C] with each spatial axis padded for the "VALID" op (see the module docstring)."""
        window, strides, dilation, padding = self.settings()
        if padding == "valid":
            return x
        for axis, (dim, size, stride, rate) in enumerate(zip(self.spatial_in, window, strides, dilation), 1):
            span = (size - 1) * rate + 1
            if span == 1 and stride == 1:
                continue  # a window of one frame needs no padding, and no frame crosses a sequence's end
            if dim.is_dynamic:
                x = _same_padded_per_sequence(x, axis, ctx.size(dim), span, stride)
            else:
                left, right = _same_padding(dim.size, span, stride)
                x = tf.pad(x, [[left, right] if a == axis else [0, 0] for a in range(x.shape.rank)])
        return x

    def from_channels_last(self, y):
        """The op's [B, spatial..., C] result laid out as the output (without batch if the input has none)."""
        return y if self.input_data.has_batch else y[0]


def _same_padding(size, span: int, stride: int):
    """(left, right) padding TF's "SAME" uses on an axis of `size` frames (ints or tensors)."""
    out = -(-size // stride)
    total = (out - 1) * stride + span - size
    total = max(total, 0) if isinstance(total, int) else tf.maximum(total, 0)
    return total // 2, total - total // 2


def _same_padded_per_sequence(x, axis: int, lengths, span: int, stride: int):
    """`x` with the dynamic `axis` laid out as "SAME" padding lays out each sequence alone: sequence b starts
    after its own left padding; everything outside the sequence is zero. Long enough for every output frame."""
    left, _ = _same_padding(lengths, span, stride)  # [B]
    frames = tf.shape(x)[axis]
    new_frames = (-(-frames // stride) - 1) * stride + span
    positions = tf.range(new_frames)[None, :] - left[:, None]  # [B, T'] position in the sequence
    valid = tf.logical_and(positions >= 0, positions < lengths[:, None])
    x = tf.gather(x, tf.clip_by_value(positions, 0, frames - 1), axis=axis, batch_dims=1)
    rows, cols = tf.unstack(tf.shape(valid))
    valid = tf.reshape(valid, [rows if a == 0 else cols if a == axis else 1 for a in range(x.shape.rank)])
    return tf.where(valid, x, tf.zeros_like(x))


def _layout(x: Data, spatial: List[Dim], feature) -> List[Dim]:
    """[B, spatial..., F], the batch dim only if the input has one."""
    batch = [d for d in x.dims if d.is_batch]
    return batch + list(spatial) + ([feature] if feature is not None else [])


class ConvLayer(_WindowedLayer):
    """N-D convolution over the input's spatial axes: `activation(conv(x, W) + b)`, with `n_out` output channels.

    Options: `n_out` (required), `filter_size` (required tuple; one entry per spatial axis), `padding`
    (required, "same"/"valid", any case), `strides` (1), `dilation_rate` (1), `groups` (1), `input_expand_dims`
    (0: add that many spatial axes of size 1 after the input's spatial axes), `input_add_feature_dim` (False:
    the input's feature axis becomes a spatial axis and the conv sees 1 input channel),
    `input_split_feature_dim` (None: split the feature axis F into a spatial axis F//k and k input channels),
    `with_bias` (True), `activation` (None), `forward_weights_init` ("glorot_uniform"), `bias_init` (0.0).
    Declared but not supported yet: `filter`, `filter_perm`, `bias` (layers), `auto_use_channel_first`.

    Params: "W" [*filter_size, in_channels // groups, n_out] and "b" [n_out].
    Decisions: `with_bias` defaults to True (RETURNN's default since behavior version 10; the spec's text says
    False). `input_add_feature_dim` and `input_split_feature_dim` together are an error. A "valid" window
    longer than a static input axis is an error (RETURNN would give a size-0 axis). Over a dynamic axis,
    "same" gives each sequence what it would give alone, also with strides (see the module docstring; RETURNN
    pads the padded batch, which shifts short sequences when the stride is > 1). `groups` > 1 runs TF's grouped
    convolution (input channels and `n_out` split into consecutive groups).
    """

    layer_class = "conv"
    options = {
        "n_out": Option(types=(int,), doc="number of output channels"),
        "filter_size": Option(types=(tuple, list), doc="window size per spatial axis, e.g. (3,)"),
        "padding": Option(types=(str,), doc='"same" or "valid"'),
        "strides": Option(1, _INT_OR_TUPLE),
        "dilation_rate": Option(1, _INT_OR_TUPLE),
        "groups": Option(1, (int,)),
        "input_expand_dims": Option(0, (int,)),
        "input_add_feature_dim": Option(False, (bool,)),
        "input_split_feature_dim": Option(None, (int, NONE_TYPE)),
        "auto_use_channel_first": Option(False, (bool,)),
        "with_bias": Option(True, (bool,)),
        "activation": Option(None, (str, NONE_TYPE)),
        "forward_weights_init": Option("glorot_uniform", (str, float, int, dict)),
        "bias_init": Option(0.0, (str, float, int, dict)),
        "filter": Option(None, (str, NONE_TYPE), ref="layer", doc="not supported"),
        "filter_perm": Option(None, (dict, NONE_TYPE), doc="not supported"),
        "bias": Option(None, (str, NONE_TYPE), ref="layer", doc="not supported"),
    }
    spatial_suggestion = "add axes with 'input_add_feature_dim', 'input_split_feature_dim' or 'input_expand_dims'"

    def make_output(self):
        _not_supported(self, [("filter", None), ("filter_perm", None), ("bias", None),
                              ("auto_use_channel_first", False)])
        check_activation(self.opts["activation"], self.name)
        x = self.input_data
        check_values(self, x, need_float=True)
        spatial, self.in_channels = self.conv_input(x)
        self.check_groups()
        feature = self.new_feature_dim(self.opts["n_out"])
        return Data(self.name, _layout(x, self.spatial_out_dims(x, spatial), feature), x.dtype, feature_dim=feature)

    def conv_input(self, x: Data) -> Tuple[List[Dim], Dim]:
        """The spatial dims the conv runs over and the input channel dim, after the input_* options."""
        expand, add_feature, split = (self.opts["input_expand_dims"], self.opts["input_add_feature_dim"],
                                      self.opts["input_split_feature_dim"])
        if expand < 0:
            raise self.error(f"'input_expand_dims' must be >= 0, not {expand}", option="input_expand_dims")
        if add_feature and split is not None:
            raise self.error("set at most one of 'input_add_feature_dim' and 'input_split_feature_dim'",
                             option="input_split_feature_dim")
        spatial = [d for d in x.dims if not d.is_batch and d != x.feature_dim]
        spatial += [self.new_dim(1, SPATIAL, f"{self.name}:expand{i}") for i in range(expand)]
        feature = x.feature_dim
        if add_feature:
            spatial += [feature] if feature is not None else []
            return spatial, self.new_dim(1, FEATURE, f"{self.name}:in_channel")
        if feature is None or feature.size is None:
            what = "no feature axis" if feature is None else f"a dynamic feature axis {feature.short_repr()}"
            raise self.error(f"the input {x.describe()} has {what}; the filter needs a static number of channels",
                             option="from", suggestion="set 'input_add_feature_dim': True", kind=DimMismatchError)
        if split is None:
            return spatial, feature
        if split < 1 or feature.size % split:
            raise self.error(f"'input_split_feature_dim' {split} must be positive and divide the feature size "
                             f"{feature.size} of the input {x.describe()}", option="input_split_feature_dim")
        return spatial + [split_dim(feature, split, pad=False)], self.new_dim(split, FEATURE, f"{self.name}:in_channel")

    def check_groups(self):
        groups, n_out, n_in = self.opts["groups"], self.opts["n_out"], self.in_channels.size
        if n_out < 1:
            raise self.error(f"'n_out' must be positive, not {n_out}", option="n_out")
        if groups < 1 or n_in % groups or n_out % groups:
            raise self.error(f"'groups' {groups} must be positive and divide both the input channels ({n_in}) "
                             f"and 'n_out' ({n_out})", option="groups")

    def make_params(self):
        out_dim = self.output.feature_dim
        groups = self.opts["groups"]
        in_dim = self.in_channels if groups == 1 else self.new_dim(
            self.in_channels.size // groups, FEATURE, f"{self.name}:in_channel_per_group")
        window = tuple(self.new_dim(size, SPATIAL, f"{self.name}:filter{i}") for i, size in enumerate(self.window()))
        params = {"W": ParamSpec(window + (in_dim, out_dim), self.opts["forward_weights_init"])}
        if self.opts["with_bias"]:
            params["b"] = ParamSpec((out_dim,), self.opts["bias_init"])
        return params

    def emit(self, ctx):
        opts = self.opts
        x = self.channels_last(ctx, opts["input_expand_dims"], opts["input_add_feature_dim"],
                               opts["input_split_feature_dim"])
        _, strides, dilation, _ = self.settings()
        y = tf.nn.convolution(self.pad_spatial(ctx, x), ctx.param(self, "W"), strides=strides, padding="VALID",
                              dilations=dilation)
        if opts["with_bias"]:
            y = y + ctx.param(self, "b")
        if opts["activation"] is not None:
            y = apply_activation(opts["activation"], y)  # the channels are last: softmax & co. see them
        return self.from_channels_last(y)


class PoolLayer(_WindowedLayer):
    """N-D max or average pooling over the input's spatial axes; the feature axis is kept.

    Options: `mode` (required, "max" or "avg"), `pool_size` (required tuple; one entry per spatial axis),
    `padding` ("VALID"; "same"/"valid", any case), `dilation_rate` (1), `strides` (None: `pool_size`),
    `use_channel_first` (False; True is not supported yet). Output layout [B, spatial..., F].
    Padding and masking: see the module docstring (max ignores frames that padding added, avg averages over the
    real frames of each window only; a window without one gives 0).
    """

    layer_class = "pool"
    window_option = "pool_size"
    options = {
        "mode": Option(types=(str,), choices=("max", "avg")),
        "pool_size": Option(types=(tuple, list), doc="window size per spatial axis, e.g. (2,)"),
        "padding": Option("VALID", (str,)),
        "dilation_rate": Option(1, _INT_OR_TUPLE),
        "strides": Option(None, _INT_OR_TUPLE + (NONE_TYPE,)),
        "use_channel_first": Option(False, (bool,)),
    }

    def make_output(self):
        _not_supported(self, [("use_channel_first", False)])
        x = self.input_data
        check_values(self, x, need_float=True)
        spatial = [d for d in x.dims if not d.is_batch and d != x.feature_dim]
        out = self.spatial_out_dims(x, spatial)
        return Data(self.name, _layout(x, out, x.feature_dim), x.dtype, feature_dim=x.feature_dim)

    def emit(self, ctx):
        x = self.channels_last(ctx)
        window, strides, dilation, padding = self.settings()

        def pool(t, mode):
            return tf.nn.pool(t, window, mode.upper(), strides=strides, padding="VALID", dilations=dilation)

        real = self.pad_spatial(ctx, tf.ones_like(x[..., :1])) if padding == "same" else None  # 1 on real frames
        x = self.pad_spatial(ctx, x)
        if real is None:
            y = pool(x, self.opts["mode"])
        elif self.opts["mode"] == "avg":
            y = tf.math.divide_no_nan(pool(x, "avg"), pool(real, "avg"))
        else:
            y = pool(tf.where(real > 0, x, tf.cast(float("-inf"), x.dtype)), "max")
            y = tf.where(pool(real, "max") > 0, y, tf.zeros_like(y))
        if self.input_data.feature_dim is None:
            y = y[..., 0]
        return self.from_channels_last(y)
