"""How the train and eval steps compute: bfloat16 mixed precision and compilation, from the config.

Config keys (RETURNN's names; each applies to its own backend, set for the other one it gets a notice):

* ``tf_amp = "bfloat16"`` (or ``{"dtype": "bfloat16"}``), backend tensorflow; ``torch_amp`` the same on
  PyTorch. Matmuls, convolutions and the elementwise math between them run in bfloat16; the parameters stay
  float32 (master weights: read as float32, cast to bfloat16 where a matmul reads them), the gradients reach the
  optimizer as float32, and log-softmax, every sum and mean (normalisation statistics, loss sums) and the losses
  are computed in float32 (softmax takes a bfloat16 input and accumulates in float32 inside its kernel). Only the train and eval steps (the dev scores too); forward, search and
  export run in float32. Layer templates (`dump-net`) keep saying float32: that is what every layer's output is
  outside the step, the compute dtype is a property of the run, not of the network.

  * TensorFlow: the layers are not changed at all. The train/eval `tf.function`s run with grappler's
    oneDNN bfloat16 rewrite (`auto_mixed_precision_onednn_bfloat16`): MatMul/BatchMatMul/Conv run in bfloat16
    with the elementwise ops next to them, Sum/Mean/Exp/the cross-entropy kernels stay float32, and here also
    LogSoftmax (moved from the rewrite's "infer" list to its "deny" list: log-probabilities feed losses).
    Softmax runs in bfloat16 (oneDNN's kernel computes in float32 and rounds the output; the attention weights
    it gives feed a bfloat16 matmul, and keeping it float32 cost two casts of the [B, H, T, T] tensor each
    way: the bf16 step measured 6% faster without them). The option and the list
    change hold for these calls only (the call options of the two functions; `_float32_log_softmax_lists`), other
    functions of the process run as before.
  * PyTorch: `torch.autocast("cpu", dtype=torch.bfloat16)` around the step's forward and losses; the backend's
    log-softmax, reductions and cross entropy upcast a bfloat16 input to float32 while autocast is on
    (`backends/torch/core.py: full_precision`). Elementwise math with one bfloat16 operand runs in bfloat16 (a
    float32 bias, layer-norm scale or residual is cast down, where PyTorch would promote the result to float32
    and the next matmul cast it back), and softmax keeps a bfloat16 input's dtype (its kernel computes in
    float32; the attention weights it gives feed a bfloat16 matmul).

  Only ``"bfloat16"``: float16 has no fast CPU kernels and would need loss scaling; it is refused.
* ``tf_jit = True``: the train and eval `tf.function`s with `jit_compile=True` (XLA). Batch and time stay open
  in the input signature, so XLA compiles once per distinct batch shape. Not together with ``tf_amp`` (XLA
  bypasses grappler, the rewrite would not happen). Off by default: see benchmarks/README.md
  ("mixed_precision.py") for when it measured faster.
* ``torch_compile = True``: `torch.compile` of the step's forward and losses (dynamo; compiles once per shape
  and recompiles for new ones).
"""

from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional

from ..errors import InvalidOptionError
from .call_options import call_options_with, calls_with

AMP_KEYS = {"tensorflow": "tf_amp", "torch": "torch_amp"}
JIT_KEYS = {"tensorflow": "tf_jit", "torch": "torch_compile"}
_FLOAT32_OPS = "LogSoftmax"
"""Ops the grappler rewrite would run in bfloat16 after a matmul that we keep in float32."""


@dataclass(frozen=True)
class StepCompute:
    """How the steps compute: `amp_dtype` "bfloat16" for mixed precision (None: float32); `jit` compiled
    (XLA on TensorFlow, torch.compile on PyTorch)."""

    amp_dtype: Optional[str] = None
    jit: bool = False

    def describe(self) -> str:
        parts = ["bfloat16 mixed precision (float32 parameters)" if self.amp_dtype else "float32"]
        if self.jit:
            parts.append("compiled")
        return ", ".join(parts)


def _amp_dtype(key: str, value: Any) -> Optional[str]:
    if value is None or value is False:
        return None
    dtype = value
    if isinstance(value, dict):
        unknown = sorted(set(value) - {"dtype"})
        if unknown or "dtype" not in value:
            raise InvalidOptionError(f"a dict takes only 'dtype', got {value!r}", subject=f"config key '{key}'",
                                     suggestion=f"{key} = {{'dtype': 'bfloat16'}}")
        dtype = value["dtype"]
    if dtype in ("bfloat16", "bf16"):
        return "bfloat16"
    problem = ("float16 is not supported (no fast float16 kernels on CPU, and it would need loss scaling)"
               if dtype in ("float16", "fp16", "half") else f"expected 'bfloat16', got {dtype!r}")
    raise InvalidOptionError(problem, subject=f"config key '{key}'", suggestion=f"{key} = 'bfloat16', or remove it")


