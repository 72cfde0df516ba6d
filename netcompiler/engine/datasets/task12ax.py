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
from netcompiler.engine.datasets.mt19937 import first_words
from netcompiler.engine.datasets.raw_draws import RawDraws, coin_of_words

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
BLOCK_WORDS = 400  # raw words per sequence for block generation: the longest sequences use ~380


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

    BLOCK = 1024  # sequences generated at once (see GeneratedDataset)

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

    def _generate_block(self, corpus_indices: np.ndarray):
        words = first_words(self._content_seed_now, corpus_indices, BLOCK_WORDS)
        symbols, lengths, complete = symbols_of_words(words)
        for row in np.flatnonzero(~complete):  # draws past the words fetched (about 1 in 10**4): the scalar way
            draws = RawDraws(self._rng(int(corpus_indices[row])))
            length = draws.randint(_MIN_LEN, _MAX_LEN_EXCLUSIVE)
            lengths[row] = length
            symbols[row] = 0  # the padding must hold valid symbols (see _generate_block)
            symbols[row, :length] = draw_12ax_symbols(draws, length)
        one_hot, targets = _one_hot_rows(symbols), targets_of_rows(symbols)
        sequences = [{"data": one_hot[row, :length], "classes": targets[row, :length]}
                     for row, length in enumerate(lengths.tolist())]
        return sequences, {"data": one_hot, "classes": targets}


# ---------------------------------------------------------------------------
# A block of sequences at once (GeneratedDataset's bulk path): the same draws as draw_12ax_symbols, read off
# every sequence's raw words (mt19937.first_words) in lockstep, one coin of every sequence per step.

_NOISE_MASK, _NOISE_SPAN = 15, len(INPUT_SYMBOLS) - 1
_LENGTH_MASK, _LENGTH_SPAN = 127, _MAX_LEN_EXCLUSIVE - _MIN_LEN - 1
_START_SYMBOL = np.array([-1, 0, 1])  # start choice -> symbol ("" emits none)
# The lockstep of symbols_of_words, per code = 2 * phase + hit (phase 0: digit coin, 1: pair coin, 2: noise coin;
# hit: the coin is below the phase's threshold): words the position advances by (code 5, a noise symbol: to the
# word after the accepted symbol), and the next phase (a missed noise coin ends the segment: back to the digit).
_THRESHOLD = np.array([0.5, 0.9, 0.5])
_STEP = np.array([2, 3, 2, 3, 2, 0])
_NEXT_PHASE = np.array([1, 1, 2, 2, 0, 2])


def _next_accepted(time_major: np.ndarray, mask: int, span: int) -> np.ndarray:
    """[W + 1, n] int64 from raw words [W, n]: per position k of row r, the flat index (k' * n + r) of the first
    position k' >= k whose word masked with `mask` is <= span (k' = W if none)."""
    width, n = time_major.shape
    where = np.empty((width + 1, n), dtype=np.int64)
    where[width] = width
    # k where accepted, W where not: max(k, W * rejected) (a select with a broadcast operand is ~5x slower)
    np.multiply((time_major & mask) > span, width, out=where[:width], dtype=np.int64)
    np.maximum(where[:width], np.arange(width)[:, None], out=where[:width])
    for k in range(width - 1, -1, -1):  # the running minimum from the end, a row at a time (ufunc.accumulate
        np.minimum(where[k], where[k + 1], out=where[k])  # along the rows is ~3x slower)
    where *= n
    where += np.arange(n)
    return where


def _first_accepted(masked: np.ndarray, span: int, start: np.ndarray) -> np.ndarray:
    """Per row, the first position >= start[row] whose masked word is <= span (W if none)."""
    columns = np.arange(masked.shape[1])
    accepted = (masked <= span) & (columns >= start[:, None])
    return np.where(accepted.any(axis=1), accepted.argmax(axis=1), masked.shape[1])


