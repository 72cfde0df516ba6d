"""Beam search on Tensors whose batch dim stands for batch x beam (entry b*beam + k: hypothesis k of sequence b).

The templates keep `batch_dim`; only the raw batch axis is `beam` times longer. `tile_batch` makes such a
Tensor from a per-sequence one, `beam_step` expands every hypothesis by every label and keeps the best `beam`
per sequence, `gather_batch` reorders entries by the hypotheses they came from, and `backtrack` follows those
reorderings back from the last step to give each final hypothesis its labels of every step.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

from ..tensor import Data, Dim, Tensor, batch_dim
from ._dispatch import backend_for
from .array import convert_to_tensor, gather, permute
from .loops import step_stack, step_stack_stack, step_stack_write, while_loop

_IMPOSSIBLE = -1.0e30
"""The score of a hypothesis that must not be chosen (finite, so that sums and ratios stay ordered)."""


def tile_batch(x: Tensor, beam: int) -> Tensor:
    """`x` with each batch entry repeated `beam` times; a Tensor without the batch dim as it is."""
    if beam == 1 or batch_dim not in x.dims:
        return x
    backend = backend_for(x)
    axis = x.axis_of(batch_dim)
    n = backend.get_shape_tuple_raw(x.raw)[axis]
    rows = backend.combine_raw(backend.range_raw(_times(backend, n, beam), "int32"), "floordiv",
                               backend.convert_to_raw(beam, "int32"))
    return Tensor(x.data, backend.gather_raw(x.raw, rows, axis, 0))


def gather_batch(x: Tensor, rows: Tensor) -> Tensor:
    """Entry r of the result is entry `rows[r]` of `x` along the batch dim (`rows`: int32 [batch])."""
    if batch_dim not in x.dims:
        return x
    backend = backend_for(x, rows)
    return Tensor(x.data, backend.gather_raw(x.raw, rows.raw, x.axis_of(batch_dim), 0))


def _times(backend, n: Any, k: int) -> Any:
    """n * k for a length `n` (an int, or a raw int scalar)."""
    return n * k if isinstance(n, int) else backend.combine_raw(n, "mul", backend.convert_to_raw(k, "int32"))


def initial_scores(beam: int) -> Tensor:
    """(Called outside the loop, where the batch dim is per sequence.) Scores [batch x beam] at the start: 0 for the first hypothesis of each sequence, impossible for the
    others (they are copies of it, and must not be expanded as well)."""
    backend = backend_for()
    from .run_ctx import get_run_ctx

    n = _times(backend, get_run_ctx().dim_value(batch_dim), beam)  # called outside the loop: batch
    k = backend.combine_raw(backend.range_raw(n, "int32"), "mod", backend.convert_to_raw(beam, "int32"))
    zero = backend.compare_raw(k, "equal", backend.convert_to_raw(0, "int32"))
    raw = backend.where_raw(zero, backend.fill_raw([n], 0.0, "float32"), backend.fill_raw([n], _IMPOSSIBLE, "float32"))
    return Tensor(Data("beam_scores", [batch_dim], "float32"), raw)


def beam_step(log_probs: Tensor, label_dim: Dim, scores: Tensor, beam: int,
              rank_length: Optional[Tensor] = None, exponent: float = 1.0) -> Tuple[Tensor, Tensor, Tensor]:
    """Expands each hypothesis (score `scores`) by each label of `log_probs` [batch, label_dim] and keeps the best
    `beam` of each sequence, ranked by the summed score (divided by `rank_length ** exponent` if given).

    Returns (labels [batch] sparse on `label_dim`, the rows they extend [batch] (absolute), their scores)."""
    backend = backend_for(log_probs, scores)
    lp = permute(log_probs, [batch_dim, label_dim]).raw
    n_labels = backend.get_shape_tuple_raw(lp)[1]
    total = backend.combine_raw(backend.expand_dims_raw(scores.raw, 1), "add", lp)
    rank = total
    if rank_length is not None:
        scale = backend.combine_raw(backend.cast_raw(rank_length.raw, "float32"), "pow", float(exponent))
        rank = backend.combine_raw(total, "truediv", backend.expand_dims_raw(scale, 1))
    width = _times(backend, n_labels, beam)
    _, best = backend.top_k_raw(backend.reshape_raw(rank, [-1, width]), beam)  # [batch, beam]
    n_labels = backend.cast_raw(backend.convert_to_raw(n_labels, "int32"), "int32")
    labels = backend.combine_raw(best, "mod", n_labels)
    rows = _absolute_rows(backend, backend.combine_raw(best, "floordiv", n_labels), beam)
    new_scores = backend.gather_raw(backend.reshape_raw(total, [-1, width]), best, 1, 1)
    flat = [backend.reshape_raw(raw, [-1]) for raw in (labels, rows, new_scores)]
    return (Tensor(Data("choice", [batch_dim], "int32", sparse_dim=label_dim), flat[0]),
            Tensor(Data("beam_rows", [batch_dim], "int32"), flat[1]),
            Tensor(Data("beam_scores", [batch_dim], "float32"), flat[2]))


def sort_beams(rank: Tensor, beam: int) -> Tensor:
    """The rows [batch x beam] ordered best first within each sequence by `rank` [batch] (higher is better)."""
    backend = backend_for(rank)
    _, best = backend.top_k_raw(backend.reshape_raw(rank.raw, [-1, beam]), beam)
    rows = _absolute_rows(backend, best, beam)
    return Tensor(Data("beam_rows", [batch_dim], "int32"), backend.reshape_raw(rows, [-1]))


def best_rows(beam: int) -> Tensor:
    """The first hypothesis of each sequence: rows 0, beam, 2*beam, ... (as many as sequences)."""
    backend = backend_for()
    from .run_ctx import get_run_ctx

    return Tensor(Data("beam_rows", [batch_dim], "int32"),
                  _first_rows(backend, get_run_ctx().dim_value(batch_dim), beam))


def _first_rows(backend, n_seqs: Any, beam: int) -> Any:
    """Raw [n_seqs]: the row of each sequence's first hypothesis, 0, beam, 2*beam, ..."""
    return backend.combine_raw(backend.range_raw(n_seqs, "int32"), "mul", backend.convert_to_raw(beam, "int32"))


