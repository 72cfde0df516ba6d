"""Generated sequence tasks of RETURNN's loop demos: CopyTaskDataset and TaskNumberBaseConvertDataset.

Both produce sparse label sequences for "data" and "classes" (int32 class
indices), the way RETURNN's datasets of the same names define them:

* CopyTaskDataset: "classes" equals "data", a uniform random label sequence.
  Its length range may grow with the epoch (`minlen_epoch_factor`,
  `maxlen_epoch_factor`), which makes the task harder epoch by epoch.
* TaskNumberBaseConvertDataset: "data" is a random number written in
  `input_base` (most significant digit first, leading zeros allowed), "classes"
  is the same number written in `output_base` (no leading zeros; 0 is "0").
  The two keys have different lengths.

Each sequence draws its length first, then its symbols one at a time, from the
sequence's own random generator (see GeneratedDataset).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from netcompiler.engine.datasets.base import DataSpec, GeneratedDataset, Option, positive, register

DIGIT_CHARS = "0123456789abcdefghijklmnopqrstuvwxyz"
MAX_COPY_SYMBOLS = 256


def _sparse_spec(num_classes: int) -> DataSpec:
    return DataSpec.for_sequences((), "int32", dim=num_classes)


def _at_most(limit: int) -> Any:
    def check(value: Any) -> Optional[str]:
        if value <= 0:
            return f"must be positive, got {value!r}"
        return None if value <= limit else f"must be at most {limit}, got {value!r}"
    return check


def _base_check(value: Any) -> Optional[str]:
    if 2 <= value <= len(DIGIT_CHARS):
        return None
    return f"must be in [2, {len(DIGIT_CHARS)}] (digits are '0'-'9', then 'a'-'z'), got {value!r}"


def _draw_symbols(rng: np.random.RandomState, length: int, num_symbols: int) -> np.ndarray:
    # One draw after the other: the same values as a Python loop over rng.randint(0, num_symbols).
    return rng.randint(0, num_symbols, size=length).astype(np.int32)


@register
class CopyTaskDataset(GeneratedDataset):
    """The copy task: "data" and "classes" are the same random sequence of `nsymbols` labels (both sparse).

    The length of a sequence in epoch `e` is uniform in [minlen', maxlen'] (inclusive)
    with minlen' = int(minlen + minlen_epoch_factor * e) and maxlen' likewise;
    0 < minlen' <= maxlen' must hold in every epoch the dataset is used in.
    """

    OPTIONS = {
        "nsymbols": Option((int,), required=True, check=_at_most(MAX_COPY_SYMBOLS), doc="number of labels"),
        "minlen": Option((int,), 0, doc="shortest length (before the epoch factor)"),
        "maxlen": Option((int,), 0, doc="longest length (before the epoch factor)"),
        "minlen_epoch_factor": Option((float,), 0.0, doc="minlen grows by this per epoch"),
        "maxlen_epoch_factor": Option((float,), 0.0, doc="maxlen grows by this per epoch"),
    }

    def __init__(self, name: str = "dataset", **opts: Any):
        super().__init__(name, **opts)
        self._lengths_now: Optional[Tuple[int, int]] = None
        if not self._grows_with_epoch():
            self.length_range(1)  # a fixed range is checked right away

    def _grows_with_epoch(self) -> bool:
        return bool(self.options["minlen_epoch_factor"] or self.options["maxlen_epoch_factor"])

    def length_range(self, epoch: int) -> Tuple[int, int]:
        """(shortest, longest) sequence length of `epoch`, both inclusive."""
        shortest = int(self.options["minlen"] + self.options["minlen_epoch_factor"] * epoch)
        longest = int(self.options["maxlen"] + self.options["maxlen_epoch_factor"] * epoch)
        if 0 < shortest <= longest:
            return shortest, longest
        where = f" in epoch {epoch}" if self._grows_with_epoch() else ""
        option = "minlen" if shortest <= 0 else "maxlen"
        raise self.option_error(
            option, f"gives lengths [{shortest}, {longest}]{where}; need 0 < minlen <= maxlen",
            suggestion="set 'minlen' >= 1 and 'maxlen' >= 'minlen' (or a 'maxlen_epoch_factor')")

    def data_spec(self) -> Dict[str, DataSpec]:
        spec = _sparse_spec(self.options["nsymbols"])
        return {"data": spec, "classes": spec}

    def _prepare_epoch(self, epoch: int) -> None:
        lengths = self.length_range(epoch)
        if lengths != self._lengths_now:
            self._lengths_now = lengths
            self._content_seed_now = None  # the cached sequences are of other lengths: drop them
        super()._prepare_epoch(epoch)

    def _draw_length(self, rng: np.random.RandomState) -> int:
        shortest, longest = self._lengths_now
        return int(rng.randint(shortest, longest + 1))

    def _generate(self, corpus_index: int, rng: np.random.RandomState) -> Dict[str, np.ndarray]:
        labels = _draw_symbols(rng, self._draw_length(rng), self.options["nsymbols"])
        return {"data": labels, "classes": labels.copy()}

    def _generate_lengths(self, corpus_index: int, rng: np.random.RandomState) -> Dict[str, int]:
        length = self._draw_length(rng)  # the first draw of _generate
        return {"data": length, "classes": length}


def digits_of(number: int, base: int) -> List[int]:
    """`number` >= 0 in `base`, most significant digit first; [0] for 0."""
    digits = []
    while number:
        number, digit = divmod(number, base)
        digits.append(digit)
    return digits[::-1] or [0]


def value_of(digits: Sequence[int], base: int) -> int:
    """The number that `digits` (most significant first) denote in `base`."""
    number = 0
    for digit in digits:
        number = number * base + int(digit)
    return number


@register
class TaskNumberBaseConvertDataset(GeneratedDataset):
    """Base conversion: "data" a random number's digits in `input_base`, "classes" its digits in `output_base`.

    The input has between `min_input_seq_len` and `max_input_seq_len` digits (uniform,
    inclusive); leading zeros may occur there but not in the output. Both keys are sparse,
    with dims `input_base` and `output_base`, and have different lengths.
    """

    OPTIONS = {
        "input_base": Option((int,), 8, check=_base_check),
        "output_base": Option((int,), 2, check=_base_check),
        "min_input_seq_len": Option((int,), 1, check=positive, doc="fewest input digits"),
        "max_input_seq_len": Option((int,), 8, check=positive, doc="most input digits"),
    }

    def __init__(self, name: str = "dataset", **opts: Any):
        super().__init__(name, **opts)
        if self.options["min_input_seq_len"] > self.options["max_input_seq_len"]:
            raise self.option_error(
                "max_input_seq_len",
                f"must be >= min_input_seq_len ({self.options['min_input_seq_len']}), "
                f"got {self.options['max_input_seq_len']}")
        self.labels = {"data": list(DIGIT_CHARS[:self.options["input_base"]]),
                       "classes": list(DIGIT_CHARS[:self.options["output_base"]])}

    def data_spec(self) -> Dict[str, DataSpec]:
        return {"data": _sparse_spec(self.options["input_base"]),
                "classes": _sparse_spec(self.options["output_base"])}

    def _generate(self, corpus_index: int, rng: np.random.RandomState) -> Dict[str, np.ndarray]:
        length = int(rng.randint(self.options["min_input_seq_len"], self.options["max_input_seq_len"] + 1))
        digits = _draw_symbols(rng, length, self.options["input_base"])
        number = value_of(digits, self.options["input_base"])
        converted = np.array(digits_of(number, self.options["output_base"]), dtype=np.int32)
        return {"data": digits, "classes": converted}
