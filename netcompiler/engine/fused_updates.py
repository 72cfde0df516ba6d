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


def _kernel_adam(opt):
    ams = opt.amsgrad
    kernel = tf.raw_ops.ResourceApplyAdamWithAmsgrad if ams else tf.raw_ops.ResourceApplyAdam

    def apply(index, var, grad, lr, beta1_power, beta2_power):
        slots = dict(m=opt._momentums[index].handle, v=opt._velocities[index].handle)
        if ams:
            slots["vhat"] = opt._velocity_hats[index].handle
        return kernel(var=var.handle, **slots, beta1_power=beta1_power, beta2_power=beta2_power, lr=lr,
                      beta1=tf.cast(opt.beta_1, grad.dtype), beta2=tf.cast(opt.beta_2, grad.dtype),
                      epsilon=tf.cast(opt.epsilon, grad.dtype), grad=grad, use_locking=False)
    return apply


def _kernel_sgd(opt):
    def apply(index, var, grad, lr, *_):
        if not opt.momentum:
            return tf.raw_ops.ResourceApplyGradientDescent(var=var.handle, alpha=lr, delta=grad)
        return tf.raw_ops.ResourceApplyKerasMomentum(
            var=var.handle, accum=opt.momentums[index].handle, lr=lr, grad=grad,
            momentum=tf.cast(opt.momentum, grad.dtype), use_nesterov=bool(opt.nesterov))
    return apply


def _kernel_rmsprop(opt):
    def apply(index, var, grad, lr, *_):
        args = dict(var=var.handle, ms=opt._velocities[index].handle, mom=opt._momentums[index].handle, lr=lr,
                    rho=tf.cast(opt.rho, grad.dtype), momentum=tf.cast(opt.momentum, grad.dtype),
                    epsilon=tf.cast(opt.epsilon, grad.dtype), grad=grad)
        if opt.centered:
            return tf.raw_ops.ResourceApplyCenteredRMSProp(mg=opt._average_gradients[index].handle, **args)
        return tf.raw_ops.ResourceApplyRMSProp(**args)
    return apply


def _kernel_adadelta(opt):
    def apply(index, var, grad, lr, *_):
        return tf.raw_ops.ResourceApplyAdadelta(
            var=var.handle, accum=opt._accumulated_grads[index].handle,
            accum_update=opt._accumulated_delta_vars[index].handle, lr=lr, rho=tf.cast(opt.rho, grad.dtype),
            epsilon=tf.cast(opt.epsilon, grad.dtype), grad=grad)
    return apply


# exact Keras class name -> kernel factory (a subclass such as AdamW or a user's own class is not matched)
_KERNELS = {"Adam": _kernel_adam, "SGD": _kernel_sgd, "RMSprop": _kernel_rmsprop, "Adadelta": _kernel_adadelta}


def fused_kernel(optimizer) -> Optional[Callable]:
    """The per-variable kernel call for `optimizer`, or None when only Keras's own update is exact for it."""
    make = _KERNELS.get(type(optimizer).__name__)
    if make is None or getattr(optimizer, "weight_decay", None):
        return None
    extras = ("loss_scale_factor", "clipnorm", "clipvalue", "global_clipnorm", "gradient_accumulation_steps")
    if getattr(optimizer, "use_ema", False) or any(getattr(optimizer, name, None) for name in extras):
        return None
    if type(optimizer).__name__ == "RMSprop" and not optimizer.momentum:
        return None
    return make(optimizer)


def apply_gradients(optimizer, grads_and_vars: Sequence[Tuple[Any, Any]]) -> None:
    """``optimizer.apply_gradients(grads_and_vars)`` with one fused kernel per variable where the optimizer has
    one (see the module doc); the optimizer must be built on the variables. Counts the step
    (``optimizer.iterations``) as Keras does."""
    kernel = fused_kernel(optimizer)
    pairs = [(g, v) for g, v in grads_and_vars if g is not None]
    dtype = pairs[0][1].dtype.base_dtype if pairs else None
    if kernel is None or not pairs or any(v.dtype.base_dtype != dtype for _, v in pairs):
        optimizer.apply_gradients(pairs)
        return
    iterations = optimizer.iterations
    lr = tf.cast(optimizer.learning_rate, dtype)
    step = tf.cast(iterations + 1, dtype)
    powers = ()
    if hasattr(optimizer, "beta_1"):
        powers = (tf.pow(tf.cast(optimizer.beta_1, dtype), step), tf.pow(tf.cast(optimizer.beta_2, dtype), step))
    updates = []
    for grad, var in pairs:
        grad = tf.cast(tf.convert_to_tensor(grad), dtype)  # an IndexedSlices becomes dense (see the module doc)
        updates.append(kernel(optimizer._get_variable_index(var), var, grad, lr, *powers))
    with tf.control_dependencies(updates):
        iterations.assign_add(1)


__all__ = ["apply_gradients", "fused_kernel"]
