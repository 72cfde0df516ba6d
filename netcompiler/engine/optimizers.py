"""The optimizer and gradient clipping, from RETURNN's config keys.

Optimizer, in the order RETURNN looks at the keys:

* ``optimizer = {"class": NAME, ...options}`` (a plain ``"NAME"`` works too).
  NAME is matched without regard to case, with or without RETURNN's/TF1's
  ``Optimizer`` suffix: ``adam``, ``nadam``, ``adamw``, ``sgd`` (also
  ``gradientdescent``), ``momentum``, ``rmsprop``, ``adagrad``, ``adadelta``.
  Options take TF1's names (``beta1``, ``beta2``, ``use_nesterov``, RMSProp's
  ``decay``) or Keras's (``beta_1``, ``beta_2``, ``nesterov``, ``rho``), plus
  ``epsilon``, ``momentum``, ``weight_decay``, ``amsgrad``, ``centered`` where
  the class has them, and ``learning_rate_multiplier``. ``learning_rate`` is
  not an option here: it comes from the learning-rate control.
* ``adam = True``, ``nadam = True``, ``adadelta = True``, ``adagrad = True``,
  ``rmsprop = True`` (or a number: RMSProp's decay), else ``momentum = 0.9``
  (SGD with momentum), else plain SGD.

Where a class has an epsilon and none is given, RETURNN's default
``optimizer_epsilon`` (1e-16) is used, not Keras's 1e-7.

The learning rate is a variable of the optimizer: `set_learning_rate` changes
it between epochs without retracing the train step.

The TF trainer applies the update with one fused kernel per variable on this
optimizer's own slots where the kernel's math is the Keras class's (see
`fused_updates`); checkpoints hold the Keras optimizer's variables either way.

``maximize_grad_norm = F`` (`maximize_grad_norm`; the trainer does it): each gradient gets the gradient of
-F * (the global norm of all gradients) added first, as in RETURNN.

Gradient noise (`add_gradient_noise`), before any clipping, as RETURNN's updater does:

* ``gradient_noise = S``: truncated normal noise (mean 0, stddev S) added to every gradient entry (a sparse
  gradient becomes dense, as in RETURNN, where the noise has the variable's shape).

Gradient clipping (`clip_gradients`), applied in this order, like RETURNN:

* ``gradient_clip = C``: each gradient entry clipped to [-C, C] (by value).
* ``gradient_clip_norm = N``: each gradient tensor scaled to L2 norm <= N.
* ``gradient_clip_global_norm = G``: all gradients scaled together so that
  their joint L2 norm is <= G. As in RETURNN, the joint norm is the one of the
  gradients as they came, before the clipping above.

A value of 0 (or no key) switches a kind of clipping off.

Then, with ``gradient_nan_inf_filter = True`` (`filter_nan_inf`), every NaN or +-inf entry of a gradient
is replaced by 0, after the clipping, as in RETURNN's updater.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Sequence

from ..errors import InvalidOptionError, MissingOptionError, UnknownOptionError, closest_match
from ..lazy_tf import tf
from ..limits import is_int, is_number

DEFAULT_EPSILON = 1e-16  # RETURNN's `optimizer_epsilon` default

# class name -> (Keras class name, {accepted option: Keras argument})
_ADAM_OPTIONS = {"beta1": "beta_1", "beta_1": "beta_1", "beta2": "beta_2", "beta_2": "beta_2",
                 "epsilon": "epsilon", "amsgrad": "amsgrad"}
_CLASSES: Dict[str, Any] = {
    "adam": ("Adam", dict(_ADAM_OPTIONS, weight_decay="weight_decay")),
    "nadam": ("Nadam", {k: v for k, v in _ADAM_OPTIONS.items() if k != "amsgrad"}),
    "adamw": ("AdamW", dict(_ADAM_OPTIONS, weight_decay="weight_decay")),
    "sgd": ("SGD", {"momentum": "momentum", "use_nesterov": "nesterov", "nesterov": "nesterov"}),
    "momentum": ("SGD", {"momentum": "momentum", "use_nesterov": "nesterov", "nesterov": "nesterov"}),
    "rmsprop": ("RMSprop", {"decay": "rho", "rho": "rho", "momentum": "momentum", "epsilon": "epsilon",
                            "centered": "centered"}),
    "adagrad": ("Adagrad", {"initial_accumulator_value": "initial_accumulator_value", "epsilon": "epsilon"}),
    "adadelta": ("Adadelta", {"rho": "rho", "epsilon": "epsilon"}),
}
_ALIASES = {"gradientdescent": "sgd"}
OPTIMIZER_CLASSES = tuple(_CLASSES)
_COMMON_OPTIONS = ("class", "learning_rate_multiplier")

_LR_MULTIPLIER_ATTR = "_netcompiler_learning_rate_multiplier"


def _get(config: Any, key: str, default: Any = None) -> Any:
    """Works with a `Config`, a dict of config values, or any mapping."""
    return config.get(key, default) if hasattr(config, "get") else default


def _number(subject: str, value: Any, *, suggestion: str, option: Optional[str] = None,
            positive: bool = False) -> float:
    """`value` as a float, checked to be a number >= 0 (> 0 if `positive`); else an error with `suggestion`."""
    if not is_number(value) or value < 0 or (positive and value == 0):
        wanted = "a number > 0" if positive else "a number >= 0"
        raise InvalidOptionError(f"expected {wanted}, got {value!r}", subject=subject, option=option,
                                 suggestion=suggestion)
    return float(value)


def _off_or_positive(key: str) -> str:
    """The suggestion for a config key whose 0 turns a feature off."""
    return f"e.g. {key} = 0 (off), or a positive number"


def _class_key(name: Any) -> str:
    subject = "config key 'optimizer'"
    if not isinstance(name, str):
        raise InvalidOptionError(f"'class' must be an optimizer name such as 'adam', got {name!r}", subject=subject,
                                 option="class", suggestion="write optimizer = {'class': 'adam'}")
    key = name.lower()
    if key.endswith("optimizer") and key != "optimizer":
        key = key[:-len("optimizer")]
    key = _ALIASES.get(key, key)
    if key not in _CLASSES:
        near = closest_match(key, list(_CLASSES) + list(_ALIASES))
        choices = ", ".join(repr(c) for c in OPTIMIZER_CLASSES)
        raise InvalidOptionError(f"unknown optimizer class {name!r} (known: {choices})", subject=subject,
                                 option="class", suggestion=f"did you mean {near!r}?" if near else None)
    return key


def optimizer_spec(config: Any) -> Dict[str, Any]:
    """The optimizer the config asks for, as {"class": key, ...RETURNN-named options}."""
    opts = _get(config, "optimizer")
    if opts is not None:
        if isinstance(opts, str):
            opts = {"class": opts}
        if not isinstance(opts, Mapping):
            raise InvalidOptionError(f"expected a dict such as {{'class': 'adam'}}, got {opts!r}",
                                     subject="config key 'optimizer'",
                                     suggestion="write optimizer = {'class': 'adam'} (or a name: optimizer = 'adam')")
        if "class" not in opts:
            raise MissingOptionError("the dict has no 'class'", subject="config key 'optimizer'", option="class",
                                     suggestion="write optimizer = {'class': 'adam', ...}")
        spec = dict(opts)
        spec["class"] = _class_key(opts["class"])
        return spec
    momentum = _get(config, "momentum", 0.0)
    if _get(config, "adam", False):
        return {"class": "adam"}
    if _get(config, "nadam", False):
        return {"class": "nadam"}
    if _get(config, "adadelta", False):
        return {"class": "adadelta"}
    if _get(config, "adagrad", False):
        return {"class": "adagrad"}
    rmsprop = _get(config, "rmsprop", False)
    if rmsprop:
        spec = {"class": "rmsprop", "momentum": momentum or 0.0}
        if is_number(rmsprop) and not is_int(rmsprop):  # the decay (True: RMSprop with its default decay)
            spec["decay"] = float(rmsprop)
        return spec
    if momentum:
        return {"class": "momentum", "momentum": momentum}
    return {"class": "sgd"}


class OptimizerSettings(NamedTuple):
    """The optimizer the config asks for, checked: class key, Keras-named arguments (defaults of netcompiler,
    e.g. the epsilon, filled in), the learning-rate multiplier and the initial learning rate. Backend-free:
    each backend's optimizer factory builds its own class from it."""

    key: str
    kwargs: Dict[str, Any]
    multiplier: float
    learning_rate: float