def _flag(key: str, value: Any) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise InvalidOptionError(f"expected True or False, got {value!r}", subject=f"config key '{key}'",
                                 suggestion=f"{key} = True")
    return value


def step_compute(values: Dict[str, Any], backend: str, log=sys.stderr) -> StepCompute:
    """The `StepCompute` the config asks for on `backend` ("tensorflow" or "torch"); a notice on `log` for each
    of these keys that belongs to the other backend. Bad values raise `InvalidOptionError`."""
    other = "torch" if backend == "tensorflow" else "tensorflow"
    for key in (AMP_KEYS[other], JIT_KEYS[other]):
        if values.get(key) not in (None, False):
            mine = AMP_KEYS[backend] if key == AMP_KEYS[other] else JIT_KEYS[backend]
            print(f"notice: config key '{key}' is a {other} setting; it has no effect with backend '{backend}' "
                  f"(use '{mine}')", file=log)
    compute = StepCompute(_amp_dtype(AMP_KEYS[backend], values.get(AMP_KEYS[backend])),
                          _flag(JIT_KEYS[backend], values.get(JIT_KEYS[backend])))
    if backend == "tensorflow" and compute.amp_dtype and compute.jit:
        raise InvalidOptionError("XLA (tf_jit) bypasses the graph rewrite that makes tf_amp's bfloat16 steps",
                                 subject="config keys 'tf_amp' and 'tf_jit'", suggestion="set only one of them")
    return compute


# --- TensorFlow --------------------------------------------------------------------------------------------
def _bf16_call_options():
    """TF's per-call function options with grappler's oneDNN bfloat16 rewrite switched on (the process's other
    options kept)."""
    def edit(options):
        options.auto_mixed_precision_onednn_bfloat16 = 1  # RewriterConfig.ON
    return call_options_with(edit)


@contextlib.contextmanager
def _float32_log_softmax_lists():
    """LogSoftmax moved to the rewrite's float32 list while a bfloat16 step runs. TF has no option
    for this, only the environment variables TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_{DENYLIST_ADD,
    INFERLIST_REMOVE}, which grappler reads each time it rewrites a function (inside the call that first runs
    it). They are process-wide and read by every mixed-precision rewrite (float16 ones too), so they are set
    around our calls only and put back after: other functions of the process see the user's values."""
    saved = {}
    for name in ("DENYLIST_ADD", "INFERLIST_REMOVE"):
        var = f"TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_{name}"
        saved[var] = os.environ.get(var)
        present = [op for op in (saved[var] or "").split(",") if op]
        os.environ[var] = ",".join(present + [op for op in _FLOAT32_OPS.split(",") if op not in present])
    try:
        yield
    finally:
        for var, value in saved.items():
            if value is None:
                del os.environ[var]
            else:
                os.environ[var] = value


def _with_float_masks(fn: Callable) -> Callable:
    """`fn`, tracing its dropout masks as a float per entry: XLA's CPU code for the 16-bit masks is slow (see
    backends/tensorflow/keep_mask.py)."""
    from ..backends.tensorflow.keep_mask import float_masks

    def traced(*args):
        with float_masks():
            return fn(*args)
    return traced


def tf_step_function(fn: Callable, signature, compute: StepCompute) -> Callable:
    """`fn` as a `tf.function` with the open input signature `signature`, compiled with XLA if `compute.jit`;
    with `compute.amp_dtype`, a callable that runs it under the bfloat16 rewrite (its `.function` is the
    tf.function)."""
    import tensorflow as tf

    if compute.jit:
        fn = _with_float_masks(fn)
    # our emission is plain TF calls: autograph has nothing to convert, and skipping it traces faster
    function = tf.function(fn, input_signature=list(signature), autograph=False, jit_compile=compute.jit or None)
    if not compute.amp_dtype:
        return function
    options = _bf16_call_options()

    def call(*args):
        with calls_with(options), _float32_log_softmax_lists():
            return function(*args)
    call.function = function
    return call


# --- PyTorch -----------------------------------------------------------------------------------------------
def torch_step_scope(compute: StepCompute):
    """The context a PyTorch step's forward and losses run in: bfloat16 autocast on CPU, or nothing."""
    if not compute.amp_dtype:
        return contextlib.nullcontext()
    import torch

    return torch.autocast("cpu", dtype=torch.bfloat16)


def torch_step_losses(model, compute: StepCompute) -> Callable:
    """`model.step_losses`, compiled by `torch.compile` if `compute.jit`."""
    if not compute.jit:
        return model.step_losses
    import torch

    return torch.compile(model.step_losses, dynamic=False)
