"""Turning a dataset epoch into padded numpy batches, with RETURNN's batching rules.

* `batch_size` counts frames the way RETURNN does: the padded size of a batch,
  number of sequences * longest sequence, may not exceed it, for every data
  key; or a dict data key -> frames (e.g. {"data": 20000, "classes": 5000}):
  a limit per key, keys not named are not limited. A single sequence longer
  than `batch_size` forms a batch of its own.
* `max_seqs` bounds the number of sequences per batch (-1 or None: no bound);
  one number for all keys, as in RETURNN.
* `max_seq_length` drops sequences (or chunks) longer than the limit: an int
  for all keys, a dict per key, or a negative int -n meaning {"classes": n};
  `min_seq_length` (an int or a dict) drops those shorter than the limit.
* `chunking` cuts sequences into chunks of `size` frames every `step` frames
  before batching (the last chunk of a sequence may be shorter), per data key;
  only the keys the network reads are cut and counted, as RETURNN does. A key
  of length <= 1 (a label per sequence) is repeated in every chunk; RETURNN
  means to do the same but stops after the first chunk of such a sequence
  (a deliberate difference: netcompiler keeps all chunks).

No TensorFlow here: batches are numpy arrays, padded with zeros.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Collection, Dict, Iterator, List, Mapping, Optional, Tuple, Union

import numpy as np

from netcompiler.errors import InvalidOptionError
from netcompiler.limits import is_int

Span = Tuple[int, int]  # [start, end) frames


@dataclass
class Batch:
    """Sequences (or chunks) padded to a common length.

    `data[key]` is [B, T, ...] for keys with a time axis (T = longest in the
    batch, padding 0) and [B, ...] for keys without; `lengths[key]` are the
    int32 frame counts [B] of the keys with a time axis.
    """

    data: Dict[str, np.ndarray]
    lengths: Dict[str, np.ndarray]
    seq_tags: List[str]

    @property
    def num_seqs(self) -> int:
        """Number of sequences (chunks) in the batch."""
        return len(self.seq_tags)

    def num_frames(self, key: str = "data") -> int:
        """Frames of `key` in the batch, without padding."""
        return int(self.lengths[key].sum())


# ---------------------------------------------------------------------------
# Options


@dataclass(frozen=True)
class Chunking:
    """Chunk size and step in frames: one int for all keys, or a dict per key."""

    size: Union[int, Mapping[str, int]]
    step: Union[int, Mapping[str, int]]

    def for_key(self, key: str) -> Tuple[int, int]:
        """(size, step) for data key `key`."""
        if isinstance(self.size, int):
            return self.size, self.step
        if key not in self.size:
            raise _chunking_error(f"gives no chunk size for data key '{key}' (it has {sorted(self.size)})")
        return self.size[key], self.step[key]


def _chunking_error(problem: str) -> InvalidOptionError:
    return InvalidOptionError(problem, subject="config key 'chunking'")


_CHUNKING_FORMS = "expected 'size:step' (e.g. '50:25'), an int, (size, step), or (dict, dict) per data key"


def parse_chunking(value: Any) -> Optional[Chunking]:
    """RETURNN's `chunking` forms -> Chunking, or None for no chunking (None, 0, "0", "").

    Accepted: "size:step" or "size" strings, an int, (size, step) with ints or
    with dicts data key -> frames; a missing or zero step means step = size.
    """
    if isinstance(value, Chunking) or value is None:
        return value
    if isinstance(value, str):
        value = _parse_chunking_string(value)
    if is_int(value) or isinstance(value, dict):
        value = (value, None)
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise _chunking_error(f"{_CHUNKING_FORMS}; got {value!r}")
    size, step = value
    if is_int(size):
        return _int_chunking(int(size), step)
    if isinstance(size, dict):
        return _dict_chunking(size, step)
    raise _chunking_error(f"{_CHUNKING_FORMS}; got {value!r}")


def _parse_chunking_string(text: str) -> Any:
    parts = text.strip().split(":") if text.strip() else ["0"]
    if len(parts) > 2 or not all(p.strip().isdigit() for p in parts):
        raise _chunking_error(f"{_CHUNKING_FORMS}; got {text!r}")
    numbers = [int(p) for p in parts]
    return tuple(numbers) if len(numbers) == 2 else numbers[0]


def _int_chunking(size: int, step: Any) -> Optional[Chunking]:
    if step is not None and not is_int(step):
        raise _chunking_error(f"chunk step must be an int like the size, got {step!r}")
    if size < 0 or (step is not None and step < 0):
        raise _chunking_error(f"chunk size and step must not be negative, got size {size}, step {step}")
    if size == 0:
        return None
    return Chunking(size, int(step) if step else size)


def _dict_chunking(size: Dict[str, Any], step: Any) -> Chunking:
    step = dict(size) if step in (None, 0) else step
    if not isinstance(step, dict) or set(step) != set(size):
        raise _chunking_error(
            f"chunk steps must be a dict with the same keys as the sizes {sorted(size)}, got {step!r}")
    for key in size:
        if not (is_int(size[key]) and is_int(step[key]) and size[key] > 0 and step[key] > 0):
            raise _chunking_error(
                f"chunk size and step of '{key}' must be positive ints, got {size[key]!r}:{step[key]!r}")
    return Chunking({k: int(v) for k, v in size.items()}, {k: int(v) for k, v in step.items()})


def positive_int_setting(value: Any, name: str, *, allow_unlimited: bool = False) -> float:
    """`value` of config key `name` as a positive int (math.inf for -1/None if `allow_unlimited`)."""
    if allow_unlimited and (value is None or (is_int(value) and value == -1)):
        return math.inf
    if not is_int(value) or value <= 0:
        also = " (or -1 for no limit)" if allow_unlimited else ""
        raise InvalidOptionError(f"must be a positive int{also}, got {value!r}", subject=f"config key '{name}'")
    return int(value)


def parse_batch_size(value: Any) -> Dict[str, int]:
    """RETURNN's `batch_size` forms -> {key: frames}; key "*" applies to all keys (an int), else per data key."""
    if isinstance(value, dict):
        if value and all(isinstance(k, str) and is_int(v) and v > 0 for k, v in value.items()):
            return {k: int(v) for k, v in value.items()}
        raise InvalidOptionError(f"a dict must map data keys to positive ints, got {value!r}",
                                 subject="config key 'batch_size'", suggestion="e.g. {'data': 20000, 'classes': 5000}")
    return {"*": positive_int_setting(value, "batch_size")}


