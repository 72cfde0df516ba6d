"""The loss contract and the registry of loss classes (the catalogue is in `layers/losses.py`).

A loss is attached to a layer by the options "loss", "target", "loss_scale" and
"loss_opts". At template time `check()` verifies that the layer's output and
the target fit the loss; at emission `compute()` returns the summed loss and
error over valid frames, and the frame count they are normalised by.
"""

from __future__ import annotations

from typing import Any, ClassVar, Dict, Optional

from .errors import InvalidOptionError, UnknownOptionError, closest_match
from .layer_base import Option, matches_types, type_names
from .registry import Registry

LOSS_CLASSES = Registry("loss", "losses", "loss", error=InvalidOptionError)
"""Every loss class a layer's "loss" option can name, by `loss_class`."""


class LossBase:
    """Base of every loss class. `options` declares what "loss_opts" may contain."""

    loss_class: ClassVar[Optional[str]] = None
    need_target: ClassVar[bool] = True
    error_name: ClassVar[Optional[str]] = None
    """What `compute`'s error sum counts, for reports ("fer": frame errors, "ler": label errors); None: no error."""
    reads_output: ClassVar[bool] = True
    """False: where the layer recorded logits (a softmax: `ctx.logits_of`), `compute` reads those, never the
    values of its output; an eager step then skips the probabilities if nothing else reads them
    (`EmitContext.logits_suffice`)."""
    options: ClassVar[Dict[str, Option]] = {}

    def __init__(self, layer, target_layer, opts: Dict[str, Any]):
        self.layer = layer
        self.target_layer = target_layer
        self.opts = opts
        self.scale = layer.opts.get("loss_scale", 1.0)
        self.check()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("loss_class"):
            LOSS_CLASSES.register(cls.loss_class, cls)

    def check(self) -> None:
        """Raises a ConfigError if the layer's output and the target do not fit this loss."""

    def error(self, message: str, suggestion: Optional[str] = None) -> InvalidOptionError:
        return InvalidOptionError(f"loss '{self.loss_class}': {message}", layer=self.layer.name, option="loss",
                                  suggestion=suggestion)

    def compute(self, ctx, output, target):  # pragma: no cover - each loss overrides
        """(loss_sum, error_sum or None, num_frames): scalar Tensors computed through the op layer, inside the
        pass's run (`ctx.run`). `ctx` is the pass's `EmitContext` (`ctx.logits_of(layer)`: the logits a softmax
        recorded); `output` is the layer's value (a Tensor), `target` the target layer's (None without one)."""
        raise NotImplementedError(f"loss '{self.loss_class}' has no emission yet")


def loss_classes() -> Dict[str, type]:
    """All registered loss classes by `loss_class` name."""
    return LOSS_CLASSES.classes()


def make_loss(layer, name: str, loss_opts: Dict[str, Any], target_layer) -> LossBase:
    """The loss `name` for `layer`, with its "loss_opts" checked."""
    cls = LOSS_CLASSES.get(name, layer.name)
    opts = {}
    for key, value in loss_opts.items():
        if key not in cls.options:
            guess = closest_match(key, cls.options)
            raise UnknownOptionError(f"'loss_opts' key '{key}' unknown for loss '{name}'", layer=layer.name,
                                     option="loss_opts",
                                     suggestion=f"did you mean '{guess}'?" if guess else
                                     f"it takes: {', '.join(sorted(cls.options)) or 'nothing'}")
        if not matches_types(value, cls.options[key].types):
            raise InvalidOptionError(f"loss '{name}': 'loss_opts' key '{key}' must be {type_names(cls.options[key].types)}, "
                                     f"not {type(value).__name__} {value!r}", layer=layer.name, option="loss_opts")
        opts[key] = value
    for key, option in cls.options.items():
        opts.setdefault(key, option.default)
    return cls(layer, target_layer, opts)
