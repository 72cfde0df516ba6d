"""Optimizer updates as one fused TensorFlow kernel per variable, on the Keras optimizer's own slot variables.

A Keras optimizer's ``apply_gradients`` traces some 20 ops per variable (its update written out, distribution
hooks, name scopes); TensorFlow's ``ResourceApply*`` kernels do the same update in one op. `apply_gradients`
here runs those kernels on the variables the Keras optimizer created (``optimizer.build``), so checkpoints,
``set_learning_rate`` and the rate variable are exactly the Keras optimizer's. Each kernel's math is the Keras
class's (checked against it in ``tests/test_fused_updates.py``):

* Adam (also ``amsgrad``): ``ResourceApplyAdam`` / ``ResourceApplyAdamWithAmsgrad`` -- both put epsilon beside
  sqrt(v) and the bias correction into the rate, as Keras does;
* SGD: ``ResourceApplyGradientDescent``; with momentum (also Nesterov) ``ResourceApplyKerasMomentum``, whose
  slot holds -lr * the running sum as Keras's does (``ResourceApplyMomentum``'s does not);
* RMSprop with momentum > 0: ``ResourceApplyRMSProp`` / ``ResourceApplyCenteredRMSProp`` (epsilon inside the
  sqrt, as Keras); without momentum Keras has no momentum slot for the kernel, so Keras updates;
* Adadelta: ``ResourceApplyAdadelta``.

Everything else keeps Keras's own update: Nadam, AdamW or any weight decay, Adagrad (TF's kernel puts epsilon
outside the sqrt, Keras inside), and any optimizer with Keras-side extras (loss scaling, EMA, Keras's own
clipping or gradient accumulation). A sparse gradient (``tf.IndexedSlices``) is made dense first (repeated rows
summed, as TF1's optimizers, which RETURNN uses, deduplicate them): the update is then the one Keras computes
for the dense gradient. (Keras's own sparse path squares the repeated rows of Adam's gradient one by one.)
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, Tuple

from ..lazy_tf import tf


def _constants(opt, dtype, *names):
    """The optimizer's hyperparameters as tensors of `dtype`, made once per update, not once per variable."""
    return [tf.constant(float(getattr(opt, name)), dtype) for name in names]


# Each factory: (optimizer, dtype, keep) -> apply(index, var, grad, lr, *adam's beta powers) running the kernel.
# keep(value, idle) is `value`, or, in a step that must change nothing, `idle`: a factory that passes its decay
# rates through `keep` (idle 1: the slots keep their values) makes the kernel a no-op when the rate and the
# gradient are 0 too (see `_GATED`).
def _kernel_adam(opt, dtype, keep):
    ams = opt.amsgrad
    kernel = tf.raw_ops.ResourceApplyAdamWithAmsgrad if ams else tf.raw_ops.ResourceApplyAdam
    beta1, beta2, epsilon = _constants(opt, dtype, "beta_1", "beta_2", "epsilon")
    beta1, beta2 = keep(beta1, 1.0), keep(beta2, 1.0)

    def apply(index, var, grad, lr, beta1_power, beta2_power):
        slots = dict(m=opt._momentums[index].handle, v=opt._velocities[index].handle)
        if ams:
            slots["vhat"] = opt._velocity_hats[index].handle
        return kernel(var=var.handle, **slots, beta1_power=beta1_power, beta2_power=beta2_power, lr=lr,
                      beta1=beta1, beta2=beta2, epsilon=epsilon, grad=grad, use_locking=False)
    return apply


def _kernel_sgd(opt, dtype, keep):
    if not opt.momentum:
        return lambda index, var, grad, lr, *_: tf.raw_ops.ResourceApplyGradientDescent(
            var=var.handle, alpha=lr, delta=grad)
    (momentum,) = _constants(opt, dtype, "momentum")
    return lambda index, var, grad, lr, *_: tf.raw_ops.ResourceApplyKerasMomentum(
        var=var.handle, accum=opt.momentums[index].handle, lr=lr, grad=grad, momentum=momentum,
        use_nesterov=bool(opt.nesterov))


def _kernel_rmsprop(opt, dtype, keep):
    rho, momentum, epsilon = _constants(opt, dtype, "rho", "momentum", "epsilon")

    def apply(index, var, grad, lr, *_):
        args = dict(var=var.handle, ms=opt._velocities[index].handle, mom=opt._momentums[index].handle, lr=lr,
                    rho=rho, momentum=momentum, epsilon=epsilon, grad=grad)
        if opt.centered:
            return tf.raw_ops.ResourceApplyCenteredRMSProp(mg=opt._average_gradients[index].handle, **args)
        return tf.raw_ops.ResourceApplyRMSProp(**args)
    return apply