def _max_seqs_setting(value: Any) -> float:
    if isinstance(value, dict):
        raise InvalidOptionError(f"is one number for all data keys (RETURNN reads it as an int), got {value!r}",
                                 subject="config key 'max_seqs'",
                                 suggestion="give an int; limit frames per key with batch_size = {key: frames}")
    return positive_int_setting(value, "max_seqs", allow_unlimited=True)


def _limit(limits: Mapping[str, float], key: str, unlimited: float = math.inf) -> float:
    """The limit of data key `key` in a per-key table ("*": every key; a key not named: `unlimited`)."""
    return limits.get(key, limits.get("*", unlimited))


def parse_max_seq_length(value: Any, name: str = "max_seq_length") -> Dict[str, int]:
    """RETURNN's `max_seq_length` (or `min_seq_length`) forms -> {key: limit}; key "*" applies to all keys. A
    negative int -n means {"classes": n} for max_seq_length only."""
    if value is None or (is_int(value) and value == 0):
        return {}
    if is_int(value) and (value > 0 or name == "max_seq_length"):
        return {"*": int(value)} if value > 0 else {"classes": -int(value)}
    if isinstance(value, dict) and all(is_int(v) and v > 0 for v in value.values()):
        return {str(k): int(v) for k, v in value.items()}
    raise InvalidOptionError(f"must be an int or a dict data key -> positive int, got {value!r}",
                             subject=f"config key '{name}'")


def _too_long(lengths: Mapping[str, int], limits: Mapping[str, int]) -> bool:
    return any(length > _limit(limits, key) for key, length in lengths.items())


def _too_short(lengths: Mapping[str, int], limits: Mapping[str, int]) -> bool:
    return any(length < _limit(limits, key, 0) for key, length in lengths.items())


# ---------------------------------------------------------------------------
# Chunking a sequence


def chunk_spans(lengths: Mapping[str, int], chunking: Chunking, tag: str = "?") -> List[Dict[str, Span]]:
    """The chunks of one sequence: per chunk, [start, end) frames per data key.

    Chunks are counted on the default key ("data" if there, else the first
    key). Another key is cut alongside if it yields as many chunks (same
    length with the same step, or per-key sizes that fit); a key of length
    <= 1 is kept whole in every chunk (RETURNN's rule); anything else is an error.
    """
    if not lengths:
        return [{}]
    default = "data" if "data" in lengths else sorted(lengths)[0]
    count = math.ceil(lengths[default] / chunking.for_key(default)[1])
    whole_keys = [key for key in lengths if not _cut_alongside(key, default, lengths, chunking, count, tag)]
    chunks = []
    for index in range(count):
        spans = {}
        for key, length in lengths.items():
            key_size, key_step = chunking.for_key(key) if key not in whole_keys else (length, length)
            start = index * key_step if key not in whole_keys else 0
            spans[key] = (start, min(start + key_size, length))
        chunks.append(spans)
    return chunks


