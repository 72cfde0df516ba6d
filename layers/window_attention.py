"""Attention over a fixed window around a position (gauss_window_attention), and combine_dims, which RETURNN's
attention demos use to flatten its output."""

import math
from typing import List, Tuple

import numpy as np

from netcompiler import frontend as rf
from netcompiler.layer_base import NONE_TYPE, NUMBER, LayerBase, Option
from netcompiler.tensor import FLOAT_DTYPES, SPATIAL, Data, Dim, resolve_axes

from .shape import AXES_TYPES, MergeDimsLayer


class GaussWindowAttentionLayer(LayerBase):
    """A Gauss-weighted sum of `window_size` frames of `base` around the position t (the input, float):
    out = sum_j N(t; j, std) * base[j] over the frames j = round(t) - window_size // 2 + k, k < window_size.

    Options: `base` (required: the layer attended to; its time dim is the axis the window moves on),
    `window_size` (required, int > 0), `std` (1.0), `inner_size` (None; an int n adds a dim "<layer>:inner"(n)
    with the positions t + i * inner_size_step - n / 2, i < n, as RETURNN computes them),
    `inner_size_step` (0.5). The input is t of shape [B] or [B, 1] (a size-1 feature dim is dropped); other
    dims of it (e.g. a time dim outside a loop) stay. Output: t's dims, then the inner dim, then the base's
    dims other than its time dim, feature last. As in RETURNN, a window frame outside a sequence takes the
    sequence's nearest valid frame (its weight still comes from the unclipped position).
    Emission: `rf.gather` of the window's frames, then one `rf.matmul` with the weights over the window.
    """

    layer_class = "gauss_window_attention"
    options = {
        "base": Option(types=(str,), ref="layer", doc="the layer attended to"),
        "window_size": Option(types=(int,), doc="frames in the window"),
        "std": Option(1.0, NUMBER, doc="standard deviation of the Gauss window"),
        "inner_size": Option(None, (int, NONE_TYPE), doc="positions around t, as an extra dim"),
        "inner_size_step": Option(0.5, NUMBER),
    }

    def make_output(self) -> Data:
        for key in ("window_size", "inner_size"):
            value = self.opts[key]
            if value is not None and value < 1:
                raise self.error(f"'{key}' must be a positive int, not {value}", option=key)
        if not self.opts["std"] > 0:
            raise self.error(f"'std' must be positive, not {self.opts['std']}", option="std")
        base = self.opts["base"].output
        if base.time_dim is None or base.feature_dim is None or base.dtype not in FLOAT_DTYPES:
            raise self.error(f"'base' layer '{self.opts['base'].name}' {base.describe()} {base.dtype} must be "
                             f"float with a time and a feature dim", option="base")
        t = self.input_data
        t_dims = self._position_dims(t)
        if t.dtype not in FLOAT_DTYPES or any(d in (base.time_dim, base.feature_dim) for d in t_dims):
            raise self.error(f"the input (the position) {t.describe()} {t.dtype} must be float, [B] or [B, 1], "
                             f"without the time or feature dim of 'base' {base.describe()}", option="from")
        inner = [self._inner_dim()] if self.opts["inner_size"] else []
        rest = [d for d in base.dims if d != base.time_dim and d not in t_dims]
        time = t.time_dim if t.time_dim in t_dims else None
        return Data(self.name, t_dims + inner + rest, base.dtype, time_dim=time, feature_dim=base.feature_dim)

    @staticmethod
    def _position_dims(t: Data) -> List[Dim]:
        """The dims of the position: the input's, without a feature dim of size 1."""
        return [d for d in t.dims if not (d == t.feature_dim and d.size == 1)]

    def _inner_dim(self) -> Dim:
        return self.new_dim(self.opts["inner_size"], SPATIAL, f"{self.name}:inner")

    def emit(self, inputs):
        base_layer = self.opts["base"]
        base = inputs.value(base_layer)
        time = base_layer.output.time_dim
        size = self.opts["window_size"]
        t = inputs.x
        if t.feature_dim is not None and t.feature_dim not in self._position_dims(t.data):
            t = rf.squeeze(t, axis=t.feature_dim)
        window = self.new_dim(size, SPATIAL, f"{self.name}:window")
        start = rf.cast(rf.activation(t, "round"), "int32") - size // 2
        positions = rf.range_over_dim(window).copy(sparse_dim=None) + start  # [window, t's dims]
        length = inputs.run.size(time)
        frames = rf.gather(base, indices=rf.clip_by_value(positions, 0, length - 1), axis=time)
        if self.opts["inner_size"]:
            n, step = self.opts["inner_size"], self.opts["inner_size_step"]
            offsets = rf.convert_to_tensor(np.array([i * step - n / 2.0 for i in range(n)], dtype=t.dtype),
                                           dims=[self._inner_dim()], dtype=t.dtype)
            t = t + offsets
        std = float(self.opts["std"])
        dist = t - rf.cast(positions, t.dtype)
        weights = rf.exp(dist * dist * (-0.5 / std ** 2)) * (1.0 / (std * math.sqrt(2.0 * math.pi)))
        return rf.matmul(frames, weights, reduce=window, use_mask=False)


def _description_of(x, axis: int) -> str:
    """An axis description a config can use for `axis` of `x` ('T', 'F', 'dim:N' or the index)."""
    if axis == x.time_dim_axis:
        return "T"
    if axis == x.feature_dim_axis:
        return "F"
    size = x.dims[axis].size
    same_size = [d for d in x.dims if d.size == size and not d.is_batch]
    return f"dim:{size}" if size is not None and len(same_size) == 1 else str(axis)


class CombineDimsLayer(MergeDimsLayer):
    """RETURNN's combine_dims: merge_dims of `axes` given as a list (a dynamic axis too, as RETURNN merges it:
    corpus missing/combine_dims); `axes` also takes "non_spatial": every axis but the batch and the dynamic ones
    (e.g. [B, inner, F] -> [B, inner*F])."""

    layer_class = "combine_dims"
    options = {
        "axes": Option(types=AXES_TYPES, doc='axes to merge (static ones), e.g. "non_spatial"'),
    }

    def _merged_axes(self) -> Tuple[List[int], List[Dim]]:
        x = self.input_data
        desc = self.opts["axes"]
        if isinstance(desc, str) and desc.lower() == "non_spatial":
            axes = [i for i, d in enumerate(x.dims) if not d.is_batch and not d.is_dynamic]
        else:
            axes = sorted(resolve_axes(x, desc, layer=self.name, option="axes"))
            if isinstance(desc, str) and len(axes) > 1:  # RETURNN refuses it (e.g. 'static'): no defined order
                raise self.error(f"'axes' {desc!r} names several axes of {x.describe()}; combine_dims needs them as "
                                 f"a list, in a well defined order (as RETURNN)", option="axes",
                                 suggestion=f"list them, e.g. {[_description_of(x, i) for i in axes]!r}")
        return axes, [x.dims[i] for i in axes]
