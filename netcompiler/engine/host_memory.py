"""Host memory a compile-net process uses between steps: PyTorch's large tensors in huge pages, and the size of
oneDNN's cache of primitives (`Session` sets both first thing, for every task and backend).

PyTorch takes its CPU tensors from malloc. glibc maps a block above its mmap threshold (adjusted as blocks are
freed, at most 32 MB) for each allocation and unmaps it when freed, so a step that frees its tensors and allocates
the same sizes again faults the same pages in again, zeroed by the kernel, one fault per 4 KB page: aten's LSTM
kernel allocates workspaces of 34-61 MB per call, and `benchmarks/run.py`'s PyTorch BLSTM step made 40-55
thousand page faults (~0.1 CPU s of its ~0.55). With `THP_MEM_ALLOC_ENABLE=1` PyTorch aligns every CPU tensor of
2 MB or more to 2 MB and advises the kernel to back it with huge pages, so a mapped block faults once per 2 MB.
glibc's own settings stay: sessions 14-21 kept freed blocks up to 64 MB in the heap instead (`mallopt`), which saved
the faults too but left the heap fragmented, ~20% above the hand-written model's peak on the BLSTM. Measured in
session 22 (`run.py --child MODEL nc-torch default 5`, 3 processes each; frames per CPU-second / peak MB, the
hand-written PyTorch model's beside): BLSTM 7.1-7.5k / 633-661 (kept heap 5.6-8.0k / 778-785; hand-written
4.6-6.5k / 626-723), conv front-end 13.4-14.8k / 518-549 (14.0-14.2k / 563-586; 7.5-9.3k / 566-589),
Transformer 2.7-3.0k / 1338-1380 (2.7-3.0k / 1356-1373; 2.1-2.3k / 1421-1441). TensorFlow's sides measured the
same either way. Where the kernel offers no transparent huge pages (`never`), PyTorch's advice has no effect.

The second setting bounds oneDNN's primitive cache (the kernels oneDNN builds for one shape of an op, kept for
reuse: PyTorch's LSTM, convolutions and layout reorders). Its default keeps 1024 primitives, and with the batch
shapes of training (a new T in most batches) each new shape adds its LSTM primitives: a PyTorch BLSTM (`run.py`'s,
16 sequences of 100..300 frames per batch) grew from ~1.4 to ~2.3 GB resident in 300 steps, and further. With 128 it
reached ~1.7 GB (the hand-written PyTorch model ~1.8 GB), at the same speed. One step of that BLSTM uses 34 distinct
primitives (65 with 6 x 512 layers, run.py --full), so a step of one batch shape still runs from the cache (with 16
the BLSTM's fixed-shape step lost 10-20%). TensorFlow's oneDNN reads the same setting; its benchmark steps measured
the same with it.

Both are environment variables, set only where the environment does not set them already.
"""

from __future__ import annotations

import os

HUGE_PAGES_VARIABLE = "THP_MEM_ALLOC_ENABLE"
"""PyTorch reads it at its first CPU allocation: so set before a torch run's first tensor."""
PRIMITIVE_CACHE_CAPACITY = 128
"""oneDNN primitives kept for reuse (oneDNN's default: 1024)."""


def large_tensors_in_huge_pages() -> None:
    """Sets THP_MEM_ALLOC_ENABLE=1 for PyTorch, unless the environment already sets it."""
    os.environ.setdefault(HUGE_PAGES_VARIABLE, "1")


def bound_primitive_cache() -> None:
    """Caps oneDNN's primitive cache at PRIMITIVE_CACHE_CAPACITY, unless the environment already sets
    ONEDNN_PRIMITIVE_CACHE_CAPACITY. oneDNN reads it when it first builds a primitive, so this comes before the first
    step."""
    os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", str(PRIMITIVE_CACHE_CAPACITY))
