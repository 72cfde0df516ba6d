"""Convolution and pooling over spatial Dims: `conv`, `pool` (names and arguments as in RETURNN's frontend).

The backend works channels last, [N, spatial..., C]: for `conv` the channels are `in_dim` and every other dim
that is not spatial is a batch dim; for `pool` the batch dims are batch and the remaining dims are channels.
Several batch (or channel) dims are merged into one axis for the backend and split again after. The output
spatial dims are `conv_out_dim(...)` of the input ones unless given: a derived Dim whose sizes the run context
computes from the input sizes (stride 1 with "same" padding keeps the very same Dim).

Padding: "valid", or "same", which pads each spatial axis as TF's "SAME" would for that axis alone, explicitly,
before the backend's "valid" op. Over a dynamic axis "same" pads per sequence, for its own length: each
sequence sits behind its own left padding and everything outside it is zero, so every sequence gives exactly
what it would give computed alone -- also with strides, where "SAME" on the padded batch would shift short
sequences. An axis whose window is one frame needs no padding (no window crosses a sequence's end). Pooling
never counts frames that padding added: max ignores them, avg divides by the number of real frames in the window
(as TF's "SAME" does on static axes); a window without any real frame gives 0. "valid" windows of valid output
frames never reach past a sequence's end, so they need no masking. Where the backend's own "same" padding gives
the same (no dynamic axis needs padding, and for pooling no padded axis is dilated), it runs instead.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple, Union

from ..tensor import Data, Dim, Tensor, conv_out_dim
from ._dispatch import backend_for
from .array import expand_dim, permute, product_of_sizes
from .run_ctx import get_run_ctx

IntOrInts = Union[int, Sequence[int]]


def conv(source: Tensor, *, in_dim: Dim, out_dim: Dim, in_spatial_dims: Sequence[Dim],
         out_spatial_dims: Optional[Sequence[Dim]] = None, filter: Tensor, filter_size: Sequence[Dim],  # noqa: A002
         padding: str, strides: IntOrInts = 1, dilation_rate: IntOrInts = 1, groups: int = 1,
         bias: Optional[Tensor] = None) -> Tuple[Tensor, List[Dim]]:
    """Convolution (cross-correlation) of `source` over `in_spatial_dims` with `filter`, whose dims are
    `filter_size` (the window, one Dim per spatial dim), `out_dim` and its input channels (`in_dim`, or a dim of
    `in_dim.size // groups` with `groups`: input channels and `out_dim` split into consecutive groups); plus
    `bias` [out_dim]. Returns the result (dims: the batch dims, the output spatial dims, `out_dim`) and the
    output spatial dims."""
    spatial = list(in_spatial_dims)
    window = [d.size for d in filter_size]
    strides, dilation = _per_axis(strides, spatial, "strides"), _per_axis(dilation_rate, spatial, "dilation_rate")
    padding = _padding(padding)
    out_spatial = _out_spatial_dims(spatial, window, strides, dilation, padding, out_spatial_dims)
    filter_in = [d for d in filter.dims if d not in filter_size and d != out_dim]
    if len(filter_in) != 1 or filter_in[0].size * groups != in_dim.size:
        raise ValueError(f"conv: the filter {filter.data.describe()} needs the dims {list(filter_size)}, "
                         f"{out_dim} and one of {in_dim.size // groups} input channels ({groups} groups)")
    layout = _Layout(source, spatial, [in_dim])
    raw, op_padding = layout.raw, "valid"
    dynamic = _padded_dynamic_axes(spatial, window, dilation)
    if padding == "same" and all(strides[axis - 1] == 1 for axis in dynamic):
        # every sequence then starts after the backend's left padding; it must see zeros after its end
        for axis in dynamic:
            raw, _ = _zeroed_after_end(layout, raw, axis, spatial[axis - 1])
        op_padding = "same"
    elif padding == "same":
        raw, _ = _padded_same(layout, raw, spatial, window, strides, dilation, out_spatial, want_real=False)
    weights = permute(filter, list(filter_size) + filter_in + [out_dim]).raw
    raw = layout.backend.conv_raw(raw, weights, strides=strides, dilation_rate=dilation, padding=op_padding,
                                  groups=groups)
    y = layout.restore(raw, source, spatial, out_spatial, [out_dim], feature_dim=out_dim)
    if bias is not None:
        y = y + bias
    return y, out_spatial


def pool(source: Tensor, *, mode: str, pool_size: Sequence[int], padding: str = "valid",
         dilation_rate: IntOrInts = 1, strides: Optional[IntOrInts] = None, in_spatial_dims: Sequence[Dim],
         out_spatial_dims: Optional[Sequence[Dim]] = None, use_mask: bool = True) -> Tuple[Tensor, List[Dim]]:
    """Max or average ("max", "avg") pooling of `source` over `in_spatial_dims` with windows `pool_size`
    (strides default to the window); frames that padding adds never count (see the module docstring). With
    `use_mask` False, "same" pools the padded batch as a whole, as RETURNN's TF layer does: windows at a
    sequence's end read the frames beyond it. Returns the result (the source's dims with the output spatial dims
    in place of the input ones, laid out as [batch..., spatial..., others...]) and the output spatial dims."""
    if mode not in ("max", "avg"):
        raise ValueError(f"pool: mode must be 'max' or 'avg', not {mode!r}")
    spatial = list(in_spatial_dims)
    window = _per_axis(pool_size, spatial, "pool_size")
    strides = window if strides is None else _per_axis(strides, spatial, "strides")
    dilation = _per_axis(dilation_rate, spatial, "dilation_rate")
    padding = _padding(padding)
    out_spatial = _out_spatial_dims(spatial, window, strides, dilation, padding, out_spatial_dims)
    channels = [d for d in source.dims if not d.is_batch and d not in spatial]
    layout = _Layout(source, spatial, channels)
    backend, raw = layout.backend, layout.raw
    real, op_padding = None, "valid"
    if padding == "same" and (not use_mask or _backend_same_fits(spatial, window, dilation)):
        op_padding = "same"
    elif padding == "same":
        raw, real = _padded_same(layout, raw, spatial, window, strides, dilation, out_spatial, want_real=True)

    def run(value, how):
        return backend.pool_raw(value, how, window, strides=strides, dilation_rate=dilation, padding=op_padding)

    if real is None:
        raw = run(raw, mode)
    else:
        shape = list(backend.get_shape_tuple_raw(raw))[:-1] + [1]
        real_count = backend.cast_raw(backend.broadcast_to_raw(real, shape), source.dtype)  # 1 on real frames
        if mode == "avg":
            raw = backend.combine_raw(run(raw, "avg"), "divide_no_nan", run(real_count, "avg"))
        else:
            lowest = backend.convert_to_raw(float("-inf"), source.dtype)
            raw = run(backend.where_raw(real, raw, lowest), "max")
            any_real = backend.compare_raw(run(real_count, "max"), "greater", backend.convert_to_raw(0, source.dtype))
            raw = backend.where_raw(any_real, raw, backend.convert_to_raw(0, source.dtype))
    feature = source.feature_dim if source.feature_dim in channels else None
    return layout.restore(raw, source, spatial, out_spatial, channels, feature_dim=feature), out_spatial


# --- helpers -----------------------------------------------------------------------------------------------
def _per_axis(value: IntOrInts, spatial: Sequence[Dim], name: str) -> List[int]:
    """`value` (one int for all spatial dims, or one per dim) as a list of ints."""
    if isinstance(value, int):
        return [value] * len(spatial)
    value = list(value)
    if len(value) != len(spatial):
        raise ValueError(f"{name} {value} has {len(value)} entries for {len(spatial)} spatial dims {list(spatial)}")
    return value


def _padding(padding: str) -> str:
    padding = padding.lower()
    if padding not in ("same", "valid"):
        raise ValueError(f"padding must be 'same' or 'valid', not {padding!r}")
    return padding


def _out_spatial_dims(spatial, window, strides, dilation, padding, given) -> List[Dim]:
    """The output spatial dims: `given`, or derived by `conv_out_dim`."""
    derived = [conv_out_dim(d, w, s, r, padding) for d, w, s, r in zip(spatial, window, strides, dilation)]
    return _adopt_out_dims(derived, given)


def _adopt_out_dims(derived: List[Dim], given: Optional[Sequence[Dim]]) -> List[Dim]:
    """`given` output spatial dims in place of the `derived` ones (None: those); a given dynamic dim other than
    the derived one gets the derived one's sizes in this run."""
    if given is None:
        return derived
    given = list(given)
    if len(given) != len(derived):
        raise ValueError(f"out_spatial_dims {given} has {len(given)} entries for {len(derived)} spatial dims")
    for out, want in zip(given, derived):
        if out == want:
            continue
        if out.size != want.size:
            raise ValueError(f"out_spatial_dims: {out} has another size than the output {want}")
        if out.is_dynamic:
            ctx = get_run_ctx()
            ctx.set_size(out, ctx.size(want))
    return given


