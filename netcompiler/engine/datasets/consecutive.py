"""Corpora one after another (the files of an HDFDataset, the sub-datasets of a CombinedDataset): which part a
corpus index falls in, and its index within that part."""

from __future__ import annotations

from typing import Sequence, Tuple

import numpy as np


class ConsecutiveParts:
    """Parts of the given sizes laid end to end; corpus index -> (position of the part, index within it). Empty
    parts hold no index: an index goes to the non-empty part that starts there."""

    def __init__(self, sizes: Sequence[int]):
        self._starts = np.cumsum([0] + [int(size) for size in sizes])

    @property
    def total(self) -> int:
        """How many indices all parts hold together."""
        return int(self._starts[-1])

    def start(self, position: int) -> int:
        """The corpus index of the first entry of part `position`."""
        return int(self._starts[position])

    def locate(self, index: int) -> Tuple[int, int]:
        """(position of the part holding corpus index `index`, the index within that part)."""
        if not 0 <= index < self.total:
            raise IndexError(f"corpus index {index} is outside the {self.total} sequences of the parts")
        position = int(np.searchsorted(self._starts, index, side="right")) - 1
        return position, int(index) - int(self._starts[position])
