"""RawDraws (scalar draws computed from raw words) against NumPy's own RandomState calls, and the 12AX
generator against the same generator written with RandomState's scalar calls (RETURNN's way)."""

import numpy as np
import pytest

from netcompiler.engine.datasets.raw_draws import RawDraws
from netcompiler.engine.datasets.task12ax import INPUT_SYMBOLS, draw_12ax_symbols


@pytest.mark.parametrize("seed", [0, 1, 12345])
def test_raw_draws_equal_randomstate_scalar_calls(seed):
    ranges = [(0, 1), (0, 2), (0, 3), (0, 9), (10, 100), (-5, 1000), (0, 2 ** 31), (0, 2 ** 32)]
    for index in range(40):
        reference, draws = np.random.RandomState([seed, index]), RawDraws(np.random.RandomState([seed, index]))
        for k in range(700):  # more than one block of words
            if k % 3 == 0:
                assert draws.uniform() == reference.uniform()
            else:
                low, high = ranges[k % len(ranges)]
                assert draws.randint(low, high) == reference.randint(low, high)


def _symbols_by_scalar_calls(rng, length):
    """The 12AX input string drawn with RandomState's own calls, one per choice (RETURNN's generator)."""
    def pick(options):
        return options[rng.randint(len(options))]

    text = pick(("", "1", "2"))
    while len(text) < length:
        if rng.uniform() < 0.5:
            text += pick(("1", "2"))
        if rng.uniform() < 0.9:
            text += pick(("AX", "BY"))
        while rng.uniform() < 0.5:
            text += pick(tuple(INPUT_SYMBOLS))
    return [INPUT_SYMBOLS.index(symbol) for symbol in text[:length]]


def test_12ax_symbols_equal_scalar_call_generator():
    for index in range(300):
        reference = np.random.RandomState([3, index])
        expected = _symbols_by_scalar_calls(reference, int(reference.randint(10, 100)))
        draws = RawDraws(np.random.RandomState([3, index]))
        assert draw_12ax_symbols(draws, draws.randint(10, 100)) == expected
