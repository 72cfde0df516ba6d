"""The TensorFlow step runner: compiled train/eval steps of a step model (see `emit.model.StepModel`)."""

from __future__ import annotations

import contextlib
import sys
from typing import Optional

import tensorflow as tf

from ..backends.gradient_order import second_order_gradients
from ..backends.tensorflow.params import named_after_creation
from .batching import BatchSettings
from .epochs import EpochLoop, Scores, format_duration, format_scores
from .feeding import tf_batches
from .fused_updates import apply_gradients
from .graph_passes import SizedStep
from .precision import StepCompute, tf_step_function


class Trainer(EpochLoop):
    """Runs epochs of training on a step model (`CompiledNetwork` or `FrontendModel`) on TensorFlow.

    The train and eval steps are `tf.function`s whose input signature leaves
    batch and time open, so they are traced once, not per batch shape.
    With `accum_grad_steps` N > 1 the gradients of N batches are summed in variables and applied together at
    every N-th batch (and at the end of an epoch, see `EpochLoop.train_epoch`).
    """

    def __init__(self, model, optimizer, batching: Optional[BatchSettings], clip_gradients=None,
                 stop_on_nonfinite: bool = True, log=sys.stdout, maximize_grad_norm: float = 0.0,
                 accum_grad_steps: int = 1, compute: Optional[StepCompute] = None):
        self.model = model
        self.maximize_grad_norm = maximize_grad_norm  # RETURNN's setting: see `_gradients`
        self.optimizer = optimizer
        # the optimizer's one build site: its slots must exist before a checkpoint restores them (training_task)
        # and before the first step (fused_updates); created at half the cost (see named_after_creation)
        if not getattr(optimizer, "built", True):
            with named_after_creation():
                optimizer.build(model.trainable_params)
        self.batching = batching
        self.clip_gradients = clip_gradients
        self.stop_on_nonfinite = stop_on_nonfinite
        self.log = log
        self.accum_grad_steps = accum_grad_steps
        self.signature = model.input_signature(keys=model.input_keys())
        self.step_count = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
        """Updates applied so far (with accumulation: one per N batches)."""
        if hasattr(model, "global_train_step"):  # what config functions read as network.global_train_step
            model.global_train_step = self.step_count
        self._accumulated = None
        if accum_grad_steps > 1:
            self._accumulated = [tf.Variable(tf.zeros_like(v), trainable=False) for v in model.trainable_params]
            self._pending = tf.Variable(0, dtype=tf.int64, trainable=False, name="accumulated_batches")
            self._flush_step = tf.function(self._flush, autograph=False)
        self.compute = compute or StepCompute()
        """bfloat16 mixed precision, XLA (config keys tf_amp, tf_jit: see `precision`)."""
        self.train_step = self._compiled(self._train_step, "train")
        self.eval_step = self._compiled(self._eval_step, "eval")

    def _compiled(self, fn, name):
        """`fn` as a compiled step; a graph of many ops runs with grappler's cheaper pass set (`graph_passes`)."""
        step = tf_step_function(fn, self.signature, self.compute)

        def on_large(ops):
            print(f"{name} step: {ops} graph ops, grappler's costliest passes off (see engine/graph_passes.py)",
                  file=self.log)
        reduce = not (self.compute.amp_dtype or self.compute.jit)  # those set their own options / skip grappler
        return SizedStep(step, getattr(step, "function", step), reduce=reduce, on_large=on_large)

    def batches(self, dataset, settings):
        return tf_batches(dataset, self.signature, settings)

    # --- compiled steps --------------------------------------------------------------
    def _results(self, losses):
        return {v.name: (v.loss_sum,  # None for an error only (a frontend loss marked as_error)
                         v.error_sum if v.error_sum is not None else tf.constant(0.0), v.num_frames)
                for v in losses}

    def _gradients(self, inputs, lengths, variables):
        """(losses, objective, gradients). With `maximize_grad_norm` = f, as in RETURNN, each gradient also gets
        the gradient of -f * (the global norm of the gradients), a second-order term."""
        with (tf.GradientTape() if self.maximize_grad_norm else contextlib.nullcontext()) as outer:
            with tf.GradientTape() as tape, second_order_gradients(bool(self.maximize_grad_norm)):
                losses, objective = self.model.step_losses(inputs, lengths, training=True)
            grads = tape.gradient(objective, variables)
            if not self.maximize_grad_norm:
                return losses, objective, grads
            penalty = tf.linalg.global_norm([g for g in grads if g is not None]) * -self.maximize_grad_norm
        extra = outer.gradient(penalty, variables)
        return losses, objective, [g if g is None or e is None else tf.convert_to_tensor(g) + e
                                   for g, e in zip(grads, extra)]

    def _train_step(self, inputs, lengths):
        variables = self.model.trainable_params
        losses, objective, grads = self._gradients(inputs, lengths, variables)
        objective, grads = self.workers.reduce_step(objective, grads)  # summed over workers (distributed.py)
        update = self._apply if self._accumulated is None else self._accumulate
        # a non-finite step changes nothing: the caller stops training with the last good checkpoint intact
        update(grads, variables, tf.math.is_finite(objective) if self.stop_on_nonfinite else None)
        return self._results(losses), objective

    def _apply(self, grads, variables, apply_if=None):
        """Updates the variables (nothing changes where the scalar bool `apply_if` is False)."""
        if self.clip_gradients is not None:
            grads = self.clip_gradients(grads)
        apply_gradients(self.optimizer, list(zip(grads, variables)), apply_if)  # fused kernels where exact
        self.step_count.assign_add(1 if apply_if is None else tf.cast(apply_if, tf.int64))
        return tf.no_op()

    def _accumulate(self, grads, variables, apply_if=None):
        """Adds the batch's gradients to the sums (not where `apply_if` is False); applies and clears them at
        every N-th batch."""
        for total, grad in zip(self._accumulated, grads):
            if grad is not None:
                grad = tf.convert_to_tensor(grad)
                total.assign_add(grad if apply_if is None else tf.where(apply_if, grad, tf.zeros_like(grad)))
        self._pending.assign_add(1 if apply_if is None else tf.cast(apply_if, tf.int64))
        tf.cond(tf.equal(self._pending, self.accum_grad_steps), self._flush, lambda: tf.no_op())
        return tf.no_op()

    def _flush(self):
        """Applies the summed gradients (clipped as configured, like one batch's) and clears them."""
        variables = self.model.trainable_params

        def apply():  # tf.function keeps the program order of these reads and writes of the same variables
            self._apply([tf.identity(total) for total in self._accumulated], variables)
            for total in self._accumulated:
                total.assign(tf.zeros_like(total))
            self._pending.assign(0)
            return tf.no_op()
        return tf.cond(self._pending > 0, apply, lambda: tf.no_op())

    def flush(self) -> None:
        if self._accumulated is not None:
            self._flush_step()

    def _eval_step(self, inputs, lengths):
        losses, objective = self.model.step_losses(inputs, lengths, training=False)
        return self._results(losses), objective


__all__ = ["Scores", "Trainer", "format_duration", "format_scores"]  # the scores helpers live in epochs.py
