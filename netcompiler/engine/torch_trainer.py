"""The PyTorch step runner: eager train/eval steps of a step model (see `emit.model.StepModel`)."""

from __future__ import annotations

import math
import sys
from typing import Any, Callable, Dict, List, Optional

import numpy as np
import torch

from ..backends.gradient_order import second_order_gradients
from ..errors import InvalidOptionError
from .batching import BatchSettings
from .epochs import EpochLoop
from .feeding import extern_frame_shapes, numpy_batches
from .precision import StepCompute, torch_step_losses, torch_step_scope
from .torch_optimizers import optimizer_step


def to_torch(batch: Dict[str, Any]) -> Dict[str, torch.Tensor]:
    """NumPy batch arrays as tensors (sharing their memory)."""
    return {key: torch.from_numpy(np.ascontiguousarray(value)) for key, value in batch.items()}


class TorchTrainer(EpochLoop):
    """Runs epochs of training on a step model whose backend is PyTorch, with the TensorFlow `Trainer`'s
    semantics: the objective's gradients, processed by `process_gradients` (noise, clipping, NaN filter: see
    `torch_optimizers.process_gradients_fn`), applied by the optimizer; a step whose objective is not finite
    changes nothing (the epoch loop then stops training); `maximize_grad_norm` as on TensorFlow. With
    `accum_grad_steps` N > 1 the gradients of N batches are summed (PyTorch's ``.grad`` accumulation) and applied
    together at every N-th batch and at the end of an epoch."""

    def __init__(self, model, optimizer: Optional[torch.optim.Optimizer], batching: Optional[BatchSettings],
                 process_gradients: Optional[Callable[[List[torch.nn.Parameter]], None]] = None,
                 stop_on_nonfinite: bool = True, log=sys.stdout, accum_grad_steps: int = 1,
                 maximize_grad_norm: float = 0.0, compute: Optional[StepCompute] = None):
        self.model = model
        self.compute = compute or StepCompute()
        """bfloat16 autocast, torch.compile (config keys torch_amp, torch_compile: see `precision`)."""
        self._step_losses = torch_step_losses(model, self.compute)
        self.optimizer = optimizer
        self._apply_update = None if optimizer is None else optimizer_step(optimizer)
        self.batching = batching
        self.process_gradients = process_gradients
        self.stop_on_nonfinite = stop_on_nonfinite
        self.log = log
        self.accum_grad_steps = accum_grad_steps
        self.maximize_grad_norm = maximize_grad_norm  # RETURNN's setting: see `_backward`
        self._step_tensor = torch.zeros((), dtype=torch.int64)  # step_count as a tensor, kept equal to it
        if hasattr(model, "global_train_step"):  # what config functions read as network.global_train_step
            model.global_train_step = self._step_tensor
        self.step_count = 0
        self._pending = 0  # batches whose gradients are summed in .grad and not applied yet
        self.params = list(model.trainable_params)

    def batches(self, dataset, settings):
        keys = self.model.input_keys()
        frame_shapes = extern_frame_shapes(self.model.extern_data, keys)
        for inputs, lengths in numpy_batches(dataset, keys, settings, frame_shapes):
            yield to_torch(inputs), to_torch(lengths)

    @property
    def step_count(self) -> int:
        """Updates applied so far (with accumulation: one per N batches). Eval strings and config functions
        read it during the steps as `network.global_train_step`: an int64 scalar tensor, as on TensorFlow."""
        return self._step_count

    @step_count.setter
    def step_count(self, value: int) -> None:
        self._step_count = int(value)
        self._step_tensor.fill_(self._step_count)

    # --- steps -------------------------------------------------------------------------
    @staticmethod
    def _results(losses):
        return {v.name: (None if v.loss_sum is None else v.loss_sum.detach(),  # None: an error only (as_error)
                         torch.zeros(()) if v.error_sum is None else v.error_sum.detach(), v.num_frames.detach())
                for v in losses}

    def train_step(self, inputs, lengths):
        if self._pending == 0:
            self._zero_grad()
        losses, objective = self._losses(inputs, lengths, training=True)
        total = self.workers.reduce_objective(objective.detach())  # summed over workers: all skip a bad step
        if self.stop_on_nonfinite and not math.isfinite(float(total)):  # one read, not isfinite's four ops
            return self._results(losses), total  # no backward: the sums so far stay as they were
        if objective.requires_grad:
            self._backward(objective)
        self._pending += 1
        if self._pending == self.accum_grad_steps:
            self.flush()
        return self._results(losses), total

    def _losses(self, inputs, lengths, training: bool):
        """The model's `step_losses` in the configured precision (the backward pass runs outside autocast)."""
        with torch_step_scope(self.compute), second_order_gradients(training and bool(self.maximize_grad_norm)):
            return self._step_losses(inputs, lengths, training=training)

    def _backward(self, objective) -> None:
        """Adds the objective's gradients to the parameters' ``.grad``. With `maximize_grad_norm` = f, as in
        RETURNN (and on TensorFlow), each also gets the gradient of -f * (the global norm of the gradients)."""
        if not self.maximize_grad_norm:
            objective.backward()
            return
        grads = torch.autograd.grad(objective, self.params, create_graph=True, allow_unused=True)
        present = [g for g in grads if g is not None]
        penalty = torch.sqrt(sum(torch.sum(torch.square(g)) for g in present)) * -self.maximize_grad_norm
        extra = torch.autograd.grad(penalty, self.params, allow_unused=True)
        for param, grad, more in zip(self.params, grads, extra):
            if grad is None:
                continue
            total = grad.detach() + (more if more is not None else 0.0)
            param.grad = total if param.grad is None else param.grad + total

    def _zero_grad(self) -> None:
        for param in self.params:
            param.grad = None

    def flush(self) -> None:
        """Applies the summed gradients of the pending batches (clipped as configured) and clears them."""
        if self._pending == 0:
            return
        self.workers.reduce_gradients(self.params)  # summed over workers (distributed.py)
        if self.process_gradients is not None:
            self.process_gradients(self.params)
        self._apply_update()
        self.step_count += 1
        self._pending = 0
        self._zero_grad()

    def eval_step(self, inputs, lengths):
        with torch.no_grad():
            losses, objective = self._losses(inputs, lengths, training=False)
        return self._results(losses), objective

    # --- what checkpoints keep of the runner -------------------------------------------
    def state_dict(self) -> Dict[str, Any]:
        return {"step_count": self.step_count}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        self.step_count = int(state["step_count"])


