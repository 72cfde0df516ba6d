"""Host memory a compile-net process keeps between steps: glibc's malloc settings, and the size of oneDNN's cache
of primitives (`Session` sets both first thing, for every task and backend).

PyTorch takes its CPU tensors from malloc, and so does NumPy its arrays. With glibc's defaults, a block above the
mmap threshold (adjusted as blocks are freed, at most 32 MB) is mapped for each allocation and unmapped when
freed, and free memory at the top of the heap beyond the trim threshold goes back to the kernel. A step that
frees its tensors and allocates the same sizes again then faults the same pages in again, zeroed by the kernel:
aten's LSTM kernel alone maps and unmaps two 36 MB buffers per call, and `benchmarks/run.py`'s PyTorch BLSTM
step made 17-33 thousand page faults, a quarter of its CPU time; the 12AX feed's block generation (arrays of
1.6 MB) up to ~1800 per epoch. With blocks up to 64 MB taken from the heap and up to 256 MB of free heap kept,
the steps after the first few fault nothing in. The price is a higher peak resident set where blocks of
different sizes fragment the heap: `run.py`'s PyTorch BLSTM with the conv front-end (16 x 200 frames) peaked at
~785 MB against ~640 MB with glibc's defaults, and trained 1.3x faster (12.2k against 9.1k frames per
CPU-second). TensorFlow's own step allocations showed no such faults.

Not glibc (musl, macOS): nothing is changed.

The second setting bounds oneDNN's primitive cache (the kernels oneDNN builds for one shape of an op, kept for
reuse: PyTorch's LSTM, convolutions and layout reorders). Its default keeps 1024 primitives, and with the batch
shapes of training (a new T in most batches) each new shape adds its LSTM primitives: a PyTorch BLSTM (`run.py`'s,
16 sequences of 100..300 frames per batch) grew from ~1.4 to ~2.3 GB resident in 300 steps, and further. With 128 it
reached ~1.7 GB (the hand-written PyTorch model ~1.8 GB), at the same speed. One step of that BLSTM uses 34 distinct
primitives (65 with 6 x 512 layers, run.py --full), so a step of one batch shape still runs from the cache (with 16
the BLSTM's fixed-shape step lost 10-20%). TensorFlow's oneDNN reads the same setting; its benchmark steps measured
the same with it.
"""

from __future__ import annotations

import ctypes
import os

MMAP_THRESHOLD = 64 * 2 ** 20
"""Blocks smaller than this come from the heap."""
TRIM_THRESHOLD = 256 * 2 ** 20
"""Free memory at the top of the heap kept up to this much."""
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt's parameter numbers (malloc.h)
PRIMITIVE_CACHE_CAPACITY = 128
"""oneDNN primitives kept for reuse (oneDNN's default: 1024)."""


def keep_freed_host_memory() -> bool:
    """Sets the thresholds above for this process; whether they took effect (False where malloc is not glibc's)."""
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # glibc's own symbol: another libc's mallopt may accept and ignore the values
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    # setting a threshold turns glibc's dynamic adjustment of both off, so both are set
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))


def bound_primitive_cache() -> None:
    """Caps oneDNN's primitive cache at PRIMITIVE_CACHE_CAPACITY, unless the environment already sets
    ONEDNN_PRIMITIVE_CACHE_CAPACITY. oneDNN reads it when it first builds a primitive, so this comes before the first
    step."""
    os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", str(PRIMITIVE_CACHE_CAPACITY))
