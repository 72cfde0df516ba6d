"""Deterministic inputs and parameter values for the numeric cases of the RETURNN corpus.

Pure NumPy, used by `tools/record_returnn_templates.py` (in the scratch RETURNN venv), which writes the values
it fed into the fixture: `tests/test_returnn_fidelity.py` feeds netcompiler those recorded values, so both see
bit-identical inputs and parameters. A value depends only on a name and a shape (no global random state), so
re-recording gives the same fixture.
"""

from __future__ import annotations

import zlib
from typing import Dict, List, Sequence

import numpy as np

BATCH = 3
"""Sequences per numeric batch."""
LENGTHS = (5, 3, 4)
"""Ragged lengths of every dynamic axis of the inputs (the longest first is not required by either side)."""
GARBAGE = 7.5
"""What padded frames of dense inputs hold: a real comparison must not read them."""


def _rng(name: str) -> np.random.RandomState:
    return np.random.RandomState(zlib.crc32(name.encode("utf8")) & 0x7FFFFFFF)


def param_value(name: str, shape: Sequence[int], dtype: str = "float32") -> np.ndarray:
    """The value a parameter gets in a numeric case: `name` is "<layer>/<param key>"."""
    fan = max(1, int(np.prod(shape[:-1])) if len(shape) > 1 else 1)
    value = _rng("param:" + name).uniform(-1.0, 1.0, size=tuple(shape)) / np.sqrt(fan)
    return value.astype(dtype)


def input_value(key: str, shape: Sequence[int], dtype: str, sparse_dim: int = None) -> np.ndarray:
    """A batch for extern data `key` of the given full (padded) shape."""
    rng = _rng("input:" + key)
    if sparse_dim is not None or dtype.startswith("int"):
        high = sparse_dim if sparse_dim else 5
        return rng.randint(0, high, size=tuple(shape)).astype(dtype)
    return rng.uniform(-1.0, 1.0, size=tuple(shape)).astype(dtype)


def lengths_for(batch: int = BATCH) -> np.ndarray:
    return np.asarray(LENGTHS[:batch], dtype=np.int32)


def fill_padding(value: np.ndarray, dynamic_axes: List[int], batch_axis: int, lengths: np.ndarray,
                 garbage) -> np.ndarray:
    """`value` with every frame beyond `lengths` on any of `dynamic_axes` set to `garbage`."""
    value = np.array(value)
    for axis in dynamic_axes:
        for b, n in enumerate(lengths):
            index: Dict[int, object] = {batch_axis: b, axis: slice(int(n), None)}
            value[tuple(index.get(a, slice(None)) for a in range(value.ndim))] = garbage
    return value
