"""The layer class `loss`: a loss of the catalogue computed as a layer's output, per frame (RETURNN's LossLayer),
not optimised (for that, put "loss": "as_is" on it or on a layer reading it)."""

from typing import Any, Dict, List, Optional

from netcompiler import frontend as rf
from netcompiler.layer_base import NONE_TYPE, LayerBase, Option
from netcompiler.layer_parts import LayerWithParts, PartLayer
from netcompiler.loss_base import LOSS_CLASSES, LossBase, make_loss
from netcompiler.tensor import Data

from .losses import AsIsLoss, FramewiseLoss


class _LossSubject:
    """What the wrapped loss sees as "its layer": the input's output template, under the loss layer's name (so
    that its errors name the loss layer), without a `loss_scale` of its own."""

    def __init__(self, loss_layer: LayerBase, source: LayerBase):
        self.name = loss_layer.name
        self.network = source.network
        self.output = source.output
        self.opts = {}
        self.source = source


class _SourceLogits:
    """The pass's EmitContext, except that the wrapped loss's logits are those the input layer recorded (a
    softmax's, as RETURNN's LossLayer uses its input's output before the activation)."""

    def __init__(self, ctx, subject: _LossSubject):
        self._ctx, self._subject = ctx, subject

    def logits_of(self, layer):
        return self._ctx.logits_of(self._subject.source if layer is self._subject else layer)

    def __getattr__(self, name):
        return getattr(self._ctx, name)


class LossLayer(LayerWithParts):
    """The loss `loss_` of its single input against `target_`, per frame: the input's template without its
    feature axis, float32 (0 on padded frames). Sub-layers "<name>/loss" and "<name>/error" are the loss and the
    error per frame (e.g. 1.0 where the frame's argmax is wrong for 'ce').

    Options: `loss_` (required: a loss computed per frame: ce, mse, l1, mean_l1, bin_ce, generic_ce, ..., or
    as_is), `target_` (None: an extern data key, or 'layer:NAME'; default 'classes' for a loss that needs a
    target), `loss_opts_` (None: the loss's options), `use_error` (False: the error per frame instead of the
    loss). The loss is not reduced and no `loss_scale` is applied, as in RETURNN. Losses over whole sequences
    (ctc, edit_distance, ...) are refused: they have no value per frame (RETURNN fails on them too).
    """

    layer_class = "loss"
    options = {
        "loss_": Option(types=(str,), doc="the loss, e.g. 'ce'"),
        "target_": Option(None, (str, NONE_TYPE), doc="extern data key or 'layer:NAME'"),
        "loss_opts_": Option(None, (dict, NONE_TYPE)),
        "use_error": Option(False, (bool,)),
    }

    @staticmethod
    def _target_ref(d: Dict[str, Any], extern_keys) -> Optional[str]:
        """The layer name `target_` refers to ("data:KEY" or NAME), with RETURNN's default 'classes'."""
        target = d.get("target_")
        if target is None:
            cls = LOSS_CLASSES.classes().get(d.get("loss_"))
            if cls is None or not cls.need_target or (extern_keys is not None and "classes" not in extern_keys):
                return None
            target = "classes"
        if not isinstance(target, str):
            return None
        return target[len("layer:"):] if target.startswith("layer:") else f"data:{target}"

    @classmethod
    def referenced_names(cls, d):
        found = super().referenced_names(d)
        ref = cls._target_ref(d, None)
        if ref is not None and d.get("target_") is not None:
            found.append(("target_", ref))
        return found

    @classmethod
    def transform_config_dict(cls, opts, network, get_layer):
        opts = super().transform_config_dict(opts, network, get_layer)
        ref = cls._target_ref(opts, network.extern_data)
        opts["target_"] = get_layer(ref, "target_") if ref is not None else None
        return opts

    def make_output(self) -> Data:
        if len(self.sources) != 1:
            raise self.error(f"'loss' takes exactly one input (the output the loss is about), not "
                             f"{len(self.sources)}", option="from")
        self._loss = self._make_loss()
        x = self.sources[0].output
        dims = [d for d in x.dims if d != x.feature_dim]
        return Data(self.name, tuple(dims), "float32", time_dim=x.time_dim)

    def _make_loss(self) -> LossBase:
        name = self.opts["loss_"]
        cls = LOSS_CLASSES.get(name, self.name)
        if not (issubclass(cls, FramewiseLoss) or issubclass(cls, AsIsLoss)):
            raise self.error(f"loss '{name}' has no value per frame, which the 'loss' layer outputs",
                             option="loss_", suggestion="put it on the layer as \"loss\": " + repr(name) +
                             " instead, or use a framewise loss such as 'ce' or 'mse'")
        target = self.opts["target_"]
        if cls.need_target and target is None:
            raise self.error(f"loss '{name}' needs a target, and the network has no extern data 'classes'",
                             option="target_", suggestion="set 'target_' to an extern data key or 'layer:NAME'")
        subject = _LossSubject(self, self.sources[0])
        loss = make_loss(subject, name, dict(self.opts["loss_opts_"] or {}), target if cls.need_target else None)
        if self.opts["use_error"] and (isinstance(loss, AsIsLoss) or loss.error_name is None):
            raise self.error(f"'use_error': loss '{name}' has no error", option="use_error",
                             suggestion="remove 'use_error'")
        return loss

    def per_frame(self, inputs, which: str) -> rf.Tensor:
        """The loss ("loss") or error ("error") per frame, laid out as this layer's output."""
        loss, source = self._loss, self.sources[0]
        ctx = _SourceLogits(inputs.ctx, loss.layer)
        output = inputs.value(source)
        if isinstance(loss, AsIsLoss):
            value = output
        else:
            target = inputs.value(loss.target_layer) if loss.target_layer is not None else None
            losses, errors = loss.frame_losses(loss.frame_input(ctx, output), loss.paired_target(target))
            value = losses if which == "loss" else errors
        value = rf.masked(rf.cast(value, "float32"), self.output.dynamic_dims, 0.0)
        return rf.permute(value, self.output.dims)

    def emit(self, inputs):
        return self.per_frame(inputs, "error" if self.opts["use_error"] else "loss")

    # --- the sub-layers "loss" and "error" -----------------------------------------------------------------
    def sub_layer_names(self) -> List[str]:
        return ["loss", "error"]

    def make_part_layer(self, part: str) -> "LossPartLayer":
        return LossPartLayer(self, part)


class LossPartLayer(PartLayer):
    """"<loss layer>/loss" or "<loss layer>/error": the loss or the error per frame (no own options)."""

    def make_output(self) -> Data:
        parent = self.parent
        if self.part == "error" and (isinstance(parent._loss, AsIsLoss) or parent._loss.error_name is None):
            raise self.error(f"loss '{parent.opts['loss_']}' of layer '{parent.name}' has no error", option="from")
        return parent.output.copy(name=self.name)

    def emit(self, inputs):
        return self.parent.per_frame(inputs, self.part)
