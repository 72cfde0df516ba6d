"""Sequence orderings of an epoch (RETURNN's `seq_ordering` forms) and epoch partitions. Pure numpy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, List, Optional, Tuple

import numpy as np


@dataclass(frozen=True)
class SeqOrdering:
    """A parsed `seq_ordering` value (RETURNN's forms).

    * "default", "reverse": corpus order, or reversed.
    * "sorted", "sorted_reverse": by length of the default key, shortest (longest) first.
    * "random[:n]": a random permutation; its seed stays the same for n epochs.
    * "random_sample[:n]": num_seqs draws with replacement.
    * "laplace[:bins|:.seqs_per_bin][:n]": random permutation cut into bins, the
      bins sorted alternately ascending and descending by length.
    * "sort_bin_shuffle[_x2][:bins|:.seqs_per_bin][:n]": sorted by length, cut
      into bins, bins shuffled (and the sequences within each bin with _x2).
    """

    kind: str
    bins: Optional[int] = None
    seqs_per_bin: Optional[int] = None
    num_epochs_fixed: int = 1

    KINDS: ClassVar[Tuple[str, ...]] = (
        "default", "reverse", "sorted", "sorted_reverse", "random", "random_sample",
        "laplace", "sort_bin_shuffle", "sort_bin_shuffle_x2",
    )
    _WITH_NTH: ClassVar[Tuple[str, ...]] = ("random", "random_sample")
    _WITH_BINS: ClassVar[Tuple[str, ...]] = ("laplace", "sort_bin_shuffle", "sort_bin_shuffle_x2")

    @property
    def needs_lengths(self) -> bool:
        """Whether computing the order needs every sequence's length."""
        return self.kind not in ("default", "reverse", "random", "random_sample")

    @classmethod
    def parse(cls, text: str) -> "SeqOrdering":
        """Parse a seq_ordering string; ValueError with a problem text if malformed."""
        kind, *args = text.split(":")
        if kind not in cls.KINDS:
            raise ValueError(f"has an unknown kind {kind!r} (known: {', '.join(cls.KINDS)})")
        max_args = 1 if kind in cls._WITH_NTH else 2 if kind in cls._WITH_BINS else 0
        if len(args) > max_args:
            raise ValueError(f"is {text!r}, but '{kind}' takes at most {max_args} ':'-separated argument(s)")
        if kind in cls._WITH_NTH:
            return cls(kind, num_epochs_fixed=_positive_int_arg(text, args[0]) if args else 1)
        if kind in cls._WITH_BINS:
            bins, per_bin = 2, None
            if args and args[0].startswith("."):
                bins, per_bin = None, _positive_int_arg(text, args[0][1:])
            elif args:
                bins = _positive_int_arg(text, args[0])
            nth = _positive_int_arg(text, args[1]) if len(args) > 1 else 1
            return cls(kind, bins=bins, seqs_per_bin=per_bin, num_epochs_fixed=nth)
        return cls(kind)

    def num_bins(self, num_seqs: int) -> int:
        """The number of bins for laplace / sort_bin_shuffle."""
        if self.seqs_per_bin is not None:
            return max(num_seqs // self.seqs_per_bin, 2)
        return self.bins or 2


def _positive_int_arg(text: str, arg: str) -> int:
    if not arg.isdigit() or int(arg) <= 0:
        raise ValueError(f"is {text!r}, but {arg!r} is not a positive integer")
    return int(arg)


def _bin_slices(num_items: int, num_bins: int) -> List[slice]:
    return [slice(i * num_items // num_bins, (i + 1) * num_items // num_bins) for i in range(num_bins)]


def make_seq_order(
    ordering: SeqOrdering,
    num_seqs: int,
    *,
    seed: int,
    lengths: Optional[np.ndarray] = None,
) -> np.ndarray:
    """The corpus indices of one epoch, in order.

    `seed` seeds every random choice (RETURNN uses numpy's RandomState, and so
    do we, so that the same seed gives the same order); `lengths` are the sort
    lengths by corpus index, needed when `ordering.needs_lengths`.
    """
    kind = ordering.kind
    rng = np.random.RandomState(seed)
    if kind == "default":
        return np.arange(num_seqs)
    if kind == "reverse":
        return np.arange(num_seqs)[::-1].copy()
    if kind == "random":
        return rng.permutation(num_seqs)
    if kind == "random_sample":
        return rng.randint(0, num_seqs, size=num_seqs) if num_seqs else np.arange(0)
    assert lengths is not None and len(lengths) == num_seqs
    if kind == "sorted":
        return np.argsort(lengths, kind="stable")
    if kind == "sorted_reverse":
        return np.argsort(-lengths, kind="stable")
    if kind == "laplace":
        return _laplace_order(rng, lengths, ordering.num_bins(num_seqs))
    return _sort_bin_shuffle_order(rng, lengths, ordering.num_bins(num_seqs), kind.endswith("_x2"))


def _laplace_order(rng: np.random.RandomState, lengths: np.ndarray, num_bins: int) -> np.ndarray:
    shuffled = rng.permutation(len(lengths))
    parts = []
    for i, part in enumerate(_bin_slices(len(shuffled), num_bins)):
        members = shuffled[part]
        direction = 1 if i % 2 == 0 else -1
        parts.append(members[np.argsort(direction * lengths[members], kind="stable")])
    return np.concatenate(parts) if parts else shuffled


def _sort_bin_shuffle_order(rng: np.random.RandomState, lengths: np.ndarray, num_bins: int, shuffle_in_bin: bool):
    shuffled = rng.permutation(len(lengths))
    by_length = shuffled[np.argsort(lengths[shuffled], kind="stable")]
    slices = _bin_slices(len(by_length), num_bins)
    slices[-1] = slice(slices[-1].start, None)
    parts = []
    for b in rng.permutation(num_bins):
        part = by_length[slices[b]].copy()
        if shuffle_in_bin:
            rng.shuffle(part)
        parts.append(part)
    return np.concatenate(parts)


def partition_of_epoch(order: np.ndarray, partition_epoch: int, epoch: int) -> np.ndarray:
    """The part of a full-epoch order that sub-epoch `epoch` gets (RETURNN's partition_epoch).

    The order is cut into `partition_epoch` consecutive parts whose sizes differ
    by at most one (the first parts get the extra sequences).
    """
    part = (epoch - 1) % partition_epoch
    base, extra = divmod(len(order), partition_epoch)
    start = part * base + min(part, extra)
    return order[start:start + base + (1 if part < extra else 0)]