def optimizer_settings(config: Any, learning_rate: Optional[float] = None) -> OptimizerSettings:
    """The checked optimizer settings of the config (see the module doc); errors name the bad option."""
    spec = optimizer_spec(config)
    key = spec.pop("class")
    accepted = _CLASSES[key][1]
    subject = "config key 'optimizer'"
    if "learning_rate" in spec:
        raise InvalidOptionError("'learning_rate' cannot be set here", subject=subject, option="learning_rate",
                                 suggestion="set the config key learning_rate (and learning_rate_control) instead")
    multiplier = _number(subject, spec.pop("learning_rate_multiplier", 1.0), option="learning_rate_multiplier",
                         positive=True, suggestion="e.g. 'learning_rate_multiplier': 0.5, or leave it out (1.0)")
    kwargs: Dict[str, Any] = {}
    for option, value in spec.items():
        if option not in accepted:
            near = closest_match(option, list(accepted) + list(_COMMON_OPTIONS))
            raise UnknownOptionError(
                f"option {option!r} unknown for optimizer class {key!r} "
                f"(known: {', '.join(sorted(set(accepted) | set(_COMMON_OPTIONS)))})",
                subject=subject, option=option, suggestion=f"did you mean {near!r}?" if near else None)
        target = accepted[option]
        if target in kwargs:
            raise InvalidOptionError(f"option {option!r} is given twice (also under another name)",
                                     subject=subject, option=option, suggestion="keep only one of the two names")
        if target in ("amsgrad", "centered", "nesterov"):
            if not isinstance(value, bool):
                raise InvalidOptionError(f"expected True or False, got {value!r}", subject=subject, option=option,
                                         suggestion=f"write '{option}': True or '{option}': False")
        else:
            value = _number(subject, value, option=option,
                            suggestion=f"give a number >= 0, or leave '{option}' out for its default")
        kwargs[target] = value
    if key == "momentum" and "momentum" not in kwargs:
        momentum = _get(config, "momentum", 0.0)
        if not momentum:
            raise MissingOptionError("class 'momentum' needs a 'momentum' value", subject=subject,
                                     option="momentum", suggestion="write optimizer = {'class': 'momentum', "
                                                                   "'momentum': 0.9}")
        kwargs["momentum"] = _number(subject, momentum, option="momentum", suggestion="e.g. 'momentum': 0.9")
    if "epsilon" in accepted.values() and "epsilon" not in kwargs:
        kwargs["epsilon"] = _number("config key 'optimizer_epsilon'",
                                    _get(config, "optimizer_epsilon", DEFAULT_EPSILON),
                                    suggestion=f"e.g. optimizer_epsilon = {DEFAULT_EPSILON!r} (the default)")
    if learning_rate is None:
        learning_rate = _get(config, "learning_rate", 1.0)
    learning_rate = _number("config key 'learning_rate'", learning_rate, suggestion="e.g. learning_rate = 0.001")
    return OptimizerSettings(key, kwargs, multiplier, learning_rate)