def inference_fn(fn: Callable) -> Callable:
    """`fn(inputs, lengths)` on NumPy batches, run on tensors without recording gradients (forward, search)."""
    def run(inputs, lengths):
        with torch.no_grad():
            return fn(to_torch(inputs), to_torch(lengths))
    return run


def denormals_flushed() -> bool:
    """Whether this thread's floating-point mode flushes denormal floats to zero (see `configure_torch`)."""
    return float(np.float32(1e-40) * np.float32(1.0)) == 0.0


def configure_torch(seed: int, num_threads=None) -> bool:
    """Seeds PyTorch's random numbers (dropout, noise) from the config's `random_seed`; with the config's
    `torch_num_threads`, sets how many threads PyTorch's CPU ops use (its default is one per core, which on a
    busy machine can make small networks many times slower than one thread).

    Denormal floats are flushed to zero, as TensorFlow's CPU ops flush them: on Intel CPUs an op on denormal
    inputs is up to 200x slower (a 3200 x 128 by 128 x 128 matmul: 210 against 1 ms), and a deep chain's activations
    decay into that range (`benchmarks/run.py`'s 400-layer chain trained 3.4x faster with the flush). The setting is
    the thread's floating-point mode: the calling thread's, and that of the threads it starts afterwards (PyTorch's
    intra-op threads), NumPy's math in them included. Returns whether it was set before, for `end_denormal_flush`
    (`Session.close`) to restore the mode of a process that goes on after the run."""
    torch.manual_seed(seed)
    if num_threads is not None:
        if isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 1:
            raise InvalidOptionError(f"expected a whole number >= 1, got {num_threads!r}",
                                     subject="config key 'torch_num_threads'", suggestion="e.g. torch_num_threads = 1")
        torch.set_num_threads(num_threads)
    flushed_before = denormals_flushed()
    torch.set_flush_denormal(True)
    return flushed_before


def end_denormal_flush(flushed_before: bool) -> None:
    """Gives this thread back the floating-point mode `configure_torch` found (`flushed_before`, its result)."""
    if not flushed_before:
        torch.set_flush_denormal(False)