def _kernel_adadelta(opt, dtype, keep):
    rho, epsilon = _constants(opt, dtype, "rho", "epsilon")
    rho = keep(rho, 1.0)
    return lambda index, var, grad, lr, *_: tf.raw_ops.ResourceApplyAdadelta(
        var=var.handle, accum=opt._accumulated_grads[index].handle,
        accum_update=opt._accumulated_delta_vars[index].handle, lr=lr, rho=rho, epsilon=epsilon, grad=grad)


def _gated(opt) -> bool:
    """Whether the kernel is a no-op with rate 0, gradient 0 and its decay rates 1 (`keep`'s idle values):
    Adam and Adadelta given epsilon > 0 (else 0 / 0 where a slot is still 0), plain SGD. Momentum and RMSprop
    are not (their variable moves by the momentum slot even then): they run inside a tf.cond."""
    name = type(opt).__name__
    if name == "SGD":
        return not opt.momentum
    return name in ("Adam", "Adadelta") and opt.epsilon > 0


# exact Keras class name -> kernel factory (a subclass such as AdamW or a user's own class is not matched)
_KERNELS = {"Adam": _kernel_adam, "SGD": _kernel_sgd, "RMSprop": _kernel_rmsprop, "Adadelta": _kernel_adadelta}


def fused_kernel(optimizer) -> Optional[Callable]:
    """`(dtype, keep) -> per-variable kernel call` for `optimizer`, or None when only Keras's own update is exact for it."""
    make = _KERNELS.get(type(optimizer).__name__)
    if make is None or getattr(optimizer, "weight_decay", None):
        return None
    extras = ("loss_scale_factor", "clipnorm", "clipvalue", "global_clipnorm", "gradient_accumulation_steps")
    if getattr(optimizer, "use_ema", False) or any(getattr(optimizer, name, None) for name in extras):
        return None
    if type(optimizer).__name__ == "RMSprop" and not optimizer.momentum:
        return None
    return lambda dtype, keep: make(optimizer, dtype, keep)


def apply_gradients(optimizer, grads_and_vars: Sequence[Tuple[Any, Any]], apply_if: Any = None) -> None:
    """``optimizer.apply_gradients(grads_and_vars)`` with one fused kernel per variable where the optimizer has
    one (see the module doc; variables of several dtypes get Keras's update); the optimizer is built already
    (by `Trainer`, which names its slots cheaply). Counts the step (``optimizer.iterations``) as Keras does.

    With `apply_if` (a scalar bool tensor) a step where it is False changes nothing (variables, slots,
    iterations). Where the kernel allows (`_gated`) that is done without a tf.cond: rate 0, gradients 0 and
    decay rates 1 go into the same kernels (a tf.cond around the whole update traces and optimizes much slower:
    its branch captures every variable, slot and gradient). Otherwise the update runs inside one tf.cond."""
    fused = fused_kernel(optimizer)
    pairs = [(g, v) for g, v in grads_and_vars if g is not None]
    if fused is not None and pairs and not optimizer.built:  # its slots are the kernels' inputs
        raise ValueError("fused_updates.apply_gradients: the optimizer is not built; call "
                         "optimizer.build(variables) first (engine.trainer.Trainer does)")
    dtype = pairs[0][1].dtype.base_dtype if pairs else None
    if fused is None or not pairs or any(v.dtype.base_dtype != dtype for _, v in pairs):
        update = lambda: optimizer.apply_gradients(pairs)  # noqa: E731
    elif apply_if is not None and _gated(optimizer):
        return _apply_fused(optimizer, pairs, fused, dtype, apply_if)
    else:
        update = lambda: _apply_fused(optimizer, pairs, fused, dtype, None)  # noqa: E731
    if apply_if is None:
        update()
    else:
        tf.cond(apply_if, lambda: [update(), tf.no_op()][1], tf.no_op)


def _apply_fused(optimizer, pairs, fused, dtype, apply_if):
    idle_values = {}  # one Const per idle value, not one per gradient

    def keep(value, idle):
        if apply_if is None:
            return value
        if idle not in idle_values:
            idle_values[idle] = tf.constant(idle, dtype)
        return tf.where(apply_if, value, idle_values[idle])

    kernel = fused(dtype, keep)
    iterations = optimizer.iterations
    lr = keep(tf.cast(optimizer.learning_rate, dtype), 0.0)
    step = tf.cast(iterations + 1, dtype)
    powers = ()
    if hasattr(optimizer, "beta_1"):
        powers = (tf.pow(tf.cast(optimizer.beta_1, dtype), step), tf.pow(tf.cast(optimizer.beta_2, dtype), step))
    updates = []
    for grad, var in pairs:
        grad = tf.cast(tf.convert_to_tensor(grad), dtype)  # an IndexedSlices becomes dense (see the module doc)
        updates.append(kernel(optimizer._get_variable_index(var), var, keep(grad, 0.0), lr, *powers))
    with tf.control_dependencies(updates):
        iterations.assign_add(1 if apply_if is None else tf.cast(apply_if, iterations.dtype))


__all__ = ["apply_gradients", "fused_kernel"]