def symbols_of_words(words: np.ndarray):
    """(symbols [n, 99] int8, lengths [n], complete [n] bool) of the 12AX inputs drawn from raw words [n, W]: row r
    as `draw_12ax_symbols` draws from those words (length first). Rows whose draws need more than W words are
    not complete (their symbols are not valid): draw them the scalar way."""
    n, width = words.shape
    rows = np.arange(n)
    head = np.asarray(words[:, :64], dtype=np.int64)  # length and start choice: longer rejection runs -> incomplete
    first = _first_accepted(head & _LENGTH_MASK, _LENGTH_SPAN, np.zeros(n, dtype=np.int64))
    complete = first < head.shape[1]
    lengths = _MIN_LEN + (head[rows, np.minimum(first, head.shape[1] - 1)] & _LENGTH_MASK)
    start = _first_accepted(head & 3, 2, first + 1)
    complete &= start < min(head.shape[1], width - 3)  # the first coin and the choice after it are in the words
    start = np.minimum(start, head.shape[1] - 1)
    start_symbol = _START_SYMBOL[head[rows, start] & 3]
    # symbols go to flat slots of [n, columns]: a draw that emits nothing writes its would-be symbol to the next
    # slot, which the next symbol overwrites (so the padding holds valid symbols); the last segment can run past
    # the longest length by its noise, at most a symbol per 3 words
    columns = _MAX_LEN_EXCLUSIVE + width // 3 + 4
    symbols = np.zeros((n, columns), dtype=np.int8)
    symbols[:, 0] = np.maximum(start_symbol, 0)
    flat_symbols = symbols.ravel()
    time_major = np.zeros((width + 1, n), dtype=words.dtype)  # word k of row r at k * n + r; row W: the sentinel's
    time_major[:width] = words.T
    flat_words = time_major.ravel()
    noise_next = _next_accepted(time_major[:width], _NOISE_MASK, _NOISE_SPAN).ravel()
    rows = rows[complete]
    at = (start[complete] + 1) * n + rows  # the flat index of the row's next word
    slot = rows * columns + (start_symbol[complete] >= 0)
    end = rows * columns + lengths[complete]
    phase = np.zeros(len(rows), dtype=np.int64)  # 0: digit coin, 1: pair coin, 2: noise coin
    step_after_choice = (_STEP - 2) * n  # the words a step advances by, from the word after the coin
    last = (width - 2) * n  # from here on, a coin or the choice after it is past the words
    while len(rows):
        coin = coin_of_words(flat_words[at], flat_words[at + n])  # RawDraws.uniform of the words at k, k + 1
        hit = coin < _THRESHOLD[phase]
        code = 2 * phase + hit  # (phase, hit) -> what happens, see the tables
        at += 2 * n
        choice = flat_words[at] & 1
        noise_at = noise_next[at]
        noisy = code == 5
        flat_symbols[slot] = np.where(noisy, flat_words[noise_at] & _NOISE_MASK, choice + 3 * phase)
        slot += hit
        flat_symbols[slot] = choice + 6  # the second symbol of a pair
        slot += code == 3
        at = np.where(noisy, noise_at + n, at + step_after_choice[code])
        phase = _NEXT_PHASE[code]
        done = (code == 4) & (slot >= end)
        short = (at >= last) & ~done  # would read past the words (a noise run without a symbol gets there too)
        stop = short | done
        if stop.any():
            complete[rows[short]] = False
            keep = ~stop
            rows, at, phase, slot, end = rows[keep], at[keep], phase[keep], slot[keep], end[keep]
    return symbols[:, :_MAX_LEN_EXCLUSIVE - 1], lengths, complete


def _one_hot_rows(symbols: np.ndarray) -> np.ndarray:
    """_ONE_HOT[symbols] for symbols [n, T] as one scatter of ones into zeros (a quarter of the gather's time)."""
    size = len(INPUT_SYMBOLS)
    one_hot = np.zeros(symbols.size * size, dtype=np.float32)
    one_hot[np.arange(0, symbols.size * size, size) + symbols.ravel()] = 1.0
    return one_hot.reshape(symbols.shape + (size,))


def targets_of_rows(symbols: np.ndarray) -> np.ndarray:
    """`targets_12ax` of every row of symbols [n, T] at once (int32 [n, T])."""
    n, width = symbols.shape
    columns = np.arange(width)

    def last_before(mask: np.ndarray) -> np.ndarray:  # per frame: the symbol of the last frame < t in mask, else -1
        at = np.maximum.accumulate(np.where(mask, columns, -1), axis=1)
        before = np.full((n, width), -1, dtype=np.int64)
        before[:, 1:] = at[:, :-1]
        return np.where(before >= 0, np.take_along_axis(symbols, np.maximum(before, 0), axis=1), -1)

    digit = last_before(symbols <= 1)
    letter = last_before((symbols == 3) | (symbols == 4) | (symbols == 6) | (symbols == 7))  # X/Y reset the letter
    targets = ((symbols == 6) & (digit == 0) & (letter == 3)) | ((symbols == 7) & (digit == 1) & (letter == 4))
    return targets.astype(np.int32)
