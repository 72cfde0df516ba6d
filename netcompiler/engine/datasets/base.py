"""The dataset contract shared by every dataset class.

A dataset is a corpus of sequences; each sequence is a dict data key -> numpy
array whose first axis is time (frames). `init_epoch(epoch)` fixes which
sequences the epoch has and in which order (`seq_ordering`); after that,
sequences are addressed by their index in that order.

Subclasses describe their options declaratively (`OPTIONS`), so unknown
options, wrong types and bad values are reported the same way for every
dataset, and implement four small corpus-level methods (`_num_corpus_seqs`,
`_corpus_seq`, `_corpus_seq_length`, `_corpus_seq_tag`). Ordering, epoch
partitioning and seeding live here, once.

Seeding follows RETURNN: the random seed of epoch `e` is `fixed_random_seed`
if given, else `e + random_seed_offset` (with `e` first mapped to its full
epoch under `partition_epoch`, and to its group of `n` epochs for
`random:n`-style orderings). Generated datasets seed each sequence with
(seed, corpus index), so they produce the same data as RETURNN does.

This module is pure numpy: no TensorFlow.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from netcompiler.errors import (
    DataContentError,
    InvalidOptionError,
    MissingOptionError,
    UnknownOptionError,
    closest_match,
)
from netcompiler.layer_base import matches_types, type_names
from netcompiler.limits import is_int

from .ordering import SeqOrdering, make_seq_order, partition_of_epoch

# ---------------------------------------------------------------------------
# Registry

DATASET_CLASSES: Dict[str, type] = {}


def register(cls: type) -> type:
    """Class decorator: make `cls` available to configs as {"class": cls.__name__}."""
    DATASET_CLASSES[cls.__name__] = cls
    return cls


# ---------------------------------------------------------------------------
# Data description


@dataclass(frozen=True)
class DataSpec:
    """What the arrays of one data key look like, per sequence (no batch axis).

    `shape` has None for the time axis, e.g. (None, 9) for dense features or
    (None,) for class indices. `dim` is the feature size for dense data and the
    number of classes for sparse data (None if not known).
    """

    dim: Optional[int]
    sparse: bool
    dtype: str
    shape: tuple

    @property
    def has_time_axis(self) -> bool:
        """Whether the first axis is a time axis (of varying length)."""
        return len(self.shape) > 0 and self.shape[0] is None

    @property
    def frame_shape(self) -> tuple:
        """The shape of one frame: the shape after the time axis."""
        return tuple(self.shape[1:]) if self.has_time_axis else tuple(self.shape)

    @classmethod
    def for_sequences(cls, frame_shape: Sequence[int], dtype: Any, dim: Optional[int] = None) -> "DataSpec":
        """The spec of arrays [T, *frame_shape] of `dtype`.

        Integer data without feature axes is sparse (class indices); `dim` is then
        the number of classes. For dense data `dim` defaults to the last axis.
        """
        frame_shape = tuple(int(d) for d in frame_shape)
        return cls._make((None,) + frame_shape, frame_shape, dtype, dim)

    @classmethod
    def for_fixed_shape(cls, shape: Sequence[int], dtype: Any, dim: Optional[int] = None) -> "DataSpec":
        """The spec of arrays of a fixed `shape` per sequence (no time axis)."""
        shape = tuple(int(d) for d in shape)
        return cls._make(shape, shape, dtype, dim)

    @classmethod
    def _make(cls, shape: tuple, feature_shape: tuple, dtype: Any, dim: Optional[int]) -> "DataSpec":
        dtype = np.dtype(dtype)
        sparse = not feature_shape and np.issubdtype(dtype, np.integer)
        if dim is None and not sparse and feature_shape:
            dim = feature_shape[-1]
        return cls(dim=None if dim is None else int(dim), sparse=bool(sparse), dtype=dtype.name, shape=shape)


def seq_lengths_of(arrays: Mapping[str, np.ndarray], spec: Mapping[str, DataSpec]) -> Dict[str, int]:
    """Frames per data key, for the keys that have a time axis."""
    return {key: int(arrays[key].shape[0]) for key, s in spec.items() if s.has_time_axis}


def checked_epoch(owner: "Dataset", epoch: Any) -> int:
    """`epoch` as an int, or the ValueError `Dataset.init_epoch` raises for a bad epoch (an int >= 1)."""
    if not is_int(epoch) or epoch < 1:
        raise ValueError(f"{owner.subject}: epoch must be an int >= 1, got {epoch!r}")
    return int(epoch)


# ---------------------------------------------------------------------------
# Options


@dataclass(frozen=True)
class Option:
    """How one option of a dataset class is checked.

    `types` are the accepted Python types (None always means "use the default",
    unless the option is required). `check` returns a problem text for a value
    of the right type that is still not allowed, or None.
    """

    types: Tuple[type, ...]
    default: Any = None
    required: bool = False
    check: Optional[Callable[[Any], Optional[str]]] = None
    doc: str = ""


def _normalize(value: Any) -> Any:
    """numpy scalars -> Python scalars, so that options compare and print plainly."""
    if isinstance(value, np.generic):
        return value.item()
    return value


def positive(value: Any) -> Optional[str]:
    """Option check: > 0."""
    return None if value > 0 else f"must be positive, got {value!r}"


def non_negative(value: Any) -> Optional[str]:
    """Option check: >= 0."""
    return None if value >= 0 else f"must not be negative, got {value!r}"


def valid_seed(value: Any) -> Optional[str]:
    """Option check: usable as a numpy random seed (0 <= seed < 2**32)."""
    return None if 0 <= value < 2**32 else f"must be in [0, 2**32), got {value!r}"


# Options of RETURNN's datasets that netcompiler knows but does not implement,
# with what to do instead. They are rejected with this hint rather than as unknown.
RETURNN_ONLY_OPTIONS = {
    "window": "stack neighbouring frames in the network instead (e.g. a 'window' layer)",
    "context_window": "not supported",
    "chunking": "set the config key 'chunking' instead",
    "min_chunk_size": "not supported",
    "chunking_variance": "not supported",
    "seq_list_filter_file": "not supported",
    "unique_seq_tags": "not supported",
    "seq_order_seq_lens_file": "not supported",
    "shuffle_frames_of_nseqs": "not supported",
}


# ---------------------------------------------------------------------------
# The dataset base class


class Dataset:
    """A corpus of sequences, read epoch by epoch in a configurable order.

    Subclasses implement `data_spec` and the `_corpus_*` methods (by corpus
    index, i.e. position in the corpus); everything by epoch index is here.
    Construct with keyword options, as in a config: `Cls(name="train", **opts)`.
    """

    OPTIONS: ClassVar[Dict[str, Option]] = {
        "seq_ordering": Option((str,), "default", doc="sequence order per epoch, see SeqOrdering"),
        "fixed_random_seed": Option((int,), None, check=valid_seed,
                                    doc="seed for everything random, the same in every epoch"),
        "random_seed_offset": Option((int,), 0, check=non_negative,
                                     doc="added to the epoch to make the per-epoch seed"),
        "partition_epoch": Option((int,), 1, check=positive,
                                  doc="split the corpus over this many (sub-)epochs"),
        "repeat_epoch": Option((int,), 1, check=positive, doc="repeat every sequence this many times per epoch"),
        "estimated_num_seqs": Option((int,), None, doc="accepted for RETURNN compatibility; no effect"),
    }

    def __init__(self, name: str = "dataset", **opts: Any):
        self.name = str(name)
        self.options = self._check_options(opts)
        self.ordering = self._parse_ordering()
        self.labels: Dict[str, List[str]] = {}
        self.epoch: Optional[int] = None
        self._order: Optional[np.ndarray] = None
        self._listed_order: Optional[np.ndarray] = None  # the order `_order_list` lists (see corpus_index)
        self._order_list: List[int] = []
        # Class counts the network declares for sparse keys (extern_data); they override data_spec()'s dims
        # in the per-sequence check (see `check_seq`). Set by the engine with `expect_dims`.
        self.expected_dims: Dict[str, int] = {}
        self._checked: set = set()  # corpus indices whose data passed `check_seq`

    # -- options ------------------------------------------------------------

    @property
    def subject(self) -> str:
        """How error messages name this dataset."""
        return f"dataset '{self.name}'"

    @classmethod
    def all_options(cls) -> Dict[str, Option]:
        """The options of this class, including those of its base classes."""
        merged: Dict[str, Option] = {}
        for klass in reversed(cls.__mro__):
            merged.update(klass.__dict__.get("OPTIONS", {}))
        return merged

    def _check_options(self, opts: Dict[str, Any]) -> Dict[str, Any]:
        known = self.all_options()
        for key in opts:
            if key not in known:
                self._reject_unknown(key, known)
        values = {}
        for key, spec in known.items():
            value = _normalize(opts.get(key))
            if value is None:
                if spec.required:
                    raise MissingOptionError(
                        f"option '{key}' is required for class '{type(self).__name__}'",
                        subject=self.subject, option=key)
                values[key] = spec.default
                continue
            if not matches_types(_normalize(value), spec.types):
                raise self.option_error(key, f"must be {type_names(spec.types)}, got {value!r}")
            problem = spec.check(value) if spec.check else None
            if problem:
                raise self.option_error(key, problem)
            values[key] = value
        if values["partition_epoch"] > 1 and values["repeat_epoch"] > 1:
            raise self.option_error("repeat_epoch", "cannot be combined with 'partition_epoch'")
        return values

    def _reject_unknown(self, key: str, known: Mapping[str, Option]) -> None:
        if key in RETURNN_ONLY_OPTIONS:
            raise InvalidOptionError(
                f"option '{key}' of RETURNN's datasets is not supported by netcompiler",
                subject=self.subject, option=key, suggestion=RETURNN_ONLY_OPTIONS[key])
        match = closest_match(key, known)
        raise UnknownOptionError(
            f"option '{key}' unknown for class '{type(self).__name__}'",
            subject=self.subject, option=key,
            suggestion=f"did you mean '{match}'?" if match else None)

    def option_error(self, option: str, problem: str, suggestion: Optional[str] = None) -> InvalidOptionError:
        """An InvalidOptionError about `option` of this dataset (to raise)."""
        return InvalidOptionError(f"option '{option}' {problem}", subject=self.subject, option=option,
                                  suggestion=suggestion)

    def _parse_ordering(self) -> SeqOrdering:
        text = self.options["seq_ordering"]
        try:
            return SeqOrdering.parse(text)
        except ValueError as exc:
            match = closest_match(text.split(":")[0], SeqOrdering.KINDS)
            raise self.option_error("seq_ordering", str(exc),
                                    suggestion=f"did you mean '{match}'?" if match else None) from None

    # -- the corpus: implemented by subclasses ---------------------------------

    def data_spec(self) -> Dict[str, DataSpec]:
        """Data key -> DataSpec; the arrays from `get_seq` agree with it."""
        raise NotImplementedError

    def _num_corpus_seqs(self) -> int:
        raise NotImplementedError

    def _corpus_seq(self, corpus_index: int) -> Dict[str, np.ndarray]:
        raise NotImplementedError

    def _corpus_seq_length(self, corpus_index: int) -> Dict[str, int]:
        return seq_lengths_of(self._corpus_seq(corpus_index), self.data_spec())

    def _corpus_seq_tag(self, corpus_index: int) -> str:
        return f"seq-{corpus_index}"

    def _prepare_epoch(self, epoch: int) -> None:
        """Hook called by `init_epoch` before the order is computed."""

    def _corpus_seq_source(self, corpus_index: int) -> Tuple[str, str]:
        """(where the sequence comes from, how it is numbered there) for error messages; files override this."""
        return self.subject, f"sequence {corpus_index}"

    # -- checking the data ----------------------------------------------------------

    def expect_dims(self, dims: Mapping[str, Optional[int]]) -> None:
        """The numbers of classes the network declares for sparse data keys (its extern_data)."""
        self.expected_dims = {str(k): int(v) for k, v in dims.items() if v is not None}
        self._checked.clear()

    def check_seq(self, corpus_index: int, arrays: Mapping[str, np.ndarray]) -> None:
        """DataContentError if a sparse key has a class index < 0 or >= its dim (the network's extern_data dim
        if known, else the dataset's), or a float key has a NaN or inf. One NumPy pass per array."""
        spec = self.data_spec()
        for key, array in arrays.items():
            key_spec = spec.get(key)
            array = np.asarray(array)
            if key_spec is None or array.size == 0:
                continue
            if array.dtype.kind in "iu" and key_spec.sparse:
                dim = self.expected_dims.get(key, key_spec.dim)
                low, high = array.min(), array.max()
                if low < 0:
                    self._bad_data(corpus_index, key, array < 0, array,
                                   lambda v, f: f"negative class index {v} at frame {f} of data key '{key}'")
                if dim is not None and high >= dim:
                    self._bad_data(corpus_index, key, array >= dim, array,
                                   lambda v, f: f"class index {v} at frame {f} >= dim {dim} of data key '{key}'")
            elif array.dtype.kind in "fc":
                finite = np.isfinite(array)
                if not finite.all():
                    self._bad_data(corpus_index, key, ~finite, array,
                                   lambda v, f: f"{'NaN' if np.isnan(v) else v} in features of data key '{key}' "
                                                f"at frame {f}")

    def _bad_data(self, corpus_index: int, key: str, bad: np.ndarray, array: np.ndarray, describe) -> None:
        position = np.unravel_index(int(np.argmax(bad)), bad.shape)
        value = array[position]
        value = value.item() if isinstance(value, np.generic) else value
        frame = int(position[0]) if array.ndim else 0
        count = int(bad.sum())
        source, where = self._corpus_seq_source(corpus_index)
        try:
            tag = self._corpus_seq_tag(corpus_index)
        except Exception:  # the tag is only for the message
            tag = None
        more = f" ({count} bad values in this sequence)" if count > 1 else ""
        if array.dtype.kind in "iu":
            dim = self.expected_dims.get(key, self.data_spec()[key].dim)
            suggestion = ((f"class indices of '{key}' must be in [0, {dim}): fix the data, or if the labels are "
                           f"right, raise the dim of '{key}' in extern_data") if dim is not None else
                          f"class indices of '{key}' must not be negative: fix the data")
        else:
            suggestion = "fix or drop this sequence in the data (a lower learning_rate will not help)"
        raise DataContentError(source, f"{where}" + (f" (tag '{tag}')" if tag is not None else "")
                               + f": {describe(value, frame)}{more}", suggestion)

    # -- seeds and order ----------------------------------------------------------

    def random_seed(self, epoch: int, num_epochs_fixed: int = 1) -> int:
        """The random seed of `epoch` (RETURNN's rule, see the module docstring)."""
        if self.options["fixed_random_seed"] is not None:
            return self.options["fixed_random_seed"]
        seed = (epoch - 1) // self.options["partition_epoch"] + 1
        seed = (seed - 1) // num_epochs_fixed + 1
        return seed + self.options["random_seed_offset"]

    def sort_key(self) -> Optional[str]:
        """The data key orderings sort by: "data", else the first key with a time axis."""
        keys = [key for key, spec in self.data_spec().items() if spec.has_time_axis]
        return "data" if "data" in keys else (keys[0] if keys else None)

    def _sort_lengths(self) -> np.ndarray:
        """The length of `sort_key` of every corpus sequence (override if there is a faster way)."""
        key, num = self.sort_key(), self._num_corpus_seqs()
        if key is None:
            return np.zeros(num, dtype=np.int64)
        return np.array([self._corpus_seq_length(i)[key] for i in range(num)], dtype=np.int64)

    def init_epoch(self, epoch: int) -> None:
        """Start epoch `epoch` (counting from 1): fixes its sequences and their order."""
        self.epoch = checked_epoch(self, epoch)
        self._prepare_epoch(self.epoch)
        lengths = self._sort_lengths() if self.ordering.needs_lengths else None
        order = make_seq_order(self.ordering, self._num_corpus_seqs(), lengths=lengths,
                               seed=self.random_seed(self.epoch, self.ordering.num_epochs_fixed))
        self._order = np.asarray(self._repeat(self._partition(order)), dtype=np.int64)

    def _partition(self, order: np.ndarray) -> np.ndarray:
        """This epoch's part of a full epoch's `order` (`partition_epoch`)."""
        if self.options["partition_epoch"] > 1:
            return partition_of_epoch(order, self.options["partition_epoch"], self.epoch)
        return order

    def _repeat(self, order: np.ndarray) -> np.ndarray:
        """`order` repeated `repeat_epoch` times."""
        return np.tile(order, self.options["repeat_epoch"]) if self.options["repeat_epoch"] > 1 else order

    # -- by index in the current epoch ------------------------------------------

    def data_keys(self) -> List[str]:
        """The data keys, e.g. ["data", "classes"]."""
        return list(self.data_spec())

    def total_num_seqs(self) -> int:
        """Number of sequences in the whole corpus (independent of the epoch)."""
        return self._num_corpus_seqs()

    def num_seqs(self) -> int:
        """Number of sequences in the current epoch."""
        return len(self._current_order())

    def corpus_index(self, index: int) -> int:
        """The corpus index of the sequence at `index` in the current epoch's order."""
        order = self._current_order()
        if order is not self._listed_order:  # batching asks ~3 times per sequence: index a list, not the array
            self._listed_order, self._order_list = order, order.tolist()
        if not 0 <= index < len(self._order_list):
            raise IndexError(f"{self.subject}: sequence index {index} out of range (epoch has {len(order)})")
        return self._order_list[index]

    def seq_length(self, index: int) -> Dict[str, int]:
        """Frames per data key (keys with a time axis) of the sequence at `index`."""
        return self._corpus_seq_length(self.corpus_index(index))

    def get_seq(self, index: int) -> Dict[str, np.ndarray]:
        """The arrays of the sequence at `index`, one per data key (checked by `check_seq` when first read)."""
        corpus_index = self.corpus_index(index)
        arrays = self._corpus_seq(corpus_index)
        if corpus_index not in self._checked:
            self.check_seq(corpus_index, arrays)
            self._checked.add(corpus_index)
        return arrays

    def seq_tag(self, index: int) -> str:
        """The name of the sequence at `index`."""
        return self._corpus_seq_tag(self.corpus_index(index))

    def _current_order(self) -> np.ndarray:
        if self._order is None:
            raise RuntimeError(f"{self.subject}: call init_epoch(epoch) before reading sequences")
        return self._order

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} epoch={self.epoch}>"


