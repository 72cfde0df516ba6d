"""The first raw 32-bit words of many RandomStates at once, computed with array operations across them.

A generated dataset seeds one `np.random.RandomState([seed, corpus_index])` per sequence (RETURNN's way); seeding
costs ~10-20 us and fetching words ~15 us per call, more than drawing a 12AX sequence from the words. Here
MT19937 (the generator behind RandomState) runs on a [sequences, 624] state array: the seeding recurrence
(`init_by_array`, 1247 steps, each one operation on a column across all sequences), one state update ("twist")
and the output tempering. Row r of `first_words(seed, indices)` equals
`RandomState([seed, indices[r]]).randint(0, 2**32, size=624, dtype=np.uint64)` (tests/test_block_generation.py compares),
i.e. the words `RawDraws` reads; later words need another twist: callers fall back to a RandomState for the rare
sequence that uses more.
"""

from __future__ import annotations

import numpy as np

STATE_WORDS = 624  # N: words per state, and words per twist
_SHIFT = 397  # M
_MATRIX_A = np.uint32(0x9908B0DF)
_UPPER, _LOWER = np.uint32(0x80000000), np.uint32(0x7FFFFFFF)


def _genrand_state(seed: int) -> np.ndarray:
    """init_genrand(seed): the state every init_by_array starts from (the same for all keys)."""
    state = [seed & 0xFFFFFFFF]
    for i in range(1, STATE_WORDS):
        previous = state[-1]
        state.append((1812433253 * (previous ^ (previous >> 30)) + i) & 0xFFFFFFFF)
    return np.array(state, dtype=np.uint32)


_START = _genrand_state(19650218)


def _seeded_states(keys: np.ndarray) -> np.ndarray:
    """MT19937's init_by_array for each row of `keys` ([n, key length] uint32): states as [624, n] uint32 (a row
    per state word, so that each step of the recurrence is one operation on a contiguous row)."""
    n, key_length = keys.shape
    mt = np.repeat(_START[:, None], n, axis=1)
    addends = [keys[:, j] + np.uint32(j) for j in range(key_length)]  # init_key[j] + j (mod 2**32)
    work = np.empty(n, dtype=np.uint32)
    shift, xor, multiply, add, subtract = np.right_shift, np.bitwise_xor, np.multiply, np.add, np.subtract
    thirty, first_factor, second_factor = np.uint32(30), np.uint32(1664525), np.uint32(1566083941)
    i, j = 1, 0
    for _ in range(max(STATE_WORDS, key_length)):  # mt[i] = (mt[i] ^ (f(mt[i - 1]) * 1664525)) + key[j] + j
        previous, current = mt[i - 1], mt[i]
        shift(previous, thirty, work)
        xor(work, previous, work)
        multiply(work, first_factor, work)
        xor(work, current, work)
        add(work, addends[j], current)
        i, j = i + 1, (j + 1) % key_length
        if i >= STATE_WORDS:
            mt[0] = mt[STATE_WORDS - 1]
            i = 1
    for _ in range(STATE_WORDS - 1):  # mt[i] = (mt[i] ^ (f(mt[i - 1]) * 1566083941)) - i
        previous, current = mt[i - 1], mt[i]
        shift(previous, thirty, work)
        xor(work, previous, work)
        multiply(work, second_factor, work)
        xor(work, current, work)
        subtract(work, np.uint32(i), current)
        i += 1
        if i >= STATE_WORDS:
            mt[0] = mt[STATE_WORDS - 1]
            i = 1
    mt[0] = _UPPER
    return mt


def _twist(mt: np.ndarray, rows: int = STATE_WORDS) -> np.ndarray:
    """The first `rows` words of the next state of [624, n] states (MT19937's generation step), in four slices
    whose inputs are ready (a slice reads the new words of the one before it)."""
    new = np.empty((rows,) + mt.shape[1:], dtype=mt.dtype)
    n_minus_m = STATE_WORDS - _SHIFT  # 227
    one = np.uint32(1)

    def update(start: int, stop: int, following: np.ndarray, far: np.ndarray) -> None:
        stop = min(stop, rows)
        if start < stop:
            y = (mt[start:stop] & _UPPER) | (following[:stop - start] & _LOWER)
            new[start:stop] = far[:stop - start] ^ (y >> one) ^ ((y & one) * _MATRIX_A)

    update(0, n_minus_m, mt[1:n_minus_m + 1], mt[_SHIFT:])
    update(n_minus_m, 2 * n_minus_m, mt[n_minus_m + 1:2 * n_minus_m + 1], new[:n_minus_m])
    update(2 * n_minus_m, STATE_WORDS - 1, mt[2 * n_minus_m + 1:], new[n_minus_m:_SHIFT - 1])
    update(STATE_WORDS - 1, STATE_WORDS, new[:1], new[_SHIFT - 1:_SHIFT])
    return new


def _temper(words: np.ndarray) -> np.ndarray:
    y = words ^ (words >> np.uint32(11))
    y ^= (y << np.uint32(7)) & np.uint32(0x9D2C5680)
    y ^= (y << np.uint32(15)) & np.uint32(0xEFC60000)
    return y ^ (y >> np.uint32(18))


def first_words(seed: int, indices: np.ndarray, count: int = STATE_WORDS) -> np.ndarray:
    """[len(indices), count] uint32 (count <= 624): the first raw words of RandomState([seed, index]) per index."""
    if not 0 < count <= STATE_WORDS:
        raise ValueError(f"count must be in [1, {STATE_WORDS}], got {count}")
    indices = np.asarray(indices, dtype=np.int64)
    keys = np.empty((len(indices), 2), dtype=np.uint32)
    keys[:, 0], keys[:, 1] = seed, indices
    if not len(indices):
        return np.zeros((0, count), dtype=np.uint32)
    return _temper(_twist(_seeded_states(keys), count)).T  # a view of the time-major words