def _absolute_rows(backend, in_beam: Any, beam: int) -> Any:
    """Raw [sequences, k] hypothesis numbers within each sequence's beam as rows of batch x beam."""
    first = _first_rows(backend, backend.get_shape_tuple_raw(in_beam)[0], beam)
    return backend.combine_raw(backend.expand_dims_raw(first, 1), "add", in_beam)


def backtrack(rows_per_step: Tensor, time: Dim, steps: Tensor, final_rows: Tensor) -> Tensor:
    """For each final hypothesis (row `final_rows[r]` of the last step), the row it was at each step: [time, batch].

    `rows_per_step` [time, batch]: at step t, the row of step t-1 that row r extends; `steps`: how many steps ran."""
    rows = permute(rows_per_step, [time, batch_dim])
    one = convert_to_tensor(1, dtype="int32")

    def step(s):
        t = steps - one - s["r"]
        at_t = gather(rows, indices=t, axis=time)  # [batch]
        return {"r": s["r"] + one, "row": gather_batch(at_t, s["row"]),
                "stack": step_stack_write(s["stack"], s["r"], s["row"])}

    start = {"r": convert_to_tensor(0, dtype="int32"), "row": final_rows,
             "stack": step_stack(final_rows.data)}
    final = while_loop(lambda s: s["r"] < steps, step, start)
    reversed_rows = step_stack_stack(final["stack"], time)  # step T-1 first
    backend = backend_for(steps)
    order = backend.combine_raw(backend.combine_raw(steps.raw, "sub", 1), "sub", backend.range_raw(steps.raw, "int32"))
    return gather(reversed_rows, indices=Tensor(Data("steps", [time], "int32"), order), axis=time)