def make_optimizer(config: Any, learning_rate: Optional[float] = None):
    """A Keras optimizer (``tf.keras.optimizers.Optimizer``) as the config describes.

    `learning_rate` is the initial rate (default: config ``learning_rate``, else 1.0,
    as in RETURNN); the trainer sets the rate of each epoch with `set_learning_rate`.
    """
    settings = optimizer_settings(config, learning_rate)
    keras_name = _CLASSES[settings.key][0]
    optimizer = getattr(tf.keras.optimizers, keras_name)(
        learning_rate=settings.learning_rate * settings.multiplier, **settings.kwargs)
    setattr(optimizer, _LR_MULTIPLIER_ATTR, settings.multiplier)
    return optimizer


def set_learning_rate(optimizer, learning_rate: float) -> None:
    """Sets the optimizer's rate (times its ``learning_rate_multiplier``); no retracing."""
    multiplier = getattr(optimizer, _LR_MULTIPLIER_ATTR, 1.0)
    optimizer.learning_rate.assign(float(learning_rate) * multiplier)


def gradient_clipping(config: Any) -> Dict[str, float]:
    """The clipping the config asks for: {"value": C, "norm": N, "global_norm": G}, zeros meaning off."""
    result = {}
    for name, key in (("value", "gradient_clip"), ("norm", "gradient_clip_norm"),
                      ("global_norm", "gradient_clip_global_norm")):
        value = _get(config, key, 0.0)
        result[name] = _number(f"config key '{key}'", 0.0 if value is None else value,
                               suggestion=_off_or_positive(key))
    return result


