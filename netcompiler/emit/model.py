"""`CompiledNetwork`: a built network's variables and its forward pass, as a `tf.Module`."""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Dict, List, Optional

import tensorflow as tf

from ..network import Network
from .context import EmitContext
from .initializers import make_initializer


@dataclass
class LossValue:
    """One loss of one batch: sums over valid frames, and how many frames there were."""

    name: str
    loss_sum: tf.Tensor
    error_sum: Optional[tf.Tensor]
    num_frames: tf.Tensor
    scale: float
    normalized: bool
    """Whether training minimises the loss per frame (RETURNN's `use_normalized_loss`) or its sum."""


class CompiledNetwork(tf.Module):
    """Owns one `tf.Variable` per layer parameter, named "<layer>/<param>" (e.g. "lstm/W", "output/b")."""

    def __init__(self, network: Network, seed: int = 0):
        """Creates the parameters; each random initializer is seeded from `seed` and the parameter's name."""
        super().__init__(name="network")
        self.network = network
        self.params: Dict[str, tf.Variable] = {}
        for layer in network.all_layers():
            trainable = bool(layer.opts.get("trainable", True))
            for name, spec in layer.params.items():
                full = f"{layer.name}/{name}"
                init = make_initializer(spec.init, layer.name, name, seed=zlib.crc32(f"{seed}/{full}".encode()))
                self.params[full] = tf.Variable(init(shape=spec.sizes, dtype=spec.dtype), name=full,
                                                trainable=spec.trainable and trainable)

    def param(self, layer, name: str) -> tf.Variable:
        return self.params[f"{layer.name}/{name}"]

    @property
    def trainable_params(self) -> List[tf.Variable]:
        return [v for v in self.params.values() if v.trainable]

    def forward(self, inputs: Dict[str, tf.Tensor], lengths: Dict[str, tf.Tensor], training: bool) -> EmitContext:
        """Emits every built layer for these inputs; the context holds all outputs."""
        ctx = EmitContext(self, inputs, lengths, training)
        ctx.emit_all()
        return ctx

    def loss_layers(self):
        return [layer for layer in self.network.all_layers() if getattr(layer, "loss", None) is not None]

    def losses(self, ctx: EmitContext) -> List[LossValue]:
        result = []
        for layer in self.loss_layers():
            loss = layer.loss
            target = ctx.value(layer.target_layer) if layer.target_layer is not None else None
            with tf.name_scope(f"loss_{layer.name.replace('/', '_')}"):
                loss_sum, error_sum, frames = loss.compute(ctx, ctx.value(layer), target)
            normalized = bool(loss.opts.get("use_normalized_loss")) or loss.opts.get("custom_norm_factor") is not None
            result.append(LossValue(layer.name, loss_sum, error_sum, tf.cast(frames, tf.float32), loss.scale,
                                    normalized))
        return result

    def l2_term(self) -> tf.Tensor:
        """Sum over layers of L2 * (sum of squares of their parameters)."""
        total = tf.constant(0.0)
        for layer in self.network.all_layers():
            l2 = layer.opts.get("L2")
            if l2:
                for name in layer.params:
                    total += float(l2) * tf.nn.l2_loss(self.param(layer, name)) * 2.0
        return total

    def objective(self, losses: List[LossValue]) -> tf.Tensor:
        """What training minimises, as in RETURNN: each loss summed over the batch's valid frames (or per
        frame, where the loss says `use_normalized_loss` or `custom_norm_factor`), scaled, summed; plus L2."""
        total = self.l2_term()
        for value in losses:
            term = value.scale * value.loss_sum
            total += term / tf.maximum(value.num_frames, 1e-8) if value.normalized else term
        return total

    def network_input_keys(self) -> List[str]:
        """The extern data keys the built network reads (its inputs and loss targets)."""
        return [layer.opts["data_key"] for layer in self.network.layers.values() if layer.layer_class == "source"]

    def input_signature(self, keys=None):
        """TensorSpecs for the extern data (batch and dynamic dims open) and their lengths."""
        inputs, lengths = {}, {}
        for key, data in self.network.extern_data.items():
            if keys is not None and key not in keys:
                continue
            inputs[key] = tf.TensorSpec(data.batch_shape, tf.as_dtype(data.dtype), name=key)
            if data.time_dim is not None and data.time_dim.is_dynamic:
                lengths[key] = tf.TensorSpec([None], tf.int32, name=f"{key}_lengths")
        return inputs, lengths
