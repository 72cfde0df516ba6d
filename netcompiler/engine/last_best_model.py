"""RETURNN's `use_last_best_model`: before an epoch, if the previous epoch is not the best one so far, training
goes on from the parameters of the best one (its checkpoint) with a fresh optimizer.

`use_last_best_model = True` or a dict of RETURNN's options:

* `modulo` (default 1): look only before epochs divisible by it -- and also before any other epoch whose
  previous epoch scored worse than `filter_score`;
* `filter_score` (default inf): epochs scoring worse than this are never the best;
* `only_last_epochs`: consider only the last N epochs; `only_last_n`: of the epochs left after filtering, only
  the last N; `first_epoch` (default: the number of pretraining epochs, or 1): consider epochs from this on;
* `min_score_dist` (default 0): an earlier epoch is better only when its score is lower by more than this.

The score is the one the learning-rate control decides by (`learning_rate_control_error_measure`, else the dev
score), read from the learning-rate history; only epochs with the same score key as the previous epoch compete.
Never in pretraining epochs. A best epoch whose checkpoint is gone (cleanup_old_models, save_interval) is skipped
with a notice.
"""

from __future__ import annotations

import math
import sys
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from ..errors import CheckpointError, ConfigError
from ..limits import is_int

_OPTIONS = ("modulo", "filter_score", "only_last_n", "only_last_epochs", "min_score_dist", "first_epoch")


def last_best_epoch(history: Mapping[int, Tuple[float, Dict[str, float]]], error_key: Callable, last_epoch: int,
                    first_epoch: int = 1, only_last_epochs: Optional[int] = None, filter_score: float = math.inf,
                    only_last_n: int = -1, min_score_dist: float = 0.0) -> Optional[int]:
    """The best epoch among `first_epoch` .. `last_epoch` by the rules above (None if there is none);
    `history` is epoch -> (learning rate, scores), `error_key(scores)` the score that decides."""
    if only_last_epochs:
        first_epoch = max(first_epoch, last_epoch - only_last_epochs + 1)
    scored = []
    for epoch in range(first_epoch, last_epoch + 1):
        scores = history.get(epoch, (None, {}))[1]
        if scores:
            key = error_key(scores)
            scored.append((key, scores[key], epoch))
    if not scored:
        return None
    last_key, latest = scored[-1][0], scored[-1][1]
    candidates = [(value, epoch) for key, value, epoch in scored if key == last_key and value <= filter_score]
    if only_last_n >= 1:
        candidates = candidates[-only_last_n:]
    candidates = [(value, epoch) for value, epoch in candidates if value + min_score_dist < latest]
    return min(candidates)[1] if candidates else None


class LastBestModel:
    """The `use_last_best_model` rule of one training run."""

    def __init__(self, options: Dict[str, Any], num_pretrain_epochs: int = 0, log=sys.stdout):
        self.modulo = options.pop("modulo", 1)
        if not is_int(self.modulo) or self.modulo < 1:
            raise ConfigError(f"option 'modulo' must be a whole number >= 1, got {self.modulo!r}",
                              subject="config key 'use_last_best_model'",
                              suggestion="e.g. use_last_best_model = {'modulo': 1}")
        self.modulo = int(self.modulo)
        options.setdefault("first_epoch", num_pretrain_epochs or 1)
        self.options = options
        self.num_pretrain_epochs = num_pretrain_epochs
        self.log = log

    @classmethod
    def from_config(cls, value: Any, num_pretrain_epochs: int = 0, log=sys.stdout) -> Optional["LastBestModel"]:
        if value is None or value is False:
            return None
        if value is True:
            value = {}
        if not isinstance(value, dict) or any(key not in _OPTIONS for key in value):
            raise ConfigError(f"expected True or a dict with keys among {', '.join(_OPTIONS)}, got {value!r}",
                              subject="config key 'use_last_best_model'",
                              suggestion="e.g. use_last_best_model = {'modulo': 5, 'only_last_n': 3}")
        return cls(dict(value), num_pretrain_epochs, log)

    def epoch_to_reload(self, epoch: int, control) -> Optional[int]:
        """Before training `epoch`: the better epoch to continue from, or None to go on from epoch - 1."""
        if epoch <= max(self.num_pretrain_epochs, 1):
            return None
        history = control.history()
        previous = history.get(epoch - 1, (None, {}))[1]
        if epoch % self.modulo != 0:
            score = previous[control.error_key(previous)] if previous else 0
            if score <= self.options.get("filter_score", math.inf):
                return None
        best = last_best_epoch(history, control.error_key, epoch - 1, **self.options)
        return best if best is not None and best != epoch - 1 else None

    def reload_if_better(self, session, epoch: int, control, checkpoints) -> bool:
        """Loads the parameters of the best epoch's checkpoint into the session's model if the previous epoch is
        not the best; returns whether it did (then the optimizer starts afresh, as in RETURNN)."""
        from .checkpoint_interchange import load_params

        best = self.epoch_to_reload(epoch, control)
        if best is None:
            return False
        path = dict(checkpoints.complete()).get(best)
        scores = control.history()[best][1]
        score = f"{control.error_key(scores)} {scores[control.error_key(scores)]:g}"
        if path is None:
            print(f"notice: use_last_best_model: epoch {best} scored best ({score}), but its checkpoint is gone; "
                  f"epoch {epoch} goes on from epoch {epoch - 1}", file=sys.stderr)
            return False
        try:
            load_params(path, session.model.params, session.model.backend)
        except CheckpointError as exc:  # e.g. get_network gave that epoch another network: go on from epoch - 1
            print(f"notice: use_last_best_model: the checkpoint of epoch {best} does not fit the network of epoch "
                  f"{epoch} ({exc}); epoch {epoch} goes on from epoch {epoch - 1}", file=sys.stderr)
            return False
        print(f"epoch {epoch}: epoch {epoch - 1} is not the best; going on from epoch {best} ({score}, {path}) "
              f"with a fresh optimizer (use_last_best_model)", file=self.log)
        return True