def clip_gradients(grads: Sequence[Any], config: Any) -> List[Any]:
    """The gradients clipped as the config says (see the module doc); None entries stay None.

    Works eagerly and inside ``tf.function``; handles ``tf.IndexedSlices``.
    `config` may also be the dict `gradient_clipping` returns.
    """
    if isinstance(config, Mapping) and set(config) == {"value", "norm", "global_norm"}:
        clip = config
    else:
        clip = gradient_clipping(config)
    grads = list(grads)
    if not any(clip.values()):
        return grads
    present = [g for g in grads if g is not None]
    global_norm = tf.linalg.global_norm(present) if clip["global_norm"] and present else None
    result = []
    for grad in grads:
        if grad is None:
            result.append(None)
            continue
        if clip["value"]:
            if isinstance(grad, tf.IndexedSlices):
                grad = tf.IndexedSlices(tf.clip_by_value(grad.values, -clip["value"], clip["value"]),
                                        grad.indices, grad.dense_shape)
            else:
                grad = tf.clip_by_value(grad, -clip["value"], clip["value"])
        if clip["norm"]:
            grad = tf.clip_by_norm(grad, clip["norm"])
        result.append(grad)
    if global_norm is not None:
        present_index = [i for i, g in enumerate(result) if g is not None]
        clipped, _ = tf.clip_by_global_norm([result[i] for i in present_index], clip["global_norm"],
                                            use_norm=global_norm)
        for i, g in zip(present_index, clipped):
            result[i] = g
    return result


def gradient_noise(config: Any) -> float:
    """The stddev of the noise the config adds to the gradients (`gradient_noise`; 0: none)."""
    value = _get(config, "gradient_noise", 0.0)
    return _number("config key 'gradient_noise'", 0.0 if value is None else value,
                   suggestion=_off_or_positive("gradient_noise"))


def add_gradient_noise(grads: Sequence[Any], stddev: float) -> List[Any]:
    """Each gradient plus truncated normal noise of `stddev` (None entries stay None)."""
    result = []
    for grad in grads:
        if grad is not None:
            grad = tf.convert_to_tensor(grad)  # an IndexedSlices becomes dense: the noise covers every entry
            grad = grad + tf.random.truncated_normal(tf.shape(grad), stddev=stddev, dtype=grad.dtype)
        result.append(grad)
    return result


def nan_inf_filter(config: Any) -> bool:
    """Whether the config asks to replace NaN/inf gradient entries by 0 (`gradient_nan_inf_filter`)."""
    value = _get(config, "gradient_nan_inf_filter", False)
    if value is None:
        return False
    if not isinstance(value, (bool, int)) or isinstance(value, int) and value not in (0, 1):
        raise InvalidOptionError(f"expected True or False, got {value!r}",
                                 subject="config key 'gradient_nan_inf_filter'",
                                 suggestion="write gradient_nan_inf_filter = True (or False)")
    return bool(value)


def filter_nan_inf(grads: Sequence[Any]) -> List[Any]:
    """Each gradient with its NaN and +-inf entries set to 0 (None entries stay None)."""
    def finite(values):
        return tf.where(tf.math.is_finite(values), values, tf.zeros_like(values))
    result = []
    for grad in grads:
        if isinstance(grad, tf.IndexedSlices):
            grad = tf.IndexedSlices(finite(grad.values), grad.indices, grad.dense_shape)
        elif grad is not None:
            grad = finite(grad)
        result.append(grad)
    return result


def maximize_grad_norm(config: Any) -> float:
    """RETURNN's `maximize_grad_norm` factor f (0: off): the trainer adds the gradient of -f * (the global norm
    of the gradients) to the gradients, before noise and clipping."""
    value = _get(config, "maximize_grad_norm", 0.0)
    return _number("config key 'maximize_grad_norm'", 0.0 if value is None else value,
                   suggestion=_off_or_positive("maximize_grad_norm"))


def clip_gradients_fn(config: Any) -> Optional[Callable[[Sequence[Any]], List[Any]]]:
    """`grads -> noisy, clipped, filtered grads` for the config (checked now), or None when it asks for none
    of these."""
    clip = gradient_clipping(config)
    noise = gradient_noise(config)
    nan_inf = nan_inf_filter(config)
    if not noise and not nan_inf and not any(clip.values()):
        return None

    def process(grads):
        if noise:
            grads = add_gradient_noise(grads, noise)
        grads = clip_gradients(grads, clip)
        return filter_nan_inf(grads) if nan_inf else grads
    return process


__all__ = ["OPTIMIZER_CLASSES", "OptimizerSettings", "add_gradient_noise", "clip_gradients", "clip_gradients_fn",
           "filter_nan_inf", "gradient_clipping", "gradient_noise", "make_optimizer", "maximize_grad_norm", "nan_inf_filter",
           "optimizer_settings", "optimizer_spec", "set_learning_rate"]
