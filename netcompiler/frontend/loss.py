"""Ops for losses, addressed by Dim: cross entropies (`cross_entropy` as RETURNN's frontend has it,
`softmax_cross_entropy_with_logits`, `binary_cross_entropy`), `label_smoothing`, CTC (`ctc_loss`, `ctc_decode`,
`collapse_repeated`) and `edit_distance` of label sequences.

Sequence ops take the per-sequence lengths of their spatial dims from the run
context; a new spatial dim they make (decoded or collapsed labels) gets its
lengths recorded there.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

from ..tensor import SPATIAL, Data, Dim, Tensor
from ._dispatch import backend_for, result_roles
from .array import gather, permute, range_over_dim
from .activations import safe_log
from .math import cast, compare, where
from .reduce import matmul
from .run_ctx import get_run_ctx

ESTIMATED_TYPES = ("logits", "probs", "log-probs")


def cross_entropy(*, estimated: Tensor, target: Tensor, axis: Dim, estimated_type: str) -> Tensor:
    """-sum over `axis` of target * log(estimated): the dims of `estimated` without `axis` (and those of `target`
    it lacks). `estimated` holds logits, probabilities or log-probabilities over `axis` (`estimated_type`; the
    log of probabilities is `safe_log`'s); `target` is a distribution over `axis` or class indices sparse over it."""
    if estimated_type not in ESTIMATED_TYPES:
        raise ValueError(f"cross_entropy: estimated_type must be one of {ESTIMATED_TYPES}, not {estimated_type!r}")
    if not estimated.has_dim(axis):
        raise ValueError(f"cross_entropy: the estimate {estimated.data.describe()} has no axis {axis}")
    if target.sparse_dim is not None and target.sparse_dim != axis:
        raise ValueError(f"cross_entropy: the targets are indices into {target.sparse_dim}, not into the axis {axis}")
    if target.sparse_dim is None and not target.has_dim(axis):
        raise ValueError(f"cross_entropy: the dense target {target.data.describe()} has no axis {axis} (sparse "
                         f"targets need sparse_dim {axis})")
    if estimated_type == "logits":
        return softmax_cross_entropy_with_logits(logits=estimated, targets=target, axis=axis)
    # probabilities that underflowed to 0 (e.g. on padded frames) give a large finite loss and no NaN gradient
    log_prob = safe_log(estimated) if estimated_type == "probs" else estimated
    if target.sparse_dim is not None:
        return -gather(log_prob, indices=target, axis=axis)
    return -matmul(target, log_prob, reduce=axis)


def label_smoothing(prob: Tensor, smoothing: float, *, axis: Optional[Dim] = None) -> Tensor:
    """`prob` mixed with the uniform distribution over `axis`: prob (1 - smoothing) + smoothing / |axis|. Class
    indices (sparse over `axis`) become that distribution over `axis`. `axis` defaults to the sparse dim or the
    feature dim."""
    axis = axis or prob.sparse_dim or prob.feature_dim
    if axis is None or axis.size is None:
        raise ValueError(f"label_smoothing: needs a static axis to smooth over; {prob.data.describe()} has none, "
                         f"pass axis=")
    floor = smoothing / axis.size
    if prob.sparse_dim is not None:
        if prob.sparse_dim != axis:
            raise ValueError(f"label_smoothing: the indices are into {prob.sparse_dim}, not into {axis}")
        classes = cast(range_over_dim(axis), prob.dtype)
        is_target = compare(prob.copy(sparse_dim=None), "equal", classes)  # the dims of prob, then axis
        return where(is_target, 1.0 - smoothing + floor, floor)
    if not prob.has_dim(axis):
        raise ValueError(f"label_smoothing: {prob.data.describe()} has no axis {axis}")
    return prob * (1.0 - smoothing) + floor


def softmax_cross_entropy_with_logits(*, logits: Tensor, targets: Tensor, axis: Dim) -> Tensor:
    """-sum over `axis` of targets * log_softmax(logits): the dims of `logits` without `axis`. `targets` is a
    distribution with the dims of `logits`, or class indices sparse over `axis` with the other dims."""
    rest = [d for d in logits.dims if d != axis]
    if targets.sparse_dim is not None:
        if targets.sparse_dim != axis:
            raise ValueError(f"softmax_cross_entropy_with_logits: targets are indices into "
                             f"{targets.sparse_dim}, not into {axis}")
        labels = permute(targets, rest)
    else:
        labels = permute(targets, rest + [axis])
    raw = backend_for(logits).softmax_cross_entropy_with_logits_raw(permute(logits, rest + [axis]).raw, labels.raw)
    return Tensor(Data(logits.name, tuple(rest), logits.dtype, **result_roles(rest, logits)), raw)


def binary_cross_entropy(*, from_logits: Tensor, targets: Tensor, pos_weight: Optional[float] = None) -> Tensor:
    """Elementwise -(w t log sigmoid(x) + (1 - t) log(1 - sigmoid(x))) of logits x and 0/1 targets t (same dims),
    w = `pos_weight` (None: 1)."""
    labels = permute(targets, from_logits.dims)
    raw = backend_for(from_logits).sigmoid_cross_entropy_with_logits_raw(from_logits.raw, labels.raw, pos_weight)
    return Tensor(from_logits.data.copy(sparse_dim=None), raw)


def _other_dim(x: Tensor, *exclude: Dim) -> Dim:
    """The one dim of `x` besides `exclude` (the batch of a sequence, the classes of logits)."""
    rest = [d for d in x.dims if d not in exclude]
    if len(rest) != 1:
        raise ValueError(f"expected one dim in {x.data.describe()} besides {list(exclude)}, not {rest}")
    return rest[0]


def _lengths_raw(dim: Dim, batch: Dim) -> Any:
    """The raw int32 [batch] lengths of `dim` (a static dim: its size for every sequence)."""
    run = get_run_ctx()
    size = run.size(dim)
    if isinstance(size, Tensor) and size.dims:
        return permute(size, (batch,)).raw
    value = size if isinstance(size, int) else size.raw
    return run.backend.broadcast_to_raw(run.backend.convert_to_raw(value, "int32"), [run.dim_value(batch)])


def _new_sequences(name: str, raw: Any, lengths: Any, batch: Dim, out_dim: Optional[Dim], description: str,
                   dtype: str, sparse_dim: Optional[Dim] = None) -> Tuple[Tensor, Dim]:
    """Sequences [batch, out_dim] with their lengths recorded for `out_dim` (a new dim if None)."""
    out_dim = out_dim or Dim(None, SPATIAL, description)
    get_run_ctx().set_size(out_dim, lengths, size_dims=(batch,))
    return Tensor(Data(name, (batch, out_dim), dtype, sparse_dim=sparse_dim, time_dim=out_dim), raw), out_dim


def ctc_loss(*, logits: Tensor, targets: Tensor, input_spatial_dim: Dim, targets_spatial_dim: Dim,
             blank_index: int) -> Tensor:
    """-log p(targets | logits) by connectionist temporal classification, per sequence: dims [batch].

    `logits` [batch, input_spatial_dim, classes] (any order) are unnormalised log-probabilities over the labels
    and blank (at `blank_index` of the classes); `targets` [batch, targets_spatial_dim] are label indices."""
    batch = _other_dim(targets, targets_spatial_dim)
    classes = _other_dim(logits, input_spatial_dim, batch)
    time_major = permute(logits, (input_spatial_dim, batch, classes))
    raw = backend_for(logits).ctc_loss_raw(
        time_major.raw, _lengths_raw(input_spatial_dim, batch), permute(targets, (batch, targets_spatial_dim)).raw,
        _lengths_raw(targets_spatial_dim, batch), blank_index)
    return Tensor(Data("ctc_loss", (batch,), logits.dtype), raw)


def ctc_decode(logits: Tensor, *, spatial_dim: Dim, classes_dim: Dim, beam_width: int = 1,
               out_spatial_dim: Optional[Dim] = None) -> Tuple[Tensor, Dim]:
    """The most probable label sequences of CTC `logits` [batch, spatial_dim, classes_dim] (blank: the last
    class): greedy (repeats merged, blanks removed) for `beam_width` 1, else beam search. Int32 labels
    [batch, out_spatial_dim] and the new dim (its lengths recorded)."""
    batch = _other_dim(logits, spatial_dim, classes_dim)
    time_major = permute(logits, (spatial_dim, batch, classes_dim))
    raw, lengths = backend_for(logits).ctc_decode_raw(time_major.raw, _lengths_raw(spatial_dim, batch), beam_width)
    return _new_sequences("ctc_decoded", raw, lengths, batch, out_spatial_dim, f"decoded:{spatial_dim.description}",
                          "int32")


def collapse_repeated(x: Tensor, *, spatial_dim: Dim, out_spatial_dim: Optional[Dim] = None) -> Tuple[Tensor, Dim]:
    """Sequences [batch, spatial_dim] with each run of one value merged into one entry: [batch, out_spatial_dim]
    and the new dim (its lengths recorded)."""
    batch = _other_dim(x, spatial_dim)
    raw, lengths = backend_for(x).collapse_repeated_raw(permute(x, (batch, spatial_dim)).raw,
                                                        _lengths_raw(spatial_dim, batch))
    return _new_sequences(x.name, raw, lengths, batch, out_spatial_dim, f"collapsed:{spatial_dim.description}",
                          x.dtype, x.sparse_dim)


def edit_distance(a: Tensor, a_spatial_dim: Dim, b: Tensor, b_spatial_dim: Dim) -> Tensor:
    """Levenshtein distance (insertions, deletions, substitutions; not normalised) between the sequences of `a`
    [batch, a_spatial_dim] and `b` [batch, b_spatial_dim] of the same dtype: float32 [batch]."""
    if a.dtype != b.dtype:
        raise TypeError(f"edit_distance: dtypes differ: {a.dtype} vs {b.dtype}")
    batch = _other_dim(a, a_spatial_dim)
    raw = backend_for(a, b).edit_distance_raw(
        permute(a, (batch, a_spatial_dim)).raw, _lengths_raw(a_spatial_dim, batch),
        permute(b, (batch, b_spatial_dim)).raw, _lengths_raw(b_spatial_dim, batch))
    return Tensor(Data("edit_distance", (batch,), "float32"), raw)
