"""What the checkpoint managers of both backends share, without importing any framework: the model prefix, the
paths and listing of complete checkpoints, the user's error for a failed write (full disk, folder not writable),
the hint at the previous checkpoint, and `NoCheckpoints` (``model = None``).

`checkpoints.CheckpointManager` (TensorFlow) and `torch_checkpoints.TorchCheckpointManager` add writing and
restoring; a PyTorch run therefore never loads TensorFlow for its checkpoints.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ..errors import DISK_FULL_ERRNOS, NOT_WRITABLE_ERRNOS, CheckpointError
from .checkpoint_files import (
    _first_line, _split, checkpoint_path, complete_checkpoints, latest_complete, remove_incomplete, with_previous_hint,
)

_DISK_FULL_TEXTS = ("No space left on device", "Disk quota exceeded")


def _tf_op_error_types() -> Tuple[type, ...]:
    """TensorFlow's OpError, PermissionDeniedError, FailedPreconditionError if TensorFlow is loaded, else ():
    an error raised in a process without TensorFlow is no TensorFlow error (and checking must not load it)."""
    tf = sys.modules.get("tensorflow")
    errors = getattr(tf, "errors", None)
    if errors is None:
        return ()
    return errors.OpError, errors.PermissionDeniedError, errors.FailedPreconditionError


def is_disk_full(exc: BaseException) -> bool:
    """True for an OSError ENOSPC/EDQUOT or TensorFlow's error for the same (ResourceExhaustedError, ...)."""
    if isinstance(exc, OSError) and exc.errno in DISK_FULL_ERRNOS:
        return True
    tf_errors = _tf_op_error_types()
    text = getattr(exc, "message", None) or str(exc)
    return bool(tf_errors) and isinstance(exc, tf_errors[0]) and any(t in text for t in _DISK_FULL_TEXTS)


def storage_failure(exc: BaseException) -> Optional[str]:
    """What a failed write says about the storage, as ModelFolderError's reasons: "disk full" (`is_disk_full`),
    "not writable" (an OSError EACCES/EPERM/EROFS), or None for anything else."""
    if is_disk_full(exc):
        return "disk full"
    if isinstance(exc, OSError) and exc.errno in NOT_WRITABLE_ERRNOS:
        return "not writable"
    return None


def last_complete_text(latest: Optional[Tuple[int, str]], resume_once: str = "") -> str:
    """The part of a failed write's message about the newest complete checkpoint `latest` (epoch, path): it is
    intact; with `resume_once` ("once there is space"), how training goes on from it."""
    if latest is None:
        return "there is no complete checkpoint yet"
    text = f"the last complete checkpoint is '{latest[1]}' (intact)"
    return f"{text}: run again to resume after epoch {latest[0]} {resume_once}" if resume_once else text


class CheckpointManagerBase:
    """One model prefix's checkpoints: paths, the complete ones, the newest; `save` and `restore` are the
    backend's (subclasses). Leftovers of an interrupted write are removed on creation unless ``clean=False``."""

    def __init__(self, model_prefix: str, clean: bool = True):
        if not isinstance(model_prefix, str) or not model_prefix:
            raise CheckpointError(f"model prefix must be a file prefix like 'out/model', got {model_prefix!r}")
        self.model_prefix = model_prefix
        self.directory, self.base = _split(model_prefix)
        # `clean=False` for a reader that holds no lock: what looks left over may be another run's write
        self.removed_leftovers = remove_incomplete(model_prefix) if clean else []

    def path_for(self, epoch: int) -> str:
        return checkpoint_path(self.model_prefix, epoch)

    def complete(self) -> List[Tuple[int, str]]:
        return complete_checkpoints(self.model_prefix)

    def latest_complete(self) -> Optional[Tuple[int, str]]:
        return latest_complete(self.model_prefix)

    def latest_path(self) -> Optional[str]:
        """Path (prefix) of the newest complete checkpoint, or None."""
        latest = self.latest_complete()
        return latest[1] if latest else None

    def save(self, epoch: int, objects: Mapping[str, Any], extra: Optional[Mapping[str, Any]] = None,
             *, overwrite: bool = False) -> str:
        raise NotImplementedError

    def restore(self, path: str, objects: Mapping[str, Any]) -> Dict[str, Any]:
        raise NotImplementedError

    def _write_problem(self, exc: BaseException, final: str, complete_marker: str = "") -> Optional[CheckpointError]:
        """The user's error for a failed write (full disk, folder not writable), or None for anything else
        (also when the file `final + complete_marker` that marks the checkpoint complete exists after all)."""
        if os.path.exists(final + complete_marker):
            return None  # the checkpoint is complete after all (only the final fsync failed)
        latest = self.latest_complete()
        failure = storage_failure(exc)
        if failure == "disk full":
            return CheckpointError(
                f"the disk is full: checkpoint '{final}' could not be written in '{self.directory}' "
                f"({_first_line(exc)}); nothing of it was kept; {last_complete_text(latest, 'once there is space')}")
        writable_again = last_complete_text(latest, "once the folder is writable")
        if failure == "not writable":
            return CheckpointError(
                f"checkpoint '{final}' cannot be written: '{exc.filename or self.directory}': "
                f"{exc.strerror}; {writable_again}")
        tf_errors = _tf_op_error_types()
        if tf_errors and (isinstance(exc, tf_errors[1:]) or (
                isinstance(exc, tf_errors[0]) and "Read-only file system" in str(exc))):
            return CheckpointError(
                f"checkpoint '{final}' cannot be written in '{self.directory}' ({_first_line(exc)}); "
                f"{writable_again}")
        return None

    def _rename_into_place(self, source: str, target: str) -> None:
        """One step of `save`; a separate method so tests can simulate a crash between steps."""
        os.replace(source, target)

    def with_previous_hint(self, error: CheckpointError, path: str, *, training: bool) -> CheckpointError:
        """`with_previous_hint` for this manager's checkpoints."""
        return with_previous_hint(error, self.model_prefix, path, training=training)

    def restore_latest(self, objects: Mapping[str, Any]) -> Optional[Tuple[int, Dict[str, Any]]]:
        """Restores from the newest complete checkpoint: (epoch, extra), or None if there is none."""
        latest = self.latest_complete()
        if latest is None:
            return None
        epoch, path = latest
        return epoch, self.restore(path, objects)


class NoCheckpoints:
    """The checkpoints of a training run with `model = None` (RETURNN: no model is saved): none are found and
    none are written. Restoring a given path (`import_model_train_epoch1`) goes to `reader`, a manager made
    with clean=False (it touches no files)."""

    def __init__(self, reader):
        self.reader = reader
        self.model_prefix = reader.model_prefix

    def complete(self) -> List[Tuple[int, str]]:
        return []

    def latest_complete(self) -> None:
        return None

    def latest_path(self) -> None:
        return None

    def restore_latest(self, objects: Mapping[str, Any]) -> None:
        return None

    def save(self, epoch: int, objects: Mapping[str, Any], extra: Optional[Mapping[str, Any]] = None,
             *, overwrite: bool = False) -> None:
        return None

    def restore(self, path: str, objects: Mapping[str, Any]) -> Dict[str, Any]:
        return self.reader.restore(path, objects)

    def with_previous_hint(self, error: CheckpointError, path: str, *, training: bool) -> CheckpointError:
        return error