# ---------------------------------------------------------------------------
# Generated datasets


class GeneratedDataset(Dataset):
    """A dataset whose sequences are computed, not read.

    Sequence `i` is generated from a numpy RandomState seeded with
    (content seed, i), as RETURNN's GeneratingDataset does; the content seed is
    the epoch's random seed, so the data differ per epoch unless
    `fixed_random_seed` is set. Recently generated sequences are cached.

    A subclass with `BLOCK` > 0 also implements `_generate_block`: on a cache miss it then generates the next
    `BLOCK` sequences of the epoch's order at once (array operations across sequences: the same data as
    `_generate` gives one by one, at a fraction of the per-sequence cost; issue 12 goal 6). Read out of its own
    order (by a combined dataset's random order), a read generates its one sequence; blocks only where the reads
    go on from the one before.
    """

    OPTIONS = {"num_seqs": Option((int,), required=True, check=positive, doc="sequences in the corpus")}
    CACHE_SIZE: ClassVar[int] = 64
    BLOCK: ClassVar[int] = 0  # > 0: sequences per `_generate_block` call
    BLOCK_MIN: ClassVar[int] = 128  # fewer left to generate: one by one (a block has a fixed cost of ~5-10 ms)

    def __init__(self, name: str = "dataset", **opts: Any):
        super().__init__(name, **opts)
        self._content_seed_now: Optional[int] = None
        self._seq_cache: "OrderedDict[int, Dict[str, np.ndarray]]" = OrderedDict()
        self._length_cache: Dict[int, Dict[str, int]] = {}
        self._random_state = np.random.RandomState()  # reseeded per sequence: building one costs ~100 us
        self._next_read = {True: 0, False: 0}
        """Where reads that go on in order would come next: a position in the epoch's order (True), a corpus index
        outside it (False); see `_block_after`."""

    def _generate(self, corpus_index: int, rng: np.random.RandomState) -> Dict[str, np.ndarray]:
        """The arrays of one sequence, drawing all randomness from `rng`."""
        raise NotImplementedError

    def _generate_lengths(self, corpus_index: int, rng: np.random.RandomState) -> Optional[Dict[str, int]]:
        """Optional shortcut: the lengths `_generate` would produce with this `rng`, or None."""
        return None

    def _generate_block(self, corpus_indices: np.ndarray) -> Tuple[List[Dict[str, np.ndarray]], Dict[str, np.ndarray]]:
        """(sequences, arrays) for `BLOCK` > 0: the arrays of each corpus index's sequence, equal to `_generate`'s
        with `_rng(index)`, and padded arrays [n, T, ...] per key holding all of them (checked at once by
        `check_seq`, so their padding must hold valid values too)."""
        raise NotImplementedError

    def content_seed(self, epoch: int) -> int:
        """The seed the data of `epoch` are generated from."""
        return self.random_seed(epoch)

    def _prepare_epoch(self, epoch: int) -> None:
        seed = self.content_seed(epoch)
        self._order = None  # the previous epoch's order must not steer block generation while lengths are read
        self._next_read = {True: 0, False: 0}
        if seed != self._content_seed_now:
            self._content_seed_now = seed
            self._seq_cache.clear()
            self._length_cache.clear()
            self._checked.clear()  # new data: check them again

    def _rng(self, corpus_index: int) -> np.random.RandomState:
        """The generator of one sequence, seeded as RandomState([content seed, corpus index]); the same object
        each call (reseeding gives the same draws as a new RandomState at a tenth of the cost)."""
        self._random_state.seed([self._content_seed_now, corpus_index])
        return self._random_state

    def _num_corpus_seqs(self) -> int:
        return self.options["num_seqs"]

    def _corpus_seq(self, corpus_index: int) -> Dict[str, np.ndarray]:
        if corpus_index in self._seq_cache:
            self._seq_cache.move_to_end(corpus_index)
            return self._seq_cache[corpus_index]
        if self.BLOCK:
            self._fill_block(corpus_index)
            return self._seq_cache[corpus_index]
        arrays = self._generate(corpus_index, self._rng(corpus_index))
        self._seq_cache[corpus_index] = arrays
        self._length_cache[corpus_index] = seq_lengths_of(arrays, self.data_spec())
        while len(self._seq_cache) > self.CACHE_SIZE:
            self._seq_cache.popitem(last=False)
        return arrays

    def _block_after(self, corpus_index: int) -> np.ndarray:
        """The corpus indices to generate with `corpus_index`: where the reads go on from the previous one, the next
        BLOCK of the epoch's order from it, or of the corpus when it is not in the order (lengths read for
        sorting, a meta dataset's reads), less those cached; elsewhere (a combined dataset's random order reading
        this one) only `corpus_index`: a block per read cost up to BLOCK sequences each."""
        order = self._order
        at = np.flatnonzero(order == corpus_index) if order is not None else ()
        in_order = bool(len(at))
        position = int(at[0]) if in_order else corpus_index
        if position != self._next_read[in_order]:
            self._next_read[in_order] = position + 1
            return np.array([corpus_index], dtype=np.int64)
        if in_order:
            ahead = order[position:position + self.BLOCK]
        else:
            ahead = np.arange(position, min(position + self.BLOCK, self._num_corpus_seqs()), dtype=np.int64)
        self._next_read[in_order] = position + len(ahead)
        ahead = dict.fromkeys(ahead.tolist())  # an order repeats indices with repeat_epoch
        return np.array([i for i in ahead if i == corpus_index or i not in self._seq_cache], dtype=np.int64)

    def _fill_block(self, corpus_index: int) -> None:
        """Generates the block of `corpus_index` (see `_block_after`) into the caches, and checks its data at once.
        A block of fewer than BLOCK_MIN sequences is generated one by one (faster then), each checked when read."""
        indices = self._block_after(corpus_index)
        spec = self.data_spec()
        if len(indices) < self.BLOCK_MIN:
            sequences = [self._generate(index, self._rng(index)) for index in indices.tolist()]
        else:
            sequences, padded = self._generate_block(indices)
            try:
                self.check_seq(corpus_index, padded)
                self._checked.update(indices.tolist())
            except DataContentError:
                pass  # found again, with the right sequence named, when the bad sequence is read (get_seq)
        indices = indices.tolist()
        for index, arrays in zip(indices, sequences):
            self._seq_cache[index] = arrays
            self._length_cache[index] = seq_lengths_of(arrays, spec)
        self._seq_cache.move_to_end(corpus_index)
        while len(self._seq_cache) > max(self.CACHE_SIZE, 2 * self.BLOCK):
            self._seq_cache.popitem(last=False)

    def _corpus_seq_length(self, corpus_index: int) -> Dict[str, int]:
        if corpus_index not in self._length_cache and self.BLOCK:
            self._fill_block(corpus_index)
        if corpus_index not in self._length_cache:
            lengths = self._generate_lengths(corpus_index, self._rng(corpus_index))
            if lengths is None:
                self._corpus_seq(corpus_index)  # fills the length cache
            else:
                self._length_cache[corpus_index] = lengths
        return self._length_cache[corpus_index]


