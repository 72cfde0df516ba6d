"""Learning-rate control: which learning rate each epoch trains with.

The config keys keep the meaning RETURNN gives them:

* ``learning_rate`` (default 1.0): the rate of the first epoch.
* ``learning_rates``: explicit rates for the first epochs, a list (epoch 1, 2, ...)
  or a dict ``{epoch: rate}``. Those epochs use exactly these rates; later epochs
  continue from the last one by the control rule.
* ``learning_rate_control``: the rule for the following epochs:

  - ``"constant"`` (default): keep the previous epoch's rate.
  - ``"newbob"`` / ``"newbob_rel"``: relative change of the decisive score
    between the two previous epochs, ``(new - old) / |new|`` (or ``/ |old|``
    with ``newbob_relative_error_div_by_old``). If it is *greater* than
    ``newbob_relative_error_threshold`` (default -0.01), i.e. the score improved
    by less than 1 %, the rate is multiplied by ``newbob_learning_rate_decay``
    (default 0.5). With ``learning_rate_control_relative_error_relative_lr`` the
    relative change is first divided by ``rate / learning_rate``.
  - ``"newbob_abs"``: the same with the absolute change ``new - old`` compared
    to ``newbob_error_threshold`` (default -0.01).
  - ``"newbob_multi_epoch"``: the mean of the relative changes over the last
    ``newbob_multi_num_epochs`` (default 5) epoch pairs decides, and the rate is
    only reconsidered every ``newbob_multi_update_interval`` epochs (default:
    ``newbob_multi_num_epochs``), at epochs 1, 1 + interval, 1 + 2 * interval, ...

  A decayed rate never goes below ``min_learning_rate`` (default 0).
* ``newbob_learning_rate_growth`` (default 1.0, a factor or a function rate ->
  rate): as in RETURNN, the newbob rules multiply the rate by it whenever they
  decide and do not decay (``newbob_rel``/``newbob_abs``: the change is not over
  the threshold; ``newbob_multi_epoch``: the mean change is below
  ``newbob_relative_error_grow_threshold``, default
  ``newbob_relative_error_threshold``). A grown rate is not capped.
* ``learning_rate_control_min_num_epochs_per_new_lr`` (default 0): with N > 1, a
  rate is kept for at least N epochs: while the last N epochs before this one
  (those the history knows) had different rates, or fewer than N epochs are
  known, the previous rate is kept without asking the rule.
* ``dynamic_learning_rate``: a rate per training step computed from the epoch's
  rate chosen here (module `dynamic_learning_rate`).
* ``learning_rate_control_error_measure``: which recorded score decides (a key,
  or a list of keys tried in order; ``KEY_output`` is tried after ``KEY``).
  Default: ``dev_score`` / ``dev_score_output``, else the first recorded
  ``dev_score_*`` (the first loss), else the first ``dev_*``, else the train
  score.
* ``learning_rate_file``: where the history (epoch -> rate, scores) is kept.
  Default: ``<model>.learning_rates.json`` next to the checkpoints. A resumed run
  reads it back and so continues the very same schedule: a rate, once chosen
  for an epoch, is stored and never recomputed.

The history file is JSON, written atomically (temporary file, then rename).
A RETURNN ``newbob.data`` file (a Python literal of ``EpochData(...)`` entries)
is also read, so a RETURNN run's schedule can be continued; it is written back
as JSON.

This module (`LearningRateControl`) and its helpers are pure Python (no
TensorFlow): the config keys' checks (`learning_rate_settings`), the recorded
scores (`epoch_scores`) and the history records and files
(`learning_rate_history`); their public names stay importable from here.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..errors import closest_match
from ..limits import is_int
from .epoch_scores import _flatten_scores, score_names, with_exp_scores  # noqa: F401  (importable from here)
from .learning_rate_history import FILE_FORMAT, FILE_VERSION, EpochRecord, read_history
from .learning_rate_settings import (
    KINDS, Decay, _as_float, _as_int, _check_decay, _check_error_measure, _check_kind, _check_learning_rates,
    _key_error,
)


class LearningRateControl:
    """Chooses the learning rate per epoch from the scores of the epochs before.

    Use: ``lr = control.learning_rate_for_epoch(epoch)`` before training an
    epoch, and ``control.record(epoch, {"train_score_output": ..,
    "dev_score_output": .., ...})`` after evaluating it. Both keep the history
    file up to date when the control has a `filename`.
    """

    def __init__(
        self,
        kind: str = "constant",
        learning_rate: float = 1.0,
        *,
        learning_rates: Any = None,
        decay: Decay = 0.5,
        relative_error_threshold: float = -0.01,
        error_threshold: float = -0.01,
        multi_num_epochs: int = 5,
        multi_update_interval: Optional[int] = None,
        min_learning_rate: float = 0.0,
        error_measure: Any = None,
        relative_error_relative_lr: bool = False,
        relative_error_div_by_old: bool = False,
        growth: Decay = 1.0,
        relative_error_grow_threshold: Optional[float] = None,
        min_num_epochs_per_new_lr: int = 0,
        filename: Optional[str] = None,
        exp_scores: bool = False,
    ):
        self.kind = _check_kind(kind)
        self.default_learning_rate = _as_float("learning_rate", learning_rate, minimum=0.0)
        self.decay = _check_decay(decay)
        self.relative_error_threshold = _as_float("newbob_relative_error_threshold", relative_error_threshold)
        self.error_threshold = _as_float("newbob_error_threshold", error_threshold)
        self.multi_num_epochs = _as_int("newbob_multi_num_epochs", multi_num_epochs)
        self.multi_update_interval = _as_int(
            "newbob_multi_update_interval",
            self.multi_num_epochs if multi_update_interval is None else multi_update_interval)
        self.min_learning_rate = _as_float("min_learning_rate", min_learning_rate, minimum=0.0)
        self.error_measure = _check_error_measure(error_measure)
        self.relative_error_relative_lr = bool(relative_error_relative_lr)
        self.relative_error_div_by_old = bool(relative_error_div_by_old)
        self.growth = _check_decay(growth, "newbob_learning_rate_growth")
        self.relative_error_grow_threshold = self.relative_error_threshold if relative_error_grow_threshold is None \
            else _as_float("newbob_relative_error_grow_threshold", relative_error_grow_threshold)
        if self.relative_error_grow_threshold > self.relative_error_threshold:  # RETURNN asserts here
            raise _key_error("newbob_relative_error_grow_threshold",
                             f"{self.relative_error_grow_threshold!r} is above newbob_relative_error_threshold "
                             f"{self.relative_error_threshold!r}: a mean change between them would both decay and "
                             "grow the rate", suggestion="set it to at most newbob_relative_error_threshold")
        self.min_num_epochs_per_new_lr = _as_int("learning_rate_control_min_num_epochs_per_new_lr",
                                                 min_num_epochs_per_new_lr, minimum=0)
        self.filename = filename
        self.exp_scores = bool(exp_scores)
        """`calculate_exp_loss`: each score "<name>" is also recorded as "<name>:exp" (its exp, a perplexity for
        a ce score), as RETURNN does; an error measure may name it (e.g. "dev_score_output:exp")."""
        self.epochs: Dict[int, EpochRecord] = {}
        if filename and os.path.exists(filename):
            self.load(filename)
        # Explicit rates apply where the history has no rate yet (a loaded history wins).
        self.explicit_learning_rates = _check_learning_rates(learning_rates)
        for epoch, rate in self.explicit_learning_rates.items():
            self.epochs.setdefault(epoch, EpochRecord(rate))

    # ----------------------------------------------------------------- config

    @classmethod
    def from_config(cls, values: Mapping[str, Any], model: Optional[str] = None) -> "LearningRateControl":
        """Builds the control from config settings; loads the history file if it exists.

        `model` is the checkpoint prefix (config key ``model``); the history is
        kept in ``learning_rate_file`` if set, else in ``<model>.learning_rates.json``,
        else (no model) not at all.
        """
        if model is None:
            model = values.get("model")
        filename = values.get("learning_rate_file")
        if filename is not None and not isinstance(filename, str):
            raise _key_error("learning_rate_file", f"expected a file name, got {filename!r}")
        if filename is None and model:
            filename = f"{model}.learning_rates.json"
        num_epochs = values.get("newbob_multi_num_epochs", 5)
        return cls(
            kind=values.get("learning_rate_control", "constant"),
            learning_rate=values.get("learning_rate", 1.0),
            learning_rates=values.get("learning_rates"),
            decay=values.get("newbob_learning_rate_decay", 0.5),
            relative_error_threshold=values.get("newbob_relative_error_threshold", -0.01),
            error_threshold=values.get("newbob_error_threshold", -0.01),
            multi_num_epochs=num_epochs,
            multi_update_interval=values.get("newbob_multi_update_interval", num_epochs),
            min_learning_rate=values.get("min_learning_rate", 0.0),
            error_measure=values.get("learning_rate_control_error_measure"),
            relative_error_relative_lr=values.get("learning_rate_control_relative_error_relative_lr", False),
            relative_error_div_by_old=values.get("newbob_relative_error_div_by_old", False),
            growth=values.get("newbob_learning_rate_growth", 1.0),
            relative_error_grow_threshold=values.get("newbob_relative_error_grow_threshold"),
            min_num_epochs_per_new_lr=values.get("learning_rate_control_min_num_epochs_per_new_lr", 0),
            filename=filename,
            exp_scores=values.get("calculate_exp_loss", False),
        )

    # --------------------------------------------------------------- schedule

    def learning_rate_for_epoch(self, epoch: int) -> float:
        """The rate epoch `epoch` (1-based) trains with; chosen once, then remembered."""
        if not is_int(epoch) or epoch < 1:
            raise ValueError(f"epochs count from 1, got {epoch!r}")
        epoch = int(epoch)  # the history keeps plain ints (a NumPy int reads np.int64(3) in messages)
        record = self.epochs.get(epoch)
        if record is None:
            record = self.epochs[epoch] = EpochRecord(self._new_learning_rate(epoch))
            self.save()
        return record.learning_rate

    def record(self, epoch: int, scores: Mapping[str, Any]) -> None:
        """Stores the scores measured after training `epoch` (and saves the history)."""
        scores = with_exp_scores(_flatten_scores(scores)) if self.exp_scores else _flatten_scores(scores)
        if self.error_measure is not None and scores and self._measure_key(scores) is None:
            wanted = self.error_measure[0]
            near = closest_match(wanted, scores)
            raise _key_error(
                "learning_rate_control_error_measure",
                f"score {wanted!r} is not among the scores of epoch {epoch} ({', '.join(sorted(scores))})",
                suggestion=f"did you mean {near!r}?" if near else "set it to one of these score names")
        if epoch not in self.epochs:
            self.learning_rate_for_epoch(epoch)
        self.epochs[epoch].scores.update(scores)
        self.save()

    def check_error_measure(self, names: Sequence[str]) -> None:
        """Before training: `learning_rate_control_error_measure` must name one of the scores the run will record
        (`names`), else the first epoch would end in this error, after all its work."""
        if self.exp_scores:
            names = list(with_exp_scores(dict.fromkeys(names)))
        if self.error_measure is None or self._measure_key(dict.fromkeys(names)) is not None:
            return
        wanted = self.error_measure[0]
        near = closest_match(wanted.split(":")[0], names)
        extra = " (':exp' scores are recorded only with calculate_exp_loss = True, as in RETURNN)" \
            if ":exp" in wanted and not self.exp_scores else ""
        raise _key_error("learning_rate_control_error_measure",
                         f"score {wanted!r} is not among the scores this run records "
                         f"({', '.join(names) or 'none'}){extra}",
                         suggestion=f"did you mean {near!r}?" if near else "set it to one of these score names")

    def forget_after(self, epoch: int) -> None:
        """Drops what is recorded for epochs after `epoch` (when training restarts from there)."""
        before = self.to_json()
        for e in [e for e in self.epochs if e > epoch]:
            del self.epochs[e]
        for e, rate in self.explicit_learning_rates.items():  # the config's rates for those epochs apply again
            if e > epoch:
                self.epochs[e] = EpochRecord(rate)
        if self.to_json() != before:
            self.save()

    def history(self) -> Dict[int, Tuple[float, Dict[str, float]]]:
        """epoch -> (learning rate, scores), in epoch order."""
        return {e: (r.learning_rate, dict(r.scores)) for e, r in sorted(self.epochs.items())}

    def error_key(self, scores: Mapping[str, float]) -> Optional[str]:
        """Which of `scores` decides about the learning rate."""
        if not scores:
            return None
        key = self._measure_key(scores) if self.error_measure is not None else None
        if key is not None:
            return key
        for key in ("dev_score", "dev_score_output"):
            if key in scores:
                return key
        for prefix in ("dev_score_", "dev_"):
            for key in scores:
                if key.startswith(prefix):
                    return key
        for key in ("train_score", "train_score_output"):
            if key in scores:
                return key
        for key in scores:
            if key.startswith("train_score_"):
                return key
        return next(iter(scores))

    def _measure_key(self, scores: Mapping[str, float]) -> Optional[str]:
        for key in self.error_measure or ():
            for candidate in (key, key + "_output"):
                if candidate in scores:
                    return candidate
        return None

    def _score(self, epoch: int) -> Tuple[Optional[str], Optional[float]]:
        record = self.epochs.get(epoch)
        if record is None or not record.scores:
            return None, None
        key = self.error_key(record.scores)
        return key, record.scores[key]

    def _previous_epochs(self, epoch: int, count: int) -> List[int]:
        """The last `count` epochs before `epoch` that the history knows."""
        return sorted(e for e in self.epochs if e < epoch)[-count:]

    def _most_recent_learning_rate(self, epoch: int, include_current: bool = False) -> float:
        for e in sorted(self.epochs, reverse=True):
            if e < epoch or (include_current and e == epoch):
                return self.epochs[e].learning_rate
        return self.default_learning_rate

    def relative_error(self, old_epoch: int, new_epoch: int) -> Optional[float]:
        """Relative change of the decisive score from `old_epoch` to `new_epoch` (None if unknown)."""
        old_key, old = self._score(old_epoch)
        new_key, new = self._score(new_epoch)
        if old is None or new is None or old_key != new_key:
            return None
        denominator = abs(old) if self.relative_error_div_by_old else abs(new)
        if denominator == 0.0:
            # RETURNN divides by zero here; a score of exactly 0 that did not change is no change.
            return 0.0 if new == old else math.copysign(math.inf, new - old)
        relative = (new - old) / denominator
        if self.relative_error_relative_lr:
            rate = self._most_recent_learning_rate(new_epoch, include_current=True)
            if rate > 0 and self.default_learning_rate > 0:
                relative /= rate / self.default_learning_rate
        return relative

    def _decayed_or_grown(self, rate: float, decay: bool, grow: bool) -> float:
        """RETURNN's order: a decayed rate is raised to min_learning_rate; growth is applied uncapped."""
        if decay:
            rate = float(self.decay(rate)) if callable(self.decay) else rate * self.decay
            rate = max(rate, self.min_learning_rate)
        if grow:
            rate = float(self.growth(rate)) if callable(self.growth) else rate * self.growth
        return rate

    def _new_learning_rate(self, epoch: int) -> float:
        if self.min_num_epochs_per_new_lr > 1:
            recent = [self.epochs[e].learning_rate
                      for e in self._previous_epochs(epoch, self.min_num_epochs_per_new_lr)]
            if len(set(recent)) >= 2 or 0 < len(recent) < self.min_num_epochs_per_new_lr:
                return recent[-1]  # the rate changed recently (or training just started): keep it
        return self._new_learning_rate_by_rule(epoch)

    def _new_learning_rate_by_rule(self, epoch: int) -> float:
        if self.kind == "newbob_multi_epoch":
            return self._new_learning_rate_multi_epoch(epoch)
        previous = self._previous_epochs(epoch, 2)
        if not previous:
            return self.default_learning_rate
        rate = self.epochs[previous[-1]].learning_rate
        if self.kind == "constant" or len(previous) < 2:
            return rate
        old_epoch, new_epoch = previous
        if self.kind == "newbob_abs":
            old_key, old = self._score(old_epoch)
            new_key, new = self._score(new_epoch)
            if old is None or new is None or old_key != new_key:
                return rate
            decay = new - old > self.error_threshold
            return self._decayed_or_grown(rate, decay, not decay)
        relative = self.relative_error(old_epoch, new_epoch)
        if relative is None:
            return rate
        decay = relative > self.relative_error_threshold
        return self._decayed_or_grown(rate, decay, not decay)

    def _new_learning_rate_multi_epoch(self, epoch: int) -> float:
        rate = self._most_recent_learning_rate(epoch)
        if self.multi_update_interval > 1 and epoch % self.multi_update_interval != 1:
            return rate
        previous = self._previous_epochs(epoch, self.multi_num_epochs + 1)
        if len(previous) < 2:
            return rate
        changes = [self.relative_error(a, b) for a, b in zip(previous, previous[1:])]
        if any(c is None for c in changes):
            return rate
        mean = sum(changes) / len(changes)
        return self._decayed_or_grown(rate, mean > self.relative_error_threshold,
                                      mean < self.relative_error_grow_threshold)

    # ---------------------------------------------------------------- history

    def to_json(self) -> Dict[str, Any]:
        return {
            "format": FILE_FORMAT,
            "version": FILE_VERSION,
            "learning_rate_control": self.kind,
            "epochs": {str(e): {"learning_rate": r.learning_rate, "scores": r.scores}
                       for e, r in sorted(self.epochs.items())},
        }

    def save(self, path: Optional[str] = None) -> None:
        """Writes the history (to `path`, default: the control's file; no file: nothing)."""
        path = path or self.filename
        if not path:
            return
        directory = os.path.dirname(os.path.abspath(path))
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".tmp-", dir=directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(self.to_json(), f, indent=1)
                f.write("\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException as exc:
            if os.path.exists(tmp):
                os.unlink(tmp)
            if isinstance(exc, OSError) and exc.filename is None:  # a failed write: name the file (disk full)
                raise OSError(exc.errno, exc.strerror, path) from None
            raise

    def load(self, path: Optional[str] = None) -> None:
        """Replaces the history by the one in `path` (default: the control's file)."""
        path = path or self.filename
        if not path:
            raise ValueError("no learning-rate history file given")
        self.epochs = read_history(path)



__all__ = ["KINDS", "EpochRecord", "LearningRateControl", "read_history"]
