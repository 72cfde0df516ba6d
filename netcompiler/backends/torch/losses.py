"""The PyTorch backend's ops for losses: packing valid frames, one-hot vectors, cross entropies, CTC (loss
with `torch.nn.functional.ctc_loss`, greedy decoding and a prefix beam search, label collapsing) and edit
distance (a small dynamic programme per sequence), each with the meaning the TensorFlow backend's op has."""

from __future__ import annotations

from typing import Any, List, Optional

import numpy as np
import torch
import torch.nn.functional as F

from .core import full_precision, torch_dtype


def _padded(rows: List[List[int]], fill: int) -> Any:
    """Int32 [B, longest row]: the rows, padded with `fill`; and their lengths [B]."""
    width = max((len(r) for r in rows), default=0)
    out = torch.full((len(rows), width), fill, dtype=torch.int32)
    for b, row in enumerate(rows):
        out[b, :len(row)] = torch.tensor(row, dtype=torch.int32)
    return out, torch.tensor([len(r) for r in rows], dtype=torch.int32)


def _rows(labels: Any, lengths: Any) -> List[List[int]]:
    return [labels[b, :int(n)].tolist() for b, n in enumerate(lengths)]


def _prefix_beam_search(log_probs: Any, blank: int, beam_width: int) -> List[int]:
    """The most probable labelling of one sequence's frames [T, classes] (log probabilities) under CTC, by a
    prefix beam search keeping `beam_width` prefixes, as TF's ctc_beam_search_decoder (repeats not merged)."""
    beams = {(): (0.0, -np.inf)}  # prefix -> (log p ending in blank, log p ending in its last label)
    for frame in log_probs:
        new = {}

        def add(prefix, blank_p=-np.inf, label_p=-np.inf):
            old_blank, old_label = new.get(prefix, (-np.inf, -np.inf))
            new[prefix] = (np.logaddexp(old_blank, blank_p), np.logaddexp(old_label, label_p))

        for prefix, (p_blank, p_label) in beams.items():
            total = np.logaddexp(p_blank, p_label)
            add(prefix, blank_p=total + frame[blank])
            if prefix:  # the last label repeated without a blank between: the same prefix
                add(prefix, label_p=p_label + frame[prefix[-1]])
            for c in range(len(frame)):
                if c == blank:
                    continue
                from_parent = p_blank if prefix and c == prefix[-1] else total
                add(prefix + (c,), label_p=from_parent + frame[c])
        ranked = sorted(new.items(), key=lambda item: -np.logaddexp(*item[1]))
        beams = dict(ranked[:beam_width])
    return list(max(beams.items(), key=lambda item: np.logaddexp(*item[1]))[0])


class LossOps:
    """Ops that losses need, on `torch.Tensor`s."""

    @classmethod
    def boolean_mask_raw(cls, raw: Any, mask: Any) -> Any:
        return raw[mask]

    @classmethod
    def one_hot_raw(cls, indices: Any, depth: int, dtype: str) -> Any:
        # as tf.one_hot: an index outside [0, depth) gives a row of zeros
        return (indices.unsqueeze(-1).to(torch.int64) == torch.arange(depth)).to(torch_dtype(dtype))

    @classmethod
    def softmax_cross_entropy_with_logits_raw(cls, logits: Any, labels: Any) -> Any:
        if not labels.dtype.is_floating_point:
            flat = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1).to(torch.int64),
                                   reduction="none")
            return flat.reshape(labels.shape)
        return -torch.sum(labels * torch.log_softmax(full_precision(logits), dim=-1), dim=-1)

    @classmethod
    def sigmoid_cross_entropy_with_logits_raw(cls, logits: Any, labels: Any, pos_weight: Optional[float]) -> Any:
        weight = None if pos_weight is None else torch.as_tensor(pos_weight, dtype=logits.dtype)
        return F.binary_cross_entropy_with_logits(logits, labels, reduction="none", pos_weight=weight)

    @classmethod
    def ctc_loss_raw(cls, logits: Any, logit_lengths: Any, labels: Any, label_lengths: Any, blank_index: int) -> Any:
        blank = blank_index % logits.shape[-1]
        args = (labels.to(torch.int64), logit_lengths.to(torch.int64), label_lengths.to(torch.int64))
        log_probs = torch.log_softmax(full_precision(logits), dim=-1)
        loss = F.ctc_loss(log_probs, *args, blank=blank, reduction="none", zero_infinity=True)
        with torch.no_grad():
            infeasible = torch.isinf(F.ctc_loss(log_probs.detach(), *args, blank=blank, reduction="none"))
        if not bool(infeasible.any()):
            return loss
        # as TF: a sequence without a valid path costs inf, and its logits get the gradient softmax(logits) (the
        # gradient of the sum of its frames' logsumexp); torch would give NaN
        valid = torch.arange(logits.shape[0]).unsqueeze(1) < logit_lengths.unsqueeze(0)  # [T, B]
        pull = torch.sum(torch.where(valid, torch.logsumexp(logits, dim=-1), 0.0), dim=0)
        pull = torch.where(infeasible, pull, torch.zeros_like(pull))
        return loss + (pull - pull.detach()) + torch.where(infeasible, float("inf"), 0.0).to(loss.dtype)

    @classmethod
    def ctc_decode_raw(cls, logits: Any, lengths: Any, beam_width: int):
        blank = logits.shape[-1] - 1
        if beam_width > 1:
            log_probs = torch.log_softmax(logits.detach(), dim=-1).to(torch.float64).numpy()
            return _padded([_prefix_beam_search(log_probs[:int(n), b], blank, beam_width)
                            for b, n in enumerate(lengths)], -1)
        best = torch.argmax(logits, dim=-1).t()  # [B, T]
        rows = []
        for b, n in enumerate(lengths):
            row, last = [], None
            for label in best[b, :int(n)].tolist():
                if label != last and label != blank:
                    row.append(label)
                last = label
            rows.append(row)
        return _padded(rows, -1)

    @classmethod
    def collapse_repeated_raw(cls, labels: Any, lengths: Any):
        rows = []
        for row in _rows(labels, lengths):
            rows.append([v for i, v in enumerate(row) if i == 0 or v != row[i - 1]])
        out, new_lengths = _padded(rows, 0)
        return out.to(labels.dtype), new_lengths

    @classmethod
    def edit_distance_raw(cls, a: Any, a_lengths: Any, b: Any, b_lengths: Any) -> Any:
        distances = []
        for x, y in zip(_rows(a, a_lengths), _rows(b, b_lengths)):
            previous = list(range(len(y) + 1))
            for i, u in enumerate(x, 1):
                current = [i]
                for j, v in enumerate(y, 1):
                    current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (u != v)))
                previous = current
            distances.append(previous[-1])
        return torch.tensor(distances, dtype=torch.float32)
