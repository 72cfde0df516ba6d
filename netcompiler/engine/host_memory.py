"""Host memory a compile-net process uses between steps: where malloc puts large blocks, huge pages for PyTorch's
large tensors, and the size of oneDNN's cache of primitives (`Session` sets all three first thing, for every task
and backend).

PyTorch takes its CPU tensors from malloc, and so does NumPy its arrays. glibc maps a block above its mmap
threshold for each allocation and unmaps it when freed, so a step that frees its tensors and allocates the same
sizes again faults the same pages in again, zeroed by the kernel, one fault per 4 KB page: aten's LSTM kernel
allocates workspaces of 34-61 MB per call, and `benchmarks/run.py`'s PyTorch BLSTM step made 40-55 thousand page
faults (~0.1 CPU s of its ~0.55). With `THP_MEM_ALLOC_ENABLE=1` PyTorch advises the kernel to back every CPU tensor
of 2 MB or more with huge pages, so a mapped block faults about once per 2 MB. Blocks of MMAP_THRESHOLD or more are
mapped (glibc's own threshold moves up to 32 MB as blocks are freed), smaller ones come from the heap, and up to
TRIM_THRESHOLD of free heap is kept for the next step (glibc's default gives the top of the heap back at a few
hundred KB: the 12AX LSTM's small steps then ran ~20% slower). Sessions 14-21 took blocks up to 64 MB from the heap
instead; that saved the faults too, but the heap fragmented: the BLSTM peaked ~20% above the hand-written model.
With these settings the PyTorch BLSTM, conv front-end, Transformer and 12AX steps ran at the hand-written models'
speed or faster, at or below their peaks (the sweeps: `benchmarks/README.md`, "Session 22"). TensorFlow's sides
measured the same either way. Where the kernel offers no transparent huge pages (`never`), PyTorch's advice has no
effect; where malloc is not glibc's (musl, macOS), its thresholds stay.

The last setting bounds oneDNN's primitive cache (the kernels oneDNN builds for one shape of an op, kept for
reuse: PyTorch's LSTM, convolutions and layout reorders). Its default keeps 1024 primitives, and with the batch
shapes of training (a new T in most batches) each new shape adds its LSTM primitives: a PyTorch BLSTM (`run.py`'s,
16 sequences of 100..300 frames per batch) grew from ~1.4 to ~2.3 GB resident in 300 steps, and further. With 128 it
reached ~1.7 GB (the hand-written PyTorch model ~1.8 GB), at the same speed. One step of that BLSTM uses 34 distinct
primitives (65 with 6 x 512 layers, run.py --full), so a step of one batch shape still runs from the cache (with 16
the BLSTM's fixed-shape step lost 10-20%). TensorFlow's oneDNN reads the same setting; its benchmark steps measured
the same with it.

Huge pages and the cache size are environment variables, set only where the environment does not set them already.
"""

from __future__ import annotations

import ctypes
import os

MMAP_THRESHOLD = 8 * 2 ** 20
"""Blocks of this size or more are mapped for each allocation; smaller ones come from the heap."""
TRIM_THRESHOLD = 256 * 2 ** 20
"""Free memory at the top of the heap kept up to this much."""
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt's parameter numbers (malloc.h)
HUGE_PAGES_VARIABLE = "THP_MEM_ALLOC_ENABLE"
"""PyTorch reads it at its first CPU allocation: so set before a torch run's first tensor."""
PRIMITIVE_CACHE_CAPACITY = 128
"""oneDNN primitives kept for reuse (oneDNN's default: 1024)."""


def set_up_host_memory() -> None:
    """Sets THP_MEM_ALLOC_ENABLE=1 for PyTorch (unless the environment already sets it) and glibc's thresholds above
    (nothing where malloc is not glibc's)."""
    os.environ.setdefault(HUGE_PAGES_VARIABLE, "1")
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # glibc's own symbol: another libc's mallopt may accept and ignore the values
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return
    # setting a threshold turns glibc's adjustment of both off, so both are set
    mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)


def bound_primitive_cache() -> None:
    """Caps oneDNN's primitive cache at PRIMITIVE_CACHE_CAPACITY, unless the environment already sets
    ONEDNN_PRIMITIVE_CACHE_CAPACITY. oneDNN reads it when it first builds a primitive, so this comes before the first
    step."""
    os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", str(PRIMITIVE_CACHE_CAPACITY))