class _Layout:
    """A source laid out for the backend as [N, spatial..., C]: its batch dims merged into N, its `channels`
    merged into C (size-1 axes where there are none); `restore` lays a result out by Dims again."""

    def __init__(self, x: Tensor, spatial: Sequence[Dim], channels: Sequence[Dim]):
        self.backend = backend = backend_for(x)
        self.batch = [d for d in x.dims if d not in spatial and d not in channels]
        self.channels = list(channels)
        raw = permute(x, self.batch + list(spatial) + self.channels).raw
        self.reshaped = len(self.batch) > 1 or len(self.channels) > 1
        if self.reshaped:
            self.shape = list(backend.get_shape_tuple_raw(raw))
            nb, nc = len(self.batch), len(self.channels)
            raw = backend.reshape_raw(raw, [product_of_sizes(self.shape[:nb])] + self.shape[nb:len(self.shape) - nc]
                                      + [product_of_sizes(self.shape[len(self.shape) - nc:])])
        else:
            if not self.batch:
                raw = backend.expand_dims_raw(raw, 0)
            if not self.channels:
                raw = backend.expand_dims_raw(raw, 1 + len(spatial))
        self.raw = raw

    def restore(self, raw: Any, source: Tensor, spatial: Sequence[Dim], out_spatial: Sequence[Dim],
                out_channels: Sequence[Dim], feature_dim: Optional[Dim]) -> Tensor:
        """The backend's result [N, out spatial..., C'] as a Tensor with dims batch + `out_spatial` +
        `out_channels` (the source's channels, or the conv's one output channel dim)."""
        backend = self.backend
        nb, nc = len(self.batch), len(out_channels)
        if self.reshaped:
            shape = list(backend.get_shape_tuple_raw(raw))
            channel_shape = shape[-1:] if nc == 1 else self.shape[len(self.shape) - nc:]
            raw = backend.reshape_raw(raw, self.shape[:nb] + shape[1:-1] + channel_shape)
        else:
            squeeze = ([] if nb else [0]) + ([] if nc else [len(out_spatial) + 1])
            raw = backend.squeeze_raw(raw, squeeze)
        dims = self.batch + list(out_spatial) + list(out_channels)
        time = source.time_dim
        if time in spatial:
            time = out_spatial[list(spatial).index(time)]
        roles = {"time_dim": time} if time in dims else {}
        return Tensor(Data(source.name, dims, source.dtype, feature_dim=feature_dim, **roles), raw)