# ---------------------------------------------------------------------------
# RETURNN's num_outputs / output_dim forms


def parse_data_dims(value: Any, *, input_dim: Optional[int] = None) -> Dict[str, Tuple[int, int]]:
    """RETURNN's `output_dim` forms -> {key: (dim, ndim)}; ndim 1 is sparse, 2 dense.

    An int means {"classes": (n, 1)}; in a dict, an int value means (n, 2) for
    "data" and (n, 1) otherwise. `input_dim` adds "data": (n, 2).
    Raises ValueError with a problem text for malformed values.
    """
    if value is None:
        value = {}
    if matches_types(_normalize(value), (int,)):
        value = {"classes": value}
    if not isinstance(value, dict):
        raise ValueError(f"must be an int or a dict data key -> dim, got {value!r}")
    dims = {}
    for key, entry in value.items():
        entry = _normalize(entry)
        if matches_types(_normalize(entry), (int,)):
            entry = (entry, 2 if key == "data" else 1)
        if (not isinstance(entry, (tuple, list)) or len(entry) != 2
                or not all(matches_types(_normalize(v), (int,)) for v in entry) or int(entry[1]) < 1):
            raise ValueError(f"entry {key!r} must be an int or a pair (dim, ndim) with ndim >= 1, got {entry!r}")
        dims[str(key)] = (int(entry[0]), int(entry[1]))
    if input_dim is not None and "data" not in dims:
        dims["data"] = (int(input_dim), 2)
    return dims


__all__ = [
    "DATASET_CLASSES",
    "DataSpec",
    "Dataset",
    "GeneratedDataset",
    "Option",
    "SeqOrdering",
    "make_seq_order",
    "non_negative",
    "parse_data_dims",
    "partition_of_epoch",
    "positive",
    "register",
    "seq_lengths_of",
    "valid_seed",
]
