"""RETURNN's ``dynamic_learning_rate``: a learning rate changed at every training step, within the epoch's rate.

Two forms, as in RETURNN:

* a function ``dynamic_learning_rate(*, network, global_train_step, learning_rate, **kwargs)`` returning the
  rate of the step (e.g. Noam warm-up). It is called before every training step with ``learning_rate`` = the
  epoch's rate (from the learning-rate control), ``global_train_step`` = the number of updates made so far over
  the whole training (0 in the first step; it continues after a resume, being part of the checkpoint),
  ``network`` = netcompiler's model (the compiled network), and ``epoch``. What it returns (a number, or a
  scalar TensorFlow/NumPy/PyTorch value) is the rate of that step. RETURNN requires ``**kwargs`` (new arguments
  may be passed later): so does netcompiler.
* a dict ``{"interval": N, "decay": d}`` (RETURNN's TensorFlow cyclic form): the rate is
  ``learning_rate * d ** (global_train_step % N)``.

Departures from RETURNN: RETURNN's TensorFlow backend passes ``global_train_step`` as a tensor and builds the
rate into the graph; here the function is called in Python with an int (TensorFlow ops on it still work, the
result is read as a number). RETURNN's PyTorch backend refuses a ``network`` argument and passes
``epoch_continuous``; here ``network`` is passed on both backends and ``epoch_continuous`` is not (a function
that requires it is refused before training). With ``accum_grad_multiple_step`` the step count is the number of
applied updates, and the rate set before each batch is the one the next update uses.
"""

from __future__ import annotations

import inspect
import math
from typing import Any, Callable, Optional

from ..errors import InvalidOptionError
from ..limits import is_int, is_number

KEY = "dynamic_learning_rate"
PASSED = ("network", "global_train_step", "learning_rate", "epoch")
"""The keyword arguments the function is called with."""


def _error(message: str, suggestion: str) -> InvalidOptionError:
    return InvalidOptionError(message, subject=f"config key '{KEY}'", option=KEY, suggestion=suggestion)


def _number(value: Any, what: str) -> float:
    """A Python float from a number or a scalar tensor/array (NaN, inf and negative rates are errors)."""
    try:
        if hasattr(value, "numpy"):
            value = value.numpy()
        if hasattr(value, "item"):
            value = value.item()
        number = float(value)
    except (TypeError, ValueError):
        raise _error(f"{what} returned {value!r}, expected a number (the learning rate of the step)",
                     "return a float, e.g. learning_rate * min(1.0, (global_train_step + 1) / 1000)") from None
    if not math.isfinite(number) or number < 0:
        raise _error(f"{what} returned {number!r}, expected a finite learning rate >= 0",
                     "check the function for a division by zero or a negative step")
    return number


class DynamicLearningRate:
    """The config's per-step rule: `rate(global_train_step, learning_rate, epoch)` gives the step's rate."""

    def __init__(self, setting: Any, network: Any = None):
        self.network = network
        if callable(setting):
            self._check_signature(setting)
            self.function: Optional[Callable[..., Any]] = setting
            self.interval = self.decay = None
        elif isinstance(setting, dict):
            self.function = None
            self.interval, self.decay = self._check_cyclic(setting)
        else:
            raise _error(f"expected a function or a dict {{'interval': N, 'decay': d}}, got {setting!r}",
                         "define def dynamic_learning_rate(*, global_train_step, learning_rate, **kwargs): ...")

    @staticmethod
    def _check_signature(function: Callable[..., Any]) -> None:
        try:
            parameters = inspect.signature(function).parameters.values()
        except (TypeError, ValueError):
            return  # a builtin or C function: it is called and its result checked
        if not any(p.kind == inspect.Parameter.VAR_KEYWORD for p in parameters):
            raise _error("the function has no **kwargs (RETURNN requires it: further arguments may be passed)",
                         "add **kwargs to its parameters")
        for p in parameters:
            if p.kind == inspect.Parameter.VAR_POSITIONAL or p.kind == inspect.Parameter.VAR_KEYWORD:
                continue
            if p.name not in PASSED and p.default is inspect.Parameter.empty:
                raise _error(f"the function requires the argument {p.name!r}, which netcompiler does not pass "
                             f"(it passes {', '.join(PASSED)})",
                             f"give {p.name!r} a default or compute it from global_train_step")
            if p.name in PASSED and p.kind == inspect.Parameter.POSITIONAL_ONLY:
                raise _error(f"argument {p.name!r} is positional-only; it is passed by keyword",
                             "declare the arguments after '*' as RETURNN's examples do")

    @staticmethod
    def _check_cyclic(setting: dict):
        unknown = sorted(set(setting) - {"interval", "decay"})
        missing = [k for k in ("interval", "decay") if k not in setting]
        if unknown or missing:
            raise _error(f"the dict form takes exactly 'interval' and 'decay' (unknown: {unknown or 'none'}, "
                         f"missing: {missing or 'none'})", "write {'interval': 1000, 'decay': 0.999}")
        interval, decay = setting["interval"], setting["decay"]
        if not is_int(interval) or interval < 1:
            raise _error(f"'interval' must be a whole number >= 1, got {interval!r}", "e.g. 'interval': 1000")
        if not is_number(decay) or not math.isfinite(decay) or decay < 0:
            raise _error(f"'decay' must be a number >= 0, got {decay!r}", "e.g. 'decay': 0.999")
        return int(interval), float(decay)

    def rate(self, global_train_step: int, learning_rate: float, epoch: int) -> float:
        """The learning rate of the step after `global_train_step` updates, in an epoch of rate `learning_rate`."""
        if self.function is None:
            return learning_rate * self.decay ** (global_train_step % self.interval)
        value = self.function(network=self.network, global_train_step=global_train_step,
                              learning_rate=learning_rate, epoch=epoch)
        return _number(value, f"dynamic_learning_rate(global_train_step={global_train_step})")


def per_step_learning_rate(setting: Any, network: Any, optimizer: Any, set_learning_rate: Callable[[Any, float], None]):
    """The hook a step runner calls before each training step (`EpochLoop.before_train_step`), or None without
    the setting: it sets the optimizer's rate (TensorFlow: its learning-rate variable; PyTorch: every parameter
    group, both times their learning_rate_multiplier) to the step's rate."""
    if setting is None:
        return None
    rule = DynamicLearningRate(setting, network)

    def before_train_step(global_train_step: int, epoch: int, epoch_learning_rate: float) -> None:
        set_learning_rate(optimizer, rule.rate(global_train_step, epoch_learning_rate, epoch))

    return before_train_step
