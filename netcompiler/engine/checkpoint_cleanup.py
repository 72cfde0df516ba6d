"""RETURNN's `cleanup_old_models`: which old checkpoints a training run keeps, and removing the others."""

from __future__ import annotations

import os
from typing import Any, List, Mapping, Optional, Sequence

from ..errors import InvalidOptionError, closest_match
from ..limits import is_int
from .checkpoint_files import INDEX_SUFFIX, _fsync_dir, _listdir, _split


COMPLETENESS_MARKERS = (INDEX_SUFFIX, ".pt")
"""The file whose existence makes a checkpoint complete (TensorFlow's, PyTorch's): removed first."""


class CleanupRules:
    """Which checkpoints `cleanup_old_models` keeps, with RETURNN's rules: the last `keep_last_n` (2), the best
    `keep_best_n` (4) by each recorded score, and the epochs in `keep` (default: a pattern over `num_epochs`,
    `default_keep_epochs`). Stricter than RETURNN: the newest checkpoint and the best one by each score are
    always kept, whatever the numbers say."""

    OPTIONS = ("keep_last_n", "keep_best_n", "keep")

    def __init__(self, keep_last_n: int = 2, keep_best_n: int = 4, keep: Optional[Sequence[int]] = None):
        self.keep_last_n = keep_last_n
        self.keep_best_n = keep_best_n
        self.keep = None if keep is None else set(keep)

    @classmethod
    def from_setting(cls, value: Any) -> Optional["CleanupRules"]:
        """The rules of the config value: None/False: no clean-up; True: the defaults; a dict: its options."""
        if value is None or value is False:
            return None
        if value is True:
            return cls()
        if not isinstance(value, dict):
            raise InvalidOptionError(f"expected True or a dict of {', '.join(cls.OPTIONS)}, got {value!r}",
                                     subject="config key 'cleanup_old_models'",
                                     suggestion="e.g. cleanup_old_models = {'keep_last_n': 2, 'keep_best_n': 4}")
        for key in value:
            if key not in cls.OPTIONS:
                guess = closest_match(str(key), cls.OPTIONS)
                raise InvalidOptionError(f"option {key!r} unknown (options: {', '.join(cls.OPTIONS)})",
                                         subject="config key 'cleanup_old_models'",
                                         suggestion=f"did you mean '{guess}'?" if guess else None)
        counts_default = {"keep_last_n": 2, "keep_best_n": 4}
        counts = {key: value.get(key, default) for key, default in counts_default.items()}
        for key, count in counts.items():
            if not is_int(count) or count < 0:
                raise InvalidOptionError(f"'{key}' must be a whole number >= 0, got {count!r}",
                                         subject="config key 'cleanup_old_models'", option=key,
                                         suggestion=f"e.g. '{key}': {counts_default[key]}")
        keep = value.get("keep")
        if keep is not None and (not isinstance(keep, (list, tuple, set, range)) or not all(
                is_int(e) for e in keep)):
            raise InvalidOptionError(f"'keep' must be a list of epochs, got {keep!r}",
                                     subject="config key 'cleanup_old_models'", option="keep",
                                     suggestion="e.g. 'keep': [10, 20] (these epochs are never removed)")
        return cls(int(counts["keep_last_n"]), int(counts["keep_best_n"]),
                   None if keep is None else [int(e) for e in keep])

    def epochs_to_keep(self, epochs: Sequence[int], scores: Mapping[int, Mapping[str, float]],
                       num_epochs: int) -> set:
        """The epochs among `epochs` (those with a checkpoint) whose checkpoints stay; `scores`: epoch ->
        recorded scores (lower is better, as in RETURNN)."""
        epochs = sorted(epochs)
        keep = set(self.keep if self.keep is not None else default_keep_epochs(num_epochs))
        keep.update(epochs[-max(self.keep_last_n, 1):])
        for key in sorted({key for epoch in epochs for key in scores.get(epoch, {})}):
            ranked = sorted((value, epoch) for epoch in epochs for k, value in scores.get(epoch, {}).items()
                            if k == key and value == value)  # NaN scores rank nowhere
            keep.update(epoch for _, epoch in ranked[:max(self.keep_best_n, 1)])
        return keep & set(epochs)

    def apply(self, manager, scores: Mapping[int, Mapping[str, float]], num_epochs: int) -> List[str]:
        """Removes the checkpoints of `manager` that the rules do not keep; returns their paths."""
        complete = dict(manager.complete())
        keep = self.epochs_to_keep(list(complete), scores, num_epochs)
        removed = []
        for epoch in sorted(set(complete) - keep):
            remove_checkpoint(manager.model_prefix, epoch)
            removed.append(complete[epoch])
        return removed


def default_keep_epochs(num_epochs: int) -> set:
    """RETURNN's default `keep` of cleanup_old_models: every `every`-th epoch and `first`, 2*`first`, 4*`first`,
    ... up to `num_epochs`, with (every, first) growing with the number of epochs."""
    if num_epochs <= 10:
        every, first = 4, 5
    elif num_epochs <= 50:
        every, first = 20, 5
    elif num_epochs <= 100:
        every, first = 40, 10
    else:
        every, first = 80 * _next_power_of_two(1 + num_epochs // 240), 20
    keep = set(range(every, num_epochs + 1, every))
    doubled = first
    while doubled <= num_epochs:
        keep.add(doubled)
        doubled *= 2
    return keep


def _next_power_of_two(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


def remove_checkpoint(model_prefix: str, epoch: int) -> None:
    """Deletes the checkpoint of `epoch` (any backend's files): its completeness marker first, so that a crash
    in between leaves an incomplete checkpoint, which the next run's clean-up removes."""
    directory, base = _split(model_prefix)
    stem = f"{base}.{epoch:03d}."
    names = [n for n in _listdir(directory) if n.startswith(stem)]
    for name in sorted(names, key=lambda n: not n.endswith(COMPLETENESS_MARKERS)):
        path = os.path.join(directory, name)
        if os.path.isdir(path):
            continue
        os.unlink(path)
    _fsync_dir(directory)
