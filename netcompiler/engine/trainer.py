"""The training loop: compiled train/eval steps, epochs, scores, checkpoints, resume."""

from __future__ import annotations

import contextlib
import math
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import tensorflow as tf

from ..emit.model import CompiledNetwork
from ..errors import TrainingError
from .batching import BatchSettings
from .feeding import tf_batches
from .progress import Progress


@dataclass
class Scores:
    """Summed losses and errors of an epoch (or a dataset pass), per loss layer, and their frame counts."""

    loss: Dict[str, float] = field(default_factory=dict)
    error: Dict[str, float] = field(default_factory=dict)
    frames: Dict[str, float] = field(default_factory=dict)

    def add(self, results) -> None:
        for name, (loss_sum, error_sum, frames) in results.items():
            self.loss[name] = self.loss.get(name, 0.0) + float(loss_sum)
            self.error[name] = self.error.get(name, 0.0) + float(error_sum)
            self.frames[name] = self.frames.get(name, 0.0) + float(frames)

    def normalized(self) -> Dict[str, Dict[str, float]]:
        """Per loss layer: loss and error per valid frame."""
        return {name: {"loss": self.loss[name] / max(self.frames[name], 1.0),
                       "error": self.error[name] / max(self.frames[name], 1.0)} for name in self.loss}


class Trainer:
    """Runs epochs of training on a `CompiledNetwork`.

    The train and eval steps are `tf.function`s whose input signature leaves
    batch and time open, so they are traced once, not per batch shape.
    """

    def __init__(self, model: CompiledNetwork, optimizer, batching: Optional[BatchSettings], clip_gradients=None,
                 stop_on_nonfinite: bool = True, log=sys.stdout, maximize_grad_norm: float = 0.0):
        self.model = model
        self.maximize_grad_norm = maximize_grad_norm  # RETURNN's setting: see `_gradients`
        self.optimizer = optimizer
        self.batching = batching
        self.clip_gradients = clip_gradients
        self.stop_on_nonfinite = stop_on_nonfinite
        self.log = log
        self.signature = model.input_signature(keys=model.network_input_keys())
        self.step_count = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
        # our emission is plain TF calls: autograph has nothing to convert, and skipping it traces faster
        self.train_step = tf.function(self._train_step, input_signature=list(self.signature), autograph=False)
        self.eval_step = tf.function(self._eval_step, input_signature=list(self.signature), autograph=False)

    # --- compiled steps --------------------------------------------------------------
    def _results(self, losses):
        return {v.name: (v.loss_sum, v.error_sum if v.error_sum is not None else tf.constant(0.0), v.num_frames)
                for v in losses}

    def _gradients(self, inputs, lengths, variables):
        """(losses, objective, gradients). With `maximize_grad_norm` = f, as in RETURNN, each gradient also gets
        the gradient of -f * (the global norm of the gradients), a second-order term."""
        with (tf.GradientTape() if self.maximize_grad_norm else contextlib.nullcontext()) as outer:
            with tf.GradientTape() as tape:
                ctx = self.model.forward(inputs, lengths, training=True)
                losses = self.model.losses(ctx)
                objective = self.model.objective(losses, ctx)
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
        if self.clip_gradients is not None:
            grads = self.clip_gradients(grads)
        finite = tf.math.is_finite(objective)
        # a non-finite step changes nothing: the caller stops training with the last good checkpoint intact
        if self.stop_on_nonfinite:
            tf.cond(finite, lambda: self._apply(grads, variables), lambda: tf.no_op())
        else:
            self._apply(grads, variables)
        return self._results(losses), objective

    def _apply(self, grads, variables):
        self.optimizer.apply_gradients([(g, v) for g, v in zip(grads, variables) if g is not None])
        self.step_count.assign_add(1)
        return tf.no_op()

    def _eval_step(self, inputs, lengths):
        ctx = self.model.forward(inputs, lengths, training=False)
        losses = self.model.losses(ctx)
        return self._results(losses), self.model.objective(losses, ctx)

    # --- epochs --------------------------------------------------------------------------
    def train_epoch(self, dataset, epoch: int, last_checkpoint: Optional[str]) -> Scores:
        scores = Scores()
        dataset.init_epoch(epoch)
        progress = Progress(total=dataset.num_seqs(), desc=f"epoch {epoch}", stream=self.log)
        for step, (inputs, lengths) in enumerate(tf_batches(dataset, self.signature, self.batching), 1):
            results, objective = self.train_step(inputs, lengths)
            value = float(objective)
            if not math.isfinite(value) and self.stop_on_nonfinite:
                progress.close()
                bad = [name for name, (loss_sum, _, _) in results.items() if not math.isfinite(float(loss_sum))]
                raise TrainingError(
                    f"the loss became {value} in epoch {epoch}, step {step} (loss of "
                    f"{', '.join(repr(b) for b in bad) or 'the L2 term'}); this step's update was skipped. "
                    + (f"The last good checkpoint is {last_checkpoint}." if last_checkpoint else
                       "No checkpoint was written yet.")
                    + " Try a lower learning_rate or gradient_clip_global_norm.")
            scores.add(results)
            num_seqs = int(next(iter(inputs.values())).shape[0])
            progress.update(num_seqs, loss=value)
        progress.close()
        return scores

    def evaluate(self, dataset, epoch: int) -> Scores:
        """Losses and errors of a whole dataset pass (no training, no dropout)."""
        scores = Scores()
        dataset.init_epoch(epoch)
        for inputs, lengths in tf_batches(dataset, self.signature, self.batching.whole_sequences()):
            results, _ = self.eval_step(inputs, lengths)
            scores.add(results)
        return scores


def format_duration(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def format_scores(prefix: str, scores: Scores, loss_names: Dict[str, str], error_names: Dict[str, str]) -> List[str]:
    """`train ce 0.118 fer 0.050` (with the layer name where there are several losses)."""
    parts = []
    normalized = scores.normalized()
    several = len(normalized) > 1
    for layer, values in normalized.items():
        label = f"{layer}:" if several else ""
        error = f" {error_names[layer]} {values['error']:.3f}" if error_names[layer] else ""
        parts.append(f"{prefix} {label}{loss_names[layer]} {values['loss']:.3f}{error}")
    return parts
