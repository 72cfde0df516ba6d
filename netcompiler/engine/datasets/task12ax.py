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
_DIGITS = 2  # "1", "2": indices 0, 1
_PAIRS = ((3, 6), (4, 7))  # "AX", "BY"
_MIN_LEN, _MAX_LEN_EXCLUSIVE = 10, 100


def draw_12ax_symbols(draws: RawDraws, length: int) -> List[int]:
    """A random input sequence of `length` symbol indices.

    Repeatedly: maybe a digit (p=.5), probably a target-like pair AX/BY (p=.9),
    then a geometric number of arbitrary symbols as noise. This makes "R"
    targets frequent enough to learn from. Each choice is one `randint(len(options))`,
    each coin one `uniform()`, in RETURNN's order (computed from raw words: `RawDraws`).
    """
    uniform, randint = draws.uniform, draws.randint
    symbols = list(_START_CHOICES[randint(0, len(_START_CHOICES))])
    while len(symbols) < length:
        if uniform() < 0.5:
            symbols.append(randint(0, _DIGITS))
        if uniform() < 0.9:
            symbols += _PAIRS[randint(0, len(_PAIRS))]
        while uniform() < 0.5:
            symbols.append(randint(0, len(INPUT_SYMBOLS)))
    return symbols[:length]


def targets_12ax(symbols: Sequence[int]) -> np.ndarray:
    """The 12AX target (0 = L, 1 = R) of every frame of an input sequence."""
    targets = np.zeros(len(symbols), dtype=np.int32)
    digit, letter = None, None
    for t, index in enumerate(symbols):
        symbol = INPUT_SYMBOLS[index]
        if symbol in "12":
            digit = symbol
        elif symbol in "AB":
            letter = symbol
        elif symbol in "XY":
            targets[t] = (digit, letter, symbol) in TARGET_TRIPLES
            letter = None
    return targets


@register
class Task12AXDataset(GeneratedDataset):
    """The 12AX memory task: "data" one-hot symbols (dim 9), "classes" L/R (2 classes)."""

    def __init__(self, name: str = "dataset", **opts):
        super().__init__(name, **opts)
        self.labels = {"data": list(INPUT_SYMBOLS), "classes": list(OUTPUT_SYMBOLS)}

    def data_spec(self) -> Dict[str, DataSpec]:
        return {
            "data": DataSpec.for_sequences((len(INPUT_SYMBOLS),), "float32"),
            "classes": DataSpec.for_sequences((), "int32", dim=len(OUTPUT_SYMBOLS)),
        }

    def _generate(self, corpus_index: int, rng: np.random.RandomState) -> Dict[str, np.ndarray]:
        draws = RawDraws(rng)
        symbols = draw_12ax_symbols(draws, draws.randint(_MIN_LEN, _MAX_LEN_EXCLUSIVE))
        one_hot = np.eye(len(INPUT_SYMBOLS), dtype=np.float32)[symbols]
        return {"data": one_hot, "classes": targets_12ax(symbols)}

    def _generate_lengths(self, corpus_index: int, rng: np.random.RandomState) -> Dict[str, int]:
        length = int(rng.randint(_MIN_LEN, _MAX_LEN_EXCLUSIVE))  # the first draw of _generate
        return {"data": length, "classes": length}
