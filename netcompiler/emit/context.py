"""`EmitContext`: what a layer's `emit(ctx)` works with during one forward pass.

It holds the layers' output tensors (each laid out as its template says), the
run's size table (per-sequence sizes of dynamic Dims, keyed by Dim), the
parameters, and whether this is a training pass.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

import tensorflow as tf

from ..errors import TemplateMismatchError
from ..tensor import Data, Dim
from . import ops


class EmitContext:
    """One forward pass: inputs in, layer outputs computed on demand (in build order)."""

    def __init__(self, model, inputs: Dict[str, tf.Tensor], lengths: Dict[str, tf.Tensor], training: bool):
        self.model = model
        self.network = model.network
        self.training = training
        self.inputs = {key: tf.convert_to_tensor(value) for key, value in inputs.items()}
        lengths = {key: tf.convert_to_tensor(value, tf.int32) for key, value in lengths.items()}
        self._values: Dict[int, tf.Tensor] = {}
        self._logits: Dict[int, tf.Tensor] = {}
        self._sizes: Dict[Dim, Any] = {}
        self.batch_size: Optional[tf.Tensor] = None
        for key, data in self.network.extern_data.items():
            if key not in inputs:
                continue
            if self.batch_size is None and data.batch_dim_axis is not None:
                self.batch_size = tf.shape(self.inputs[key])[data.batch_dim_axis]
            if data.time_dim is not None and data.time_dim.is_dynamic and key in lengths:
                self._sizes.setdefault(data.time_dim, lengths[key])

    # --- values --------------------------------------------------------------------
    def value(self, layer) -> tf.Tensor:
        """The output tensor of `layer`, emitting it if not done yet."""
        key = id(layer)
        if key not in self._values:
            with tf.name_scope(_scope_name(layer.name)):
                y = layer.emit(self)
            check_against_template(layer, y)
            self._values[key] = y
        return self._values[key]

    def emit_all(self) -> None:
        """Emits every built layer in build order (dependencies first, so no deep recursion)."""
        for layer in self.network.all_layers():
            self.value(layer)

    def extern_value(self, network, key: str) -> tf.Tensor:
        """The tensor fed for extern data `key` (inside a subnetwork: the subnetwork's input)."""
        owner = getattr(network, "owner", None)
        if owner is not None and key in network.extern_data:
            source = owner.inner_sources[key]
            return self.input(owner) if source is None else self.value(source)
        if network.parent is not None and key not in network.extern_data:
            return self.extern_value(network.parent, key)
        if key not in self.inputs:
            raise TemplateMismatchError(f"no input was fed for extern data '{key}'")
        return self.inputs[key]

    def input(self, layer) -> tf.Tensor:
        """The layer's sources, concatenated on the feature dim (laid out as `layer.input_data`), with the
        layer's `dropout` applied in training."""
        data = layer.input_data
        values = []
        for src in layer.sources:
            x = self.value(src)
            if len(layer.sources) > 1:
                # each source's own feature dim where the concatenated one will be, other dims as in `data`
                want = [src.output.feature_dim if d == data.feature_dim else d for d in data.dims]
                x = ops.transpose_to(x, src.output.dims, want)
            values.append(x)
        x = values[0] if len(values) == 1 else tf.concat(values, axis=data.feature_dim_axis)
        return self.dropout(layer, x, data)

    def dropout(self, layer, x: tf.Tensor, data: Data) -> tf.Tensor:
        rate = float(layer.opts.get("dropout") or 0.0)
        if rate <= 0 or not (self.training or layer.opts.get("dropout_on_forward")):
            return x
        noise_shape = None
        spec = layer.opts.get("dropout_noise_shape")
        if isinstance(spec, dict):
            from ..tensor import resolve_axes

            shape = tf.unstack(tf.shape(x))
            for desc, value in spec.items():
                if desc == "*":
                    continue
                for axis in resolve_axes(data, desc, layer=layer.name, option="dropout_noise_shape"):
                    if value == 1:
                        shape[axis] = 1
            noise_shape = tf.stack(shape)
        return tf.nn.dropout(x, rate=rate, noise_shape=noise_shape)

    # --- sizes -----------------------------------------------------------------------
    def size(self, dim: Dim):
        """The size of `dim`: an int if static, the batch size for the batch dim, else int32 [B] lengths."""
        if dim.size is not None:
            return dim.size
        if dim.is_batch:
            return self.batch_size
        return dim.compute_size(self._known_size, tf.maximum)

    def _known_size(self, dim: Dim):
        if dim.is_batch:
            return self.batch_size
        if dim not in self._sizes:
            raise TemplateMismatchError(f"no sizes are known for dynamic dim {dim!r} (netcompiler bug: the layer "
                                        f"that makes this dim must call ctx.set_size)")
        return self._sizes[dim]

    def set_size(self, dim: Dim, sizes: tf.Tensor) -> None:
        """Records the per-sequence sizes of a new dynamic dim."""
        self._sizes[dim] = tf.cast(sizes, tf.int32)

    def sequence_mask(self, data: Data, dim: Dim, x: Optional[tf.Tensor] = None) -> tf.Tensor:
        """Bool mask, True on valid frames of `dim`, broadcastable to a tensor laid out as `data`."""
        axis = data.axis_of(dim)
        sizes = self.size(dim)
        maxlen = tf.shape(x)[axis] if x is not None else tf.reduce_max(sizes)
        mask = tf.sequence_mask(sizes, maxlen=maxlen)  # [B, T]
        if not data.has_batch:
            return mask
        return ops.broadcast_to_dims(mask, [data.dims[data.batch_dim_axis], dim], data.dims)

    def masked(self, data: Data, x: tf.Tensor, dim: Dim, fill) -> tf.Tensor:
        """`x` with the padded frames of `dim` set to `fill`."""
        mask = self.sequence_mask(data, dim, x)
        return tf.where(mask, x, tf.cast(fill, x.dtype))

    def record_logits(self, layer, logits: tf.Tensor) -> None:
        """A layer whose output is a softmax records its logits (laid out as its output) for stable losses."""
        self._logits[id(layer)] = logits

    def logits_of(self, layer) -> Optional[tf.Tensor]:
        return self._logits.get(id(layer))

    # --- parameters and shared helpers -------------------------------------------------
    def param(self, layer, name: str) -> tf.Variable:
        return self.model.param(layer, name)


def _scope_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "_.-/" else "_" for c in name).strip("/") or "layer"


def check_against_template(layer, y) -> None:
    """Raises TemplateMismatchError if `y` disagrees with `layer.output` in rank, static sizes or dtype."""
    data = layer.output
    if not isinstance(y, (tf.Tensor, tf.Variable)):
        raise TemplateMismatchError(f"layer '{layer.name}' ({layer.layer_class}) emitted {type(y).__name__}, "
                                    f"not a tensor")
    problems = []
    if y.shape.rank != data.batch_ndim:
        problems.append(f"rank {y.shape.rank} instead of {data.batch_ndim}")
    else:
        for axis, (dim, actual) in enumerate(zip(data.dims, y.shape.as_list())):
            if dim.size is not None and actual is not None and actual != dim.size:
                problems.append(f"axis {axis} has size {actual} instead of {dim.size} ({data.dim_label(dim)})")
    if y.dtype.name != data.dtype:
        problems.append(f"dtype {y.dtype.name} instead of {data.dtype}")
    if problems:
        raise TemplateMismatchError(
            f"layer '{layer.name}' ({layer.layer_class}) disagrees with its template {data.describe()} "
            f"{data.dtype}: emitted {y.shape} {y.dtype.name}: " + "; ".join(problems))