def _same_padding(size: int, span: int, stride: int) -> Tuple[int, int]:
    """(left, right) padding of TF's "SAME" on an axis of `size` frames."""
    out = -(-size // stride)
    total = max((out - 1) * stride + span - size, 0)
    return total // 2, total - total // 2


def _backend_same_fits(spatial, window, dilation) -> bool:
    """Whether the backend's own "same" pooling gives what the explicit padding gives: when no dynamic axis needs
    padding (a max must not see frames after a sequence's end) and no padded axis is dilated (the backend's
    "same" pools then skip the frames that padding added, as required)."""
    return not _padded_dynamic_axes(spatial, window, dilation) and \
        all(size == 1 or rate == 1 for size, rate in zip(window, dilation))


def _padded_dynamic_axes(spatial, window, dilation) -> List[int]:
    """The axes (1-based, after the batch) of the dynamic spatial dims whose windows span more than one frame."""
    return [axis for axis, (dim, size, rate) in enumerate(zip(spatial, window, dilation), 1)
            if dim.is_dynamic and (size - 1) * rate > 0]


def _zeroed_after_end(layout: _Layout, raw: Any, axis: int, dim: Dim):
    """`raw` with zeros after each sequence's end on the dynamic `axis` (carrying `dim`), and the mask of the
    frames before it (broadcastable to `raw`)."""
    backend = layout.backend
    rank = len(backend.get_known_shape_raw(raw))
    valid = backend.sequence_mask_raw(_flat_sizes(layout, dim), backend.get_shape_tuple_raw(raw)[axis])  # [N, T]
    valid = _broadcastable(backend, valid, axis, rank)
    return backend.where_raw(valid, raw, backend.convert_to_raw(0, backend.dtype_name(raw))), valid


def _padded_same(layout: _Layout, raw: Any, spatial, window, strides, dilation, out_spatial, want_real: bool):
    """`raw` [N, spatial..., C] with every spatial axis padded as "same" pads it (see the module docstring), and,
    if `want_real`, a bool mask broadcastable to it, True on the frames that are not padding (None if all are)."""
    backend = layout.backend
    real = None
    for axis, (dim, size, stride, rate, out) in enumerate(zip(spatial, window, strides, dilation, out_spatial), 1):
        span = (size - 1) * rate + 1
        if span == 1:
            continue  # a window of one frame needs no padding, and no window crosses a sequence's end
        if dim.is_dynamic:
            raw, valid = _padded_per_sequence(layout, raw, axis, dim, out, span, stride)
        else:
            raw, valid = _padded_static(backend, raw, axis, dim.size, span, stride, want_real)
        if want_real and valid is not None:
            real = valid if real is None else backend.combine_raw(real, "logical_and", valid)
    return raw, real


def _padded_static(backend, raw: Any, axis: int, size: int, span: int, stride: int, want_real: bool):
    """`raw` padded with zeros on the static `axis` as "SAME" pads it; and the (constant) mask of real frames."""
    left, right = _same_padding(size, span, stride)
    if left == right == 0:
        return raw, None
    rank = len(backend.get_known_shape_raw(raw))
    paddings = [(left, right) if a == axis else (0, 0) for a in range(rank)]
    raw = backend.pad_raw(raw, paddings, "constant", 0)
    if not want_real:
        return raw, None
    import numpy as np

    flags = np.zeros(left + size + right, dtype=bool)
    flags[left:left + size] = True
    return raw, backend.convert_to_raw(flags.reshape([-1 if a == axis else 1 for a in range(rank)]), "bool")


def _flat_sizes(layout: _Layout, dim: Dim) -> Any:
    """The per-sequence sizes of the dynamic `dim` as a raw [N] (N: the layout's merged batch dims)."""
    sizes = get_run_ctx().size(dim)
    if not isinstance(sizes, Tensor) or not sizes.dims or any(d not in layout.batch for d in sizes.dims):
        raise NotImplementedError(f"'same' padding over {dim} needs its sizes along the batch dims {layout.batch}")
    for d in layout.batch:
        if not sizes.has_dim(d):
            sizes = expand_dim(sizes, d)
    raw = permute(sizes, layout.batch).raw
    return raw if len(layout.batch) == 1 else layout.backend.reshape_raw(raw, [-1])


def _int_op(backend, a: Any, kind: str, b: Any) -> Any:
    """a KIND b on Python ints, or on raw scalars through the backend."""
    if not (isinstance(a, int) and isinstance(b, int)):
        return backend.combine_raw(a, kind, b)
    if kind == "add":
        return a + b
    return a * b if kind == "mul" else a // b


def _padded_per_sequence(layout: _Layout, raw: Any, axis: int, dim: Dim, out_dim: Dim, span: int, stride: int):
    """`raw` with the dynamic `axis` laid out as "SAME" lays out each sequence alone: sequence n starts after its
    own left padding and everything outside it is zero; long enough for every output frame. Also the mask of the
    real frames (broadcastable to the result)."""
    backend = layout.backend
    rank = len(backend.get_known_shape_raw(raw))
    if stride == 1:
        # the same left padding for every sequence: zero the frames after each end, then pad the axis
        left = (span - 1) // 2
        raw, valid = _zeroed_after_end(layout, raw, axis, dim)
        paddings = [(left, span - 1 - left) if a == axis else (0, 0) for a in range(rank)]
        return backend.pad_raw(raw, paddings, "constant", 0), backend.pad_raw(valid, paddings, "constant", False)
    lengths = _flat_sizes(layout, dim)  # [N]
    frames = backend.get_shape_tuple_raw(raw)[axis]
    # a sequence of length L is padded by (out - 1) * stride + span - L frames (at least 0), half of them (rounded
    # down) on the left; out is the length of its output, the out dim's size
    total = backend.combine_raw(backend.combine_raw(_flat_sizes(layout, out_dim), "mul", stride), "sub", lengths)
    if span != stride:
        total = backend.combine_raw(total, "add", span - stride)
    if span < stride:
        total = backend.combine_raw(total, "maximum", 0)
    left = backend.expand_dims_raw(backend.combine_raw(total, "floordiv", 2), 1)  # [N, 1]
    # enough frames for every output frame of the longest sequence, wherever it starts
    new_frames = _int_op(backend, _int_op(backend, frames, "add", stride - 1), "floordiv", stride)
    new_frames = _int_op(backend, _int_op(backend, new_frames, "mul", stride), "add", span - stride)
    positions = backend.combine_raw(backend.expand_dims_raw(backend.range_raw(new_frames, "int32"), 0), "sub",
                                    left)  # [N, T']: the frame of its sequence at each new position
    valid = backend.combine_raw(backend.compare_raw(positions, "greater_equal", 0), "logical_and",
                                backend.compare_raw(positions, "less", backend.expand_dims_raw(lengths, 1)))
    last = frames - 1 if isinstance(frames, int) else backend.combine_raw(frames, "sub", 1)
    raw = backend.gather_raw(raw, backend.clip_by_value_raw(positions, 0, last), axis, 1)
    valid = _broadcastable(backend, valid, axis, rank)
    return backend.where_raw(valid, raw, backend.convert_to_raw(0, backend.dtype_name(raw))), valid


def _broadcastable(backend, mask: Any, axis: int, rank: int) -> Any:
    """A mask [N, T] made broadcastable to a tensor of `rank` axes whose axis `axis` is T."""
    for _ in range(axis - 1):
        mask = backend.expand_dims_raw(mask, 1)
    for _ in range(rank - 1 - axis):
        mask = backend.expand_dims_raw(mask, axis + 1)
    return mask
