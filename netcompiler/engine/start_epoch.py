"""Which epoch training starts with: RETURNN's `start_epoch` setting, and restoring the checkpoint it needs."""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Tuple

from ..errors import InvalidOptionError
from ..limits import is_int


def start_epoch_setting(value: Any) -> Optional[int]:
    """RETURNN's `start_epoch`: "auto" (None here: after the newest complete checkpoint) or the first epoch to
    train, a whole number >= 1 (epoch N starts from the checkpoint of epoch N-1)."""
    if value is None or value == "auto":
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if not is_int(value) or value < 1:
        raise InvalidOptionError(f"expected 'auto' or an epoch >= 1, got {value!r}", subject="config key 'start_epoch'",
                                 suggestion="use start_epoch = 'auto' (resume after the newest checkpoint)")
    return int(value)


def restore_for_start_epoch(manager, start: Optional[int], objects: Mapping[str, Any]
                            ) -> Optional[Tuple[int, Dict[str, Any]]]:
    """Restores what training from epoch `start` needs (None: the newest checkpoint); returns (epoch restored,
    extra), or None to start from scratch. Checkpoints of epochs >= `start` are never overwritten: refused."""
    if start is None:
        return manager.restore_latest(objects)
    complete = dict(manager.complete())
    later = [path for epoch, path in sorted(complete.items()) if epoch >= start]
    if later:
        raise InvalidOptionError(
            f"start_epoch = {start}, but checkpoints of epoch {start} and later exist ({', '.join(later[:3])}"
            f"{', ...' if len(later) > 3 else ''}); they are never overwritten", subject="config key 'start_epoch'",
            suggestion="remove them, use another 'model' path, or start_epoch = 'auto'")
    if start == 1:
        return None
    previous = complete.get(start - 1)
    if previous is None:
        have = ", ".join(str(epoch) for epoch in sorted(complete)) or "none"
        raise InvalidOptionError(
            f"start_epoch = {start} starts from the checkpoint of epoch {start - 1} ('{manager.path_for(start - 1)}'),"
            f" which does not exist (complete checkpoints of epochs: {have})", subject="config key 'start_epoch'",
            suggestion="use start_epoch = 'auto', or an epoch right after an existing checkpoint")
    return start - 1, manager.restore(previous, objects)
