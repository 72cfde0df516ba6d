"""The optimizer and gradient processing on PyTorch, from the same config keys as on TensorFlow.

The config is read and checked by `optimizers.optimizer_settings` (one mechanism, the same errors for unknown
or bad options); this module maps its Keras-named arguments to a `torch.optim` class. Defaults that differ
between Keras and PyTorch are taken from Keras (the TensorFlow side), so both backends run the same optimizer:
RMSProp's rho 0.9 (torch: alpha 0.99), Adadelta's rho 0.95 (torch: 0.9), Adagrad's initial accumulator 0.1
(torch: 0), AdamW's weight decay 0.004 (torch: 0.01), NAdam's momentum schedule (Keras's 0.96 ** t: torch's
momentum_decay 1). Keras's ``weight_decay`` on Adam is decoupled, as PyTorch's AdamW does it, so Adam with a
weight decay is `torch.optim.AdamW`. One difference remains: Keras adds Adam's epsilon to the square root of
the uncorrected second moment and RMSProp's under the square root, PyTorch to the corrected root; with
RETURNN's default epsilon (1e-16) the updates agree, with an epsilon near the gradients' scale they differ
slightly.

Gradient clipping (`gradient_clip`, `gradient_clip_norm`, `gradient_clip_global_norm`, in that order, the
global norm taken before the other two, as on TensorFlow), `gradient_noise` and `gradient_nan_inf_filter` are
applied to the parameters' ``.grad`` by `process_gradients_fn`.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence

import torch

from ..errors import InvalidOptionError
from .collector_pause import collector_paused
from .optimizers import gradient_clipping, gradient_noise, nan_inf_filter, optimizer_settings

# class key -> (torch.optim class, {Keras argument: torch argument}, Keras defaults where torch's differ)
_BETAS = {"beta_1": "betas.0", "beta_2": "betas.1", "epsilon": "eps"}
_TORCH_CLASSES: Dict[str, Any] = {
    "adam": ("Adam", dict(_BETAS, amsgrad="amsgrad", weight_decay="weight_decay"), {}),
    "nadam": ("NAdam", dict(_BETAS), {"momentum_decay": 1.0}),  # Keras: mu_t = beta1 * (1 - 0.5 * 0.96 ** t)
    "adamw": ("AdamW", dict(_BETAS, amsgrad="amsgrad", weight_decay="weight_decay"), {"weight_decay": 0.004}),
    "sgd": ("SGD", {"momentum": "momentum", "nesterov": "nesterov"}, {}),
    "momentum": ("SGD", {"momentum": "momentum", "nesterov": "nesterov"}, {}),
    "rmsprop": ("RMSprop", {"rho": "alpha", "momentum": "momentum", "epsilon": "eps", "centered": "centered"},
                {"alpha": 0.9}),
    "adagrad": ("Adagrad", {"initial_accumulator_value": "initial_accumulator_value", "epsilon": "eps"},
                {"initial_accumulator_value": 0.1}),
    "adadelta": ("Adadelta", {"rho": "rho", "epsilon": "eps"}, {"rho": 0.95}),
}

_LR_MULTIPLIER = "netcompiler_learning_rate_multiplier"  # kept in each param group
_FUSED_CLASSES = {"Adam", "AdamW", "SGD", "Adagrad"}
"""Classes with a fused update (`fused=True`: the whole step of a parameter in one kernel, also on CPU), used for
them: torch's default on CPU is a dozen separate elementwise ops per parameter (on a 100 x 512 chain the update
then takes as long as the forward pass). Same arithmetic, rounding aside."""


def make_torch_optimizer(config: Any, params: Sequence[torch.nn.Parameter],
                         learning_rate: Optional[float] = None) -> torch.optim.Optimizer:
    """A `torch.optim` optimizer over `params` as the config describes (see the module doc)."""
    settings = optimizer_settings(config, learning_rate)
    class_name, mapping, defaults = _TORCH_CLASSES[settings.key]
    if settings.key == "adam" and settings.kwargs.get("weight_decay"):
        class_name = "AdamW"  # Keras's weight decay is decoupled: PyTorch's AdamW
    kwargs: Dict[str, Any] = dict(defaults)
    betas = [0.9, 0.999]
    for option, value in settings.kwargs.items():
        target = mapping.get(option)
        if target is None:
            raise InvalidOptionError(f"option {option!r} of optimizer class {settings.key!r} has no PyTorch "
                                     f"counterpart", subject="config key 'optimizer'", option=option,
                                     suggestion="remove it, or train with backend = 'tensorflow'")
        if target.startswith("betas."):
            betas[int(target[-1])] = value
        else:
            kwargs[target] = value
    if "betas.0" in mapping.values():
        kwargs["betas"] = tuple(betas)
    if class_name == "Adam":
        kwargs.pop("weight_decay", None)  # 0: nothing to decay (PyTorch's Adam would add it to the gradient)
    params = list(params)
    # (not SGD with momentum: torch 2.13's fused kernel fails on a parameter whose first gradient comes after the
    # first update, which has no momentum buffer yet)
    if class_name in _FUSED_CLASSES and params and all(p.dtype.is_floating_point for p in params) and \
            not (class_name == "SGD" and kwargs.get("momentum")):
        kwargs["fused"] = True  # one kernel per parameter: 3-6x faster updates than torch's CPU default
    with collector_paused():  # the first construction imports torch._dynamo (see collector_pause.py)
        optimizer = getattr(torch.optim, class_name)(params, lr=settings.learning_rate * settings.multiplier,
                                                     **kwargs)
    for group in optimizer.param_groups:
        group[_LR_MULTIPLIER] = settings.multiplier
    return optimizer


def set_torch_learning_rate(optimizer: torch.optim.Optimizer, learning_rate: float) -> None:
    """Sets the rate of every parameter group (times the config's ``learning_rate_multiplier``)."""
    for group in optimizer.param_groups:
        group["lr"] = float(learning_rate) * group.get(_LR_MULTIPLIER, 1.0)


def _kernels_apply(group: Dict[str, Any], with_grad: List[torch.Tensor], slots: List[Any]) -> bool:
    """Whether `optimizer_step` may call the fused kernels for this parameter group: every parameter with a
    gradient has its state, the group is fused (not capturable or differentiable), its rate and betas are
    numbers (not tensors) and no gradient is sparse."""
    return all(slots) and bool(group.get("fused")) and not group.get("capturable") and \
        not group.get("differentiable") and all(isinstance(v, float) for v in (group["lr"], *group["betas"])) and \
        not any(p.grad.is_sparse for p in with_grad)


def optimizer_step(optimizer: torch.optim.Optimizer) -> Callable[[], None]:
    """A function that applies one update of `optimizer`: its own ``step``, or, for a fused Adam or AdamW (what
    `make_torch_optimizer` makes of ``adam``/``adamw``) whose parameters share one device and dtype, the same
    kernels ``step`` runs, called directly. ``Optimizer.step``'s Python around them (profiler scope, hooks,
    state checks, grouping by device and dtype) costs ~70 us per update: 4% of a small model's train step.
    An update in which some parameter with a gradient has no state yet goes through ``step``, which makes it."""
    decoupled = {torch.optim.Adam: False, torch.optim.AdamW: True}.get(type(optimizer))
    params = [p for group in optimizer.param_groups for p in group["params"]]
    if decoupled is None or not params or len({(p.device, p.dtype) for p in params}) > 1 or \
            any(p.is_complex() for p in params):
        return optimizer.step

    def step() -> None:
        updates = []
        state = optimizer.state  # read at every update: load_state_dict replaces the state and the groups
        for group in optimizer.param_groups:
            with_grad = [p for p in group["params"] if p.grad is not None]
            slots = [state.get(p) for p in with_grad]
            if not _kernels_apply(group, with_grad, slots):
                optimizer.step()  # makes the missing state, or takes what the kernels do not
                return
            if with_grad:
                updates.append((group, with_grad, slots))
        with torch.no_grad():
            for group, with_grad, slots in updates:
                steps = [s["step"] for s in slots]
                torch._foreach_add_(steps, 1)
                kernel = torch._fused_adamw_ if decoupled or group.get("decoupled_weight_decay") else \
                    torch._fused_adam_
                kernel(with_grad, [p.grad for p in with_grad], [s["exp_avg"] for s in slots],
                       [s["exp_avg_sq"] for s in slots],
                       [s["max_exp_avg_sq"] for s in slots] if group["amsgrad"] else [], steps,
                       amsgrad=group["amsgrad"], lr=group["lr"], beta1=group["betas"][0], beta2=group["betas"][1],
                       weight_decay=group["weight_decay"], eps=group["eps"], maximize=group["maximize"])
    return step


def clip_torch_gradients(grads: List[Optional[torch.Tensor]], clip: Dict[str, float]) -> List[Optional[torch.Tensor]]:
    """The gradients clipped as `optimizers.gradient_clipping` says (by value, per-tensor norm, global norm with
    the norm of the gradients as they came, as on TensorFlow); None entries stay None."""
    present = [g for g in grads if g is not None]
    scale = None
    if clip["global_norm"] and present:  # each tensor's norm, then their norm in float64
        # (public per-tensor norms: 0.3 ms slower on 300 tensors than the private torch._foreach_norm, under 0.1%
        # of a Transformer step; torch.nn.utils.get_total_norm, as slow, would take the last norm in float32)
        global_norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in present]).double())
        scale = clip["global_norm"] / torch.clamp(global_norm, min=clip["global_norm"])
    result = []
    for grad in grads:
        if grad is not None:
            if clip["value"]:
                grad = torch.clamp(grad, -clip["value"], clip["value"])
            if clip["norm"]:
                norm = torch.sqrt(torch.sum(torch.square(grad)))
                grad = grad * (clip["norm"] / torch.maximum(norm, torch.tensor(clip["norm"], dtype=norm.dtype)))
            if scale is not None:
                grad = grad * scale.to(grad.dtype)
        result.append(grad)
    return result


def process_gradients_fn(config: Any) -> Optional[Callable[[List[torch.nn.Parameter]], None]]:
    """`params -> None` that replaces each ``param.grad`` by its noisy, clipped, filtered version, as on
    TensorFlow (`optimizers.clip_gradients_fn`); None when the config asks for none of these."""
    clip = gradient_clipping(config)
    noise = gradient_noise(config)
    nan_inf = nan_inf_filter(config)
    if not noise and not nan_inf and not any(clip.values()):
        return None

    def process(params: List[torch.nn.Parameter]) -> None:
        grads = [p.grad for p in params]
        if noise:
            grads = [g if g is None else g + torch.nn.init.trunc_normal_(torch.empty_like(g), std=noise,
                                                                         a=-2 * noise, b=2 * noise)
                     for g in grads]
        grads = clip_torch_gradients(grads, clip)
        if nan_inf:
            grads = [g if g is None else torch.nan_to_num(g, nan=0.0, posinf=0.0, neginf=0.0) for g in grads]
        for param, grad in zip(params, grads):
            param.grad = grad
    return process
