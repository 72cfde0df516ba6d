"""The backend-free part of training: epochs of steps over a dataset's batches, summed scores, their printing.

A step runner (`trainer.Trainer` on TensorFlow, `torch_trainer.TorchTrainer` on PyTorch) subclasses `EpochLoop`
and provides `batches(dataset, settings)`, `train_step(inputs, lengths)` and `eval_step(inputs, lengths)`, each
step returning ({loss name: (loss sum, error sum, frames)}, objective), and `flush()` (what is left of an
accumulated update at the end of an epoch).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from ..errors import InvalidOptionError, TrainingError
from ..limits import is_int
from .distributed import SingleProcess
from .progress import Progress


@dataclass
class Scores:
    """Summed losses and errors of an epoch (or a dataset pass), per loss layer, and their frame counts."""

    loss: Dict[str, float] = field(default_factory=dict)
    error: Dict[str, float] = field(default_factory=dict)
    frames: Dict[str, float] = field(default_factory=dict)

    def add(self, results) -> None:
        for name, (loss_sum, error_sum, frames) in results.items():
            if loss_sum is None:  # an error only (a frontend loss marked as_error): it has no loss
                self.loss.setdefault(name, None)
            else:
                self.loss[name] = (self.loss.get(name) or 0.0) + float(loss_sum)
            self.error[name] = self.error.get(name, 0.0) + float(error_sum)
            self.frames[name] = self.frames.get(name, 0.0) + float(frames)

    def normalized(self) -> Dict[str, Dict[str, float]]:
        """Per loss layer: loss and error per valid frame."""
        return {name: {"loss": None if self.loss[name] is None else self.loss[name] / max(self.frames[name], 1.0),
                       "error": self.error[name] / max(self.frames[name], 1.0)} for name in self.loss}


def accum_grad_steps(value) -> int:
    """RETURNN's `accum_grad_multiple_step`: gradients of this many batches are summed and applied at once."""
    value = 1 if value is None else value
    if not is_int(value) or value < 1:
        raise InvalidOptionError(f"expected a whole number >= 1, got {value!r}",
                                 subject="config key 'accum_grad_multiple_step'",
                                 suggestion="use 1 (an update per batch) or e.g. 2 (an update every 2nd batch)")
    return int(value)


def nonfinite_error(value: float, results, epoch: int, step: int, last_checkpoint: Optional[str]) -> TrainingError:
    """The error that stops training after a step whose objective was NaN or inf (its update was skipped)."""
    bad = [name for name, (loss_sum, _, _) in results.items()
           if loss_sum is not None and not math.isfinite(float(loss_sum))]
    return TrainingError(
        f"the loss became {value} in epoch {epoch}, step {step} (loss of "
        f"{', '.join(repr(b) for b in bad) or 'the L2 term'}); this step's update was skipped. "
        + (f"The last good checkpoint is {last_checkpoint}." if last_checkpoint else
           "No checkpoint was written yet.")
        + " Try a lower learning_rate or gradient_clip_global_norm.")


class EpochLoop:
    """Epochs of training and dataset passes of evaluation, on top of a step runner's steps (see module doc)."""

    batching = None
    stop_on_nonfinite = True
    log = None
    before_train_step = None
    """None, or a function called with the number of updates made so far before each training step (the per-step
    learning rate, `dynamic_learning_rate.per_step_learning_rate`)."""
    workers = SingleProcess()
    """The worker group (`distributed.py`): its lockstep pads a worker's epoch with empty batches."""

    def batches(self, dataset, settings):
        raise NotImplementedError

    def train_step(self, inputs, lengths):
        raise NotImplementedError

    def eval_step(self, inputs, lengths):
        raise NotImplementedError

    def flush(self) -> None:
        """Applies what an accumulated update holds (see `accum_grad_steps`); nothing without accumulation."""

    def train_epoch(self, dataset, epoch: int, last_checkpoint: Optional[str]) -> Scores:
        scores = Scores()
        dataset.init_epoch(epoch)
        progress = Progress(total=dataset.num_seqs(), desc=f"epoch {epoch}", stream=self.log)
        for step, (inputs, lengths) in enumerate(self.workers.lockstep(self.batches(dataset, self.batching)), 1):
            if self.before_train_step is not None:
                self.before_train_step(int(self.step_count))
            results, objective = self.train_step(inputs, lengths)
            value = float(objective)
            if not math.isfinite(value) and self.stop_on_nonfinite:
                progress.close()
                raise nonfinite_error(value, results, epoch, step, last_checkpoint)
            scores.add(results)
            num_seqs = int(next(iter(inputs.values())).shape[0])
            progress.update(num_seqs, loss=value)
        # a checkpoint holds no half-accumulated gradients: the epoch's last (partial) sum is applied now
        self.flush()
        progress.close()
        return scores

    def evaluate(self, dataset, epoch: int) -> Scores:
        """Losses and errors of a whole dataset pass (no training, no dropout)."""
        scores = Scores()
        dataset.init_epoch(epoch)
        for inputs, lengths in self.batches(dataset, self.batching.whole_sequences()):
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
        label = f"{layer}:" if several and loss_names[layer] != layer else ""  # a frontend loss is its own label
        error = f" {error_names[layer]} {values['error']:.3f}" if error_names[layer] else ""
        if values["loss"] is None:  # an error only: `dev fer 0.050`
            parts.append(f"{prefix}{error}")
            continue
        parts.append(f"{prefix} {label}{loss_names[layer]} {values['loss']:.3f}{error}")
    return parts