def _cut_alongside(key: str, default: str, lengths: Mapping[str, int], chunking: Chunking, count: int, tag: str):
    """Whether `key` is chunked like the default key (True) or kept whole (False)."""
    if key == default:
        return True
    step = chunking.for_key(key)[1]
    default_step = chunking.for_key(default)[1]
    if step == default_step and lengths[key] == lengths[default]:
        return True
    if lengths[key] <= 1:
        return False
    if step != default_step and math.ceil(lengths[key] / step) == count:
        return True
    raise _chunking_error(
        f"sequence '{tag}': data keys '{default}' ({lengths[default]} frames) and '{key}' "
        f"({lengths[key]} frames) cannot be cut into the same number of chunks; "
        f"give per-key sizes, e.g. ({{'{default}': n, '{key}': m}}, {{'{default}': n, '{key}': m}})")


# ---------------------------------------------------------------------------
# Batching


class _Piece:
    """A sequence (`spans` None: whole), or a chunk of one, waiting to be batched; `lengths`: frames per key."""

    __slots__ = ("index", "spans", "lengths")

    def __init__(self, index: int, spans: Optional[Dict[str, Span]], lengths: Dict[str, int]):
        self.index, self.spans, self.lengths = index, spans, lengths

    def span(self, key: str) -> Optional[Span]:
        """[start, end) of `key` (None: the whole array)."""
        return None if self.spans is None else self.spans.get(key)


def _pieces(dataset, chunking: Optional[Chunking], keys: Optional[Collection[str]]) -> Iterator[_Piece]:
    for index in range(dataset.num_seqs()):
        lengths = dataset.seq_length(index)
        if chunking is None:
            yield _Piece(index, None, lengths)
            continue
        if keys is not None:  # RETURNN chunks (and then counts) only the keys the network reads
            lengths = {key: length for key, length in lengths.items() if key in keys}
        for spans in chunk_spans(lengths, chunking, tag=_LazyTag(dataset, index)):
            yield _Piece(index, spans, {key: end - start for key, (start, end) in spans.items()})


class _LazyTag:
    """A sequence tag that is only read if an error message needs it."""

    def __init__(self, dataset, index: int):
        self.dataset, self.index = dataset, index

    def __format__(self, spec: str) -> str:
        return format(self.dataset.seq_tag(self.index), spec)


class _BatchPlan:
    """The pieces of the batch being filled, and whether one more fits."""

    def __init__(self, batch_size: Mapping[str, float], max_seqs: float, limits: Optional[Dict[str, float]] = None):
        self.batch_size, self.max_seqs = batch_size, max_seqs
        self.limits = {} if limits is None else limits  # key -> _limit(batch_size, key), filled as keys come
        self.pieces: List[_Piece] = []
        self.longest: Dict[str, int] = {}

    def fits(self, lengths: Mapping[str, int]) -> bool:
        if not self.pieces:
            return True  # a piece always fits an empty batch, even if longer than batch_size
        num = len(self.pieces) + 1
        if num > self.max_seqs:
            return False
        for key, length in lengths.items():
            longest = self.longest.get(key, 0)
            limit = self.limits.get(key)
            if limit is None:
                limit = self.limits[key] = _limit(self.batch_size, key)
            if (length if length > longest else longest) * num > limit:
                return False
        return True

    def add(self, piece: _Piece, lengths: Mapping[str, int]) -> None:
        self.pieces.append(piece)
        longest = self.longest
        for key, length in lengths.items():
            if length > longest.get(key, 0):
                longest[key] = length

    def next(self) -> "_BatchPlan":
        """An empty plan with the same settings."""
        return _BatchPlan(self.batch_size, self.max_seqs, self.limits)


