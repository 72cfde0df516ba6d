"""RandomState's scalar draws computed in Python from its raw 32-bit words.

A generated sequence of the 12AX task makes a few hundred scalar draws
(`rng.uniform()`, `rng.randint(n)`), each a NumPy call of 1-1.5 us. `RawDraws` fetches the
generator's raw words in blocks (one NumPy call) and computes the same values from them
the way NumPy's legacy RandomState does:

* `randint(low, high)` (a range below 2**32): `span = high - low - 1`; no word if span is 0;
  else words masked to the smallest all-ones mask >= span until one is <= span (rejection);
* `uniform()` (on [0, 1)): two words a, b -> ((a >> 5) * 2**26 + (b >> 6)) / 2**53.

The raw words are `rng.randint(0, 2**32, size=n, dtype=uint64)` (the full 32-bit range draws
one word per value, unmasked), so the values equal the scalar calls' one for one. The
RandomState is left further on than the scalar calls would leave it (a whole block is
fetched): use it for nothing else afterwards. `coins` holds the `uniform()` starting at
every word, computed with NumPy per block. tests/test_raw_draws.py compares with NumPy.
"""

from __future__ import annotations

import numpy as np

_WORD_RANGE = 1 << 32
_DOUBLE_SCALE = 1.0 / 9007199254740992.0  # 2**-53


def coin_of_words(first, second):
    """`rng.uniform()`'s double from two consecutive raw words (ints, or uint64 arrays of them)."""
    return ((first >> 5) * 67108864.0 + (second >> 6)) * _DOUBLE_SCALE


class RawDraws:
    """Scalar draws of a RandomState from blocks of its raw words (see the module docstring)."""

    BLOCK = 256

    def __init__(self, rng: np.random.RandomState):
        self.rng = rng
        self.words: list = []  # the raw words fetched so far
        self.coins: list = []  # coins[j]: the uniform() made of words j and j + 1 (None for the last word fetched: comparing it raises)
        self.pos = 0  # the next word to draw

    def fetch(self) -> None:
        """Appends the next block of raw words (and their `coins`) to the ones fetched so far. Callers may index
        `words`/`coins` themselves from `pos` (a loop without a call per draw; see `task12ax`) and call this
        when they run past the end."""
        block = self.rng.randint(0, _WORD_RANGE, size=self.BLOCK, dtype=np.uint64)
        previous = self.words[-1:]  # its coin needs the block's first word
        tail = np.concatenate([np.array(previous, dtype=np.uint64), block])
        coins = coin_of_words(tail[:-1], tail[1:]).tolist()
        if previous:
            self.coins[-1] = coins.pop(0)
        self.coins += coins + [None]
        self.words += block.tolist()

    def word(self) -> int:
        """The generator's next raw 32-bit word."""
        if self.pos == len(self.words):
            self.fetch()
        self.pos += 1
        return self.words[self.pos - 1]

    def randint(self, low: int, high: int) -> int:
        """What `rng.randint(low, high)` returns, for high - low <= 2**32."""
        span = high - low - 1
        if span == 0:
            return low
        mask = (1 << span.bit_length()) - 1
        value = self.word() & mask
        while value > span:
            value = self.word() & mask
        return low + value

    def uniform(self) -> float:
        """What `rng.uniform()` returns."""
        return coin_of_words(self.word(), self.word())
