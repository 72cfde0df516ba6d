"""The 12AX memory task, as RETURNN's Task12AXDataset defines it.

Inputs are symbols from "123ABCXYZ" (one-hot, dim 9); the target per frame is
"R" (1) when the frame is an X that completes 1-A-X or a Y that completes
2-B-Y, else "L" (0). The digit is the last 1 or 2 seen so far (3 does not
change it); the letter is the last A or B seen since the previous X or Y
(C and Z change nothing). Every X or Y ends the inner pair.

Sequence lengths are uniform in [10, 99]. The random draws follow RETURNN's
generator call for call, so the same seed gives the same sequences as RETURNN.
"""

from __future__ import annotations

from typing import Dict, List, Sequence

import numpy as np

from netcompiler.engine.datasets.base import DataSpec, GeneratedDataset, register
from netcompiler.engine.datasets.raw_draws import RawDraws

INPUT_SYMBOLS = "123ABCXYZ"
OUTPUT_SYMBOLS = "LR"
TARGET_TRIPLES = {("1", "A", "X"), ("2", "B", "Y")}

# Building blocks of a generated input string, as symbol indices into INPUT_SYMBOLS.
_START_CHOICES = ((), (0,), (1,))  # "", "1", "2"
_PAIRS = ((3, 6), (4, 7))  # "AX", "BY"
_MIN_LEN, _MAX_LEN_EXCLUSIVE = 10, 100
_DIGIT_INDICES = {INPUT_SYMBOLS.index("1"), INPUT_SYMBOLS.index("2")}
_LETTER_INDICES = {INPUT_SYMBOLS.index("A"), INPUT_SYMBOLS.index("B")}
_TARGET_OF_END = {INPUT_SYMBOLS.index(end): (INPUT_SYMBOLS.index(digit), INPUT_SYMBOLS.index(letter))
                  for digit, letter, end in TARGET_TRIPLES}  # X -> (1, A), Y -> (2, B)
_ONE_HOT = np.eye(len(INPUT_SYMBOLS), dtype=np.float32)


def draw_12ax_symbols(draws: RawDraws, length: int) -> List[int]:
    """A random input sequence of `length` symbol indices.

    Repeatedly: maybe a digit (p=.5), probably a target-like pair AX/BY (p=.9),
    then a geometric number of arbitrary symbols as noise. This makes "R"
    targets frequent enough to learn from. Each choice is one `randint(len(options))`,
    each coin one `uniform()`, in RETURNN's order, read off the raw words (`RawDraws`).
    """
    while True:
        try:
            symbols, draws.pos = _symbols_from_words(draws.words, draws.coins, draws.pos, length)
            return symbols
        except (IndexError, TypeError):  # ran past the words fetched (the last coin is None): fetch more and draw again from the same start
            draws.fetch()


def _symbols_from_words(words: List[int], coins: List[float], i: int, length: int):
    """(symbols, next word) of `draw_12ax_symbols` from word i on: a loop without a call per draw (it makes
    ~200 draws per sequence). A choice among n options is the first word masked to the smallest all-ones
    mask >= n - 1 that is < n (RandomState's rejection); a coin is coins[i], two words."""
    while words[i] & 3 > 2:  # one of 3 start choices: mask 3
        i += 1
    symbols = list(_START_CHOICES[words[i] & 3])
    i += 1
    while len(symbols) < length:
        if coins[i] < 0.5:
            symbols.append(words[i + 2] & 1)  # a digit: one of 2, mask 1, never rejected
            i += 3
        else:
            i += 2
        if coins[i] < 0.9:
            symbols += _PAIRS[words[i + 2] & 1]  # a pair: one of 2
            i += 3
        else:
            i += 2
        while coins[i] < 0.5:
            i += 2
            while words[i] & 15 > 8:  # any of the 9 symbols: mask 15
                i += 1
            symbols.append(words[i] & 15)
            i += 1
        i += 2  # the coin that ended the noise
    return symbols[:length], i


def targets_12ax(symbols: Sequence[int]) -> np.ndarray:
    """The 12AX target (0 = L, 1 = R) of every frame of an input sequence (symbol indices)."""
    targets = [0] * len(symbols)
    digit = letter = None
    for t, index in enumerate(symbols):
        if index in _DIGIT_INDICES:
            digit = index
        elif index in _LETTER_INDICES:
            letter = index
        elif index in _TARGET_OF_END:
            targets[t] = int(_TARGET_OF_END[index] == (digit, letter))
            letter = None
    return np.array(targets, dtype=np.int32)


@register
class Task12AXDataset(GeneratedDataset):
    """The 12AX memory task: "data" one-hot symbols (dim 9), "classes" L/R (2 classes)."""

    def __init__(self, name: str = "dataset", **opts):
        super().__init__(name, **opts)
        self.labels = {"data": list(INPUT_SYMBOLS), "classes": list(OUTPUT_SYMBOLS)}
        self._spec = {  # built once: it is asked for several times per sequence
            "data": DataSpec.for_sequences((len(INPUT_SYMBOLS),), "float32"),
            "classes": DataSpec.for_sequences((), "int32", dim=len(OUTPUT_SYMBOLS)),
        }

    def data_spec(self) -> Dict[str, DataSpec]:
        return dict(self._spec)

    def _generate(self, corpus_index: int, rng: np.random.RandomState) -> Dict[str, np.ndarray]:
        draws = RawDraws(rng)
        symbols = draw_12ax_symbols(draws, draws.randint(_MIN_LEN, _MAX_LEN_EXCLUSIVE))
        one_hot = _ONE_HOT[symbols]
        return {"data": one_hot, "classes": targets_12ax(symbols)}

    def _generate_lengths(self, corpus_index: int, rng: np.random.RandomState) -> Dict[str, int]:
        length = int(rng.randint(_MIN_LEN, _MAX_LEN_EXCLUSIVE))  # the first draw of _generate
        return {"data": length, "classes": length}