def _assemble(dataset, pieces: List[_Piece], spec) -> Batch:
    """Read the pieces' data and pad them into one Batch."""
    arrays_by_index: Dict[int, Dict[str, np.ndarray]] = {}
    for piece in pieces:
        if piece.index not in arrays_by_index:
            arrays_by_index[piece.index] = dataset.get_seq(piece.index)
    data, lengths = {}, {}
    for key, key_spec in spec.items():
        parts = [_cut(arrays_by_index[p.index][key], p.span(key)) for p in pieces]
        if key_spec.has_time_axis:
            lengths[key] = np.fromiter((len(part) for part in parts), dtype=np.int32, count=len(parts))
            data[key] = _pad(parts, key_spec, int(lengths[key].max()) if len(parts) else 0)
        else:
            data[key] = np.stack(parts).astype(key_spec.dtype, copy=False)
    tags = [dataset.seq_tag(p.index) for p in pieces]
    return Batch(data=data, lengths=lengths, seq_tags=tags)


def _cut(array: np.ndarray, span: Optional[Span]) -> np.ndarray:
    return array if span is None else array[span[0]:span[1]]


def _pad(parts: List[np.ndarray], spec, longest: int) -> np.ndarray:
    padded = np.zeros((len(parts), longest) + tuple(spec.frame_shape), dtype=spec.dtype)
    for row, part in enumerate(parts):
        padded[row, :len(part)] = part
    return padded


@dataclass(frozen=True)
class BatchSettings:
    """The batching settings of a config, checked (see `parse_batching`)."""

    batch_size: Dict[str, int]
    """data key -> most padded frames per batch; key "*": every key (see `parse_batch_size`)"""
    max_seqs: float
    chunking: Optional[Chunking] = None
    max_seq_length: Dict[str, int] = field(default_factory=dict)
    min_seq_length: Dict[str, int] = field(default_factory=dict)

    def whole_sequences(self) -> "BatchSettings":
        """The same without chunking and length limits: for dev/eval scores and forwarding (as RETURNN)."""
        return replace(self, chunking=None, max_seq_length={}, min_seq_length={})

    def check_data_keys(self, data_keys) -> None:
        """Every data key the per-key settings name must be one of `data_keys` (the network's extern_data):
        a misspelt key would otherwise limit nothing."""
        named = {"batch_size": self.batch_size, "max_seq_length": self.max_seq_length,
                 "min_seq_length": self.min_seq_length,
                 "chunking": self.chunking.size if self.chunking and isinstance(self.chunking.size, dict) else {}}
        for option, table in named.items():
            unknown = sorted(k for k in table if k != "*" and k not in data_keys)
            if unknown:
                raise InvalidOptionError(
                    f"names data key(s) {', '.join(map(repr, unknown))}, which extern_data does not have "
                    f"(it has {', '.join(map(repr, sorted(data_keys)))})", subject=f"config key '{option}'",
                    suggestion="use the data keys of extern_data")


def parse_batching(*, batch_size: Any, max_seqs: Any, chunking: Any = None, max_seq_length: Any = None,
                   min_seq_length: Any = None) -> BatchSettings:
    """Checks the config's batching settings once, before any batch is made (errors name the config key)."""
    return BatchSettings(parse_batch_size(batch_size), _max_seqs_setting(max_seqs),
                         parse_chunking(chunking), parse_max_seq_length(max_seq_length),
                         parse_max_seq_length(min_seq_length, "min_seq_length"))


def iterate_batches(dataset, settings: BatchSettings, keys: Optional[Collection[str]] = None) -> Iterator[Batch]:
    """The batches of the dataset's current epoch (call `dataset.init_epoch` first), in order.

    Sequences keep the epoch's order; a batch is closed as soon as the next
    sequence (or chunk) would make it exceed `batch_size` padded frames for
    some key, or `max_seqs` sequences. See the module docstring for the options.
    With `keys` (the data keys the network reads; None: all), batches hold only
    those keys, and chunking cuts and counts only those (RETURNN's
    used_data_keys); whole sequences are counted with all the dataset's keys.
    """
    spec = dataset.data_spec()
    if keys is not None:
        spec = {key: key_spec for key, key_spec in spec.items() if key in keys}
    plan = _BatchPlan(settings.batch_size, settings.max_seqs)
    filtered = bool(settings.max_seq_length or settings.min_seq_length)
    for piece in _pieces(dataset, settings.chunking, keys):
        lengths = piece.lengths
        if filtered and (_too_long(lengths, settings.max_seq_length) or _too_short(lengths, settings.min_seq_length)):
            continue
        if not plan.fits(lengths):
            yield _assemble(dataset, plan.pieces, spec)
            plan = plan.next()
        plan.add(piece, lengths)
    if plan.pieces:
        yield _assemble(dataset, plan.pieces, spec)
