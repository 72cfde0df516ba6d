"""The scores a training run records per epoch: their names, nested ones flattened, and RETURNN's ":exp" ones."""

from __future__ import annotations

import math
from typing import Any, Dict, List, Mapping, Sequence


def score_names(loss_layers: Sequence[str], with_dev: bool = False, eval_names: Sequence[str] = ()) -> List[str]:
    """The scores a training run records per epoch for its loss layers: "train_score_<layer>",
    "train_error_<layer>", and the same with "dev_" when there is a dev set and with "<name>_" for each of the
    datasets it scores after each epoch (`eval_names`: dev, eval, eval_datasets)."""
    prefixes = ["train"] + (["dev"] if with_dev else [])
    prefixes += [name for name in eval_names if name not in prefixes]
    return [f"{prefix}_{kind}_{layer}" for prefix in prefixes for layer in loss_layers for kind in ("score", "error")]


def _flatten_scores(scores: Mapping[str, Any]) -> Dict[str, float]:
    """{"dev_score": {"output": 1.2}} -> {"dev_score_output": 1.2}; values become floats."""
    flat: Dict[str, float] = {}
    for key, value in scores.items():
        if isinstance(value, Mapping):
            if len(value) == 1:
                flat[str(key)] = float(next(iter(value.values())))
                continue
            for sub, sub_value in value.items():
                sub = str(sub)
                sub = sub[sub.index(":") + 1:] if ":" in sub else sub
                flat[f"{key}_{sub}"] = float(sub_value)
        else:
            flat[str(key)] = float(value)
    return flat


def with_exp_scores(scores: Dict[str, Any]) -> Dict[str, Any]:
    """`scores` and, for each score (not error) "<prefix>_score<_layer>", "<...>:exp" = exp(score) (inf when it
    overflows), as RETURNN's calculate_exp_loss adds them. Values None stay None (names only)."""
    def exp(value):
        if value is None:
            return None
        try:
            return math.exp(value)
        except OverflowError:
            return math.inf
    result = dict(scores)
    result.update({f"{key}:exp": exp(value) for key, value in scores.items()
                   if "_score" in key and not key.endswith(":exp")})
    return result
