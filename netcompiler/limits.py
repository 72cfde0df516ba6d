"""What emission can hold, checked at template time: integers and sizes fit int64, constants fit their dtype.

TensorFlow and PyTorch keep sizes and integer constants in 64 bits; a config value beyond that builds a
template fine (Python ints have no bound) and crashes only when the step is made. Pure Python, no framework.
Also the one "int but not bool" check for config values (`is_int`), which layers and engine share, and its
counterpart for real numbers (`is_number`).
"""

from __future__ import annotations

import numbers
from typing import Any, List, Optional, Tuple

INT64_MIN, INT64_MAX = -2 ** 63, 2 ** 63 - 1

INT_DTYPE_RANGES = {
    "int8": (-2 ** 7, 2 ** 7 - 1), "int16": (-2 ** 15, 2 ** 15 - 1), "int32": (-2 ** 31, 2 ** 31 - 1),
    "int64": (INT64_MIN, INT64_MAX), "uint8": (0, 2 ** 8 - 1), "uint16": (0, 2 ** 16 - 1),
    "uint32": (0, 2 ** 32 - 1), "uint64": (0, 2 ** 64 - 1),
}
"""Integer dtype -> (smallest, largest) value it holds."""

MAX_WALKED_ITEMS = 100_000
"""`beyond_int64` looks at no more items than this in one value (a config value is never that big)."""


def is_int(value: Any) -> bool:
    """An integer config value: a Python or NumPy int, but not a bool (`True` is an int to Python, never to a
    config option that wants a count or an index)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """A real-number config value: a Python or NumPy int or float, but not a bool (nor a NumPy bool)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def fits_int64(value: int) -> bool:
    return INT64_MIN <= int(value) <= INT64_MAX


def beyond_int64(value: Any) -> Optional[int]:
    """The first integer inside `value` (nested lists, tuples, sets and dicts; iteratively) that does not fit
    int64, or None."""
    found = beyond_int64_at(value)
    return None if found is None else found[1]


def beyond_int64_at(value: Any) -> Optional[Tuple[Tuple[Any, ...], int]]:
    """(where, the integer) for the first integer inside `value` that does not fit int64 -- `where` the keys and
    indices leading to it -- or None. Dict keys count too. Iterative, and it looks at no more than
    MAX_WALKED_ITEMS items."""
    todo: List[Tuple[Tuple[Any, ...], Any]] = [((), value)]
    walked = 0
    while todo and walked < MAX_WALKED_ITEMS:
        where, item = todo.pop()
        walked += 1
        if isinstance(item, bool):
            continue
        if isinstance(item, int):
            if not fits_int64(item):
                return where, item
        elif isinstance(item, (list, tuple)):
            todo.extend((where + (i,), x) for i, x in enumerate(item))
        elif isinstance(item, (set, frozenset)):
            todo.extend((where, x) for x in item)
        elif isinstance(item, dict):
            for key, x in item.items():
                todo.append((where + ("<key>",), key))
                todo.append((where + (key if isinstance(key, str) and key.isprintable() else "<key>",), x))
    return None


def fits_dtype(value: Any, dtype: str) -> bool:
    """Whether the number `value` can be a constant of integer dtype `dtype` without changing its value (any
    number fits a float dtype: a too large one becomes inf, as in NumPy)."""
    limits = INT_DTYPE_RANGES.get(dtype)
    if limits is None or isinstance(value, bool):
        return True
    if isinstance(value, float) and not value.is_integer():
        return False  # NaN, inf, fractions
    return limits[0] <= value <= limits[1]


def dtype_range_text(dtype: str) -> str:
    low, high = INT_DTYPE_RANGES[dtype]
    return f"{low} .. {high}"


def short_int(value: int) -> str:
    """`value` as text; a huge one by its number of digits (printing an int of more than 4300 digits raises)."""
    if value.bit_length() <= 256:
        return str(value)
    return f"{'-' if value < 0 else ''}<an integer of {value.bit_length()} bits>"


def int64_error_parts(value: int) -> Tuple[str, str]:
    """(what is wrong, suggestion) for an integer beyond int64."""
    return (f"{short_int(value)}, which does not fit in int64 (TensorFlow and PyTorch keep sizes and integers in "
            f"64 bits)", f"use a value in {INT64_MIN} .. {INT64_MAX}")
