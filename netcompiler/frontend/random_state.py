"""The random state that parameter initialisation draws from: `set_random_seed` (RETURNN's name) restarts it, and
the random state of the model's backend (dropout masks, `rf.random`) where one is selected or running.

Initial values are drawn with NumPy, not by a framework, so one seed gives the same parameters on every backend
(a model built twice after `set_random_seed(s)` starts from the same numbers on PyTorch and on TensorFlow).
"""

from __future__ import annotations

import numpy as np

DEFAULT_SEED = 42
"""The seed before any `set_random_seed` (RETURNN's default `random_seed`)."""

_seed = DEFAULT_SEED
_generator = np.random.default_rng(DEFAULT_SEED)


def set_random_seed(seed: int) -> None:
    """Restarts the random states (see the module docstring) from `seed` (a non-negative int)."""
    global _seed, _generator
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"set_random_seed: the seed must be a non-negative int, not {seed!r}")
    _seed = int(seed)
    _generator = np.random.default_rng(_seed)
    from .backend_select import selected_backend
    from .run_ctx import current_run_ctx

    ctx = current_run_ctx()
    backend = ctx.backend if ctx is not None else selected_backend()
    if backend is not None:
        backend.set_random_seed_raw(_seed)


def get_random_seed() -> int:
    """The seed last given to `set_random_seed` (or the default)."""
    return _seed


def generator() -> np.random.Generator:
    """The generator initial values are drawn from (its state advances with every draw)."""
    return _generator
