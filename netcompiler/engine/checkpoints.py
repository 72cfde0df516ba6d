"""Checkpoints: one per saved epoch, written so that a crash never leaves a half one (`CheckpointManager`).

Writing is atomic: the checkpoint and the sidecar are written under a temporary
prefix ``<model>.tmp-...`` in the same directory, flushed to disk, then renamed
into place, the ``.index`` file last. A crash at any moment therefore leaves
either the complete checkpoint or none. Leftovers of an interrupted write are
removed when the next `CheckpointManager` for the same model starts (which
files those are: `checkpoint_files`).

Existing complete checkpoints are never rewritten or deleted (unless
`save(..., overwrite=True)`). A full disk during `save` gives `CheckpointError`
saying so and naming the last complete checkpoint, which stays intact; the
pieces written so far are removed. Restoring is strict (`checkpoint_reading`).

The pieces live in their own modules; their public names stay importable from
here: file names and leftovers (`checkpoint_files`), strict restore
(`checkpoint_reading`), parameters as arrays (`checkpoint_params`), the start
epoch (`start_epoch`), RETURNN's clean-up of old models (`checkpoint_cleanup`).
"""

from __future__ import annotations

import json
import os
import uuid
from typing import Any, Dict, Mapping, Optional

import tensorflow as tf

from ..errors import CheckpointError
from .checkpoint_manager_base import CheckpointManagerBase, NoCheckpoints, is_disk_full  # noqa: F401
from .checkpoint_cleanup import COMPLETENESS_MARKERS, CleanupRules, default_keep_epochs, remove_checkpoint  # noqa: F401
from .checkpoint_files import (  # noqa: F401  (names used by torch_checkpoints and tests)
    _TMP_MARK, INDEX_SUFFIX, SIDECAR_FORMAT, SIDECAR_SUFFIX, SIDECAR_VERSION, _first_line, _fsync_dir, _fsync_file,
    _listdir, _marked, _remove_quietly, _split, checkpoint_path, complete_checkpoints, latest_complete,
    read_sidecar, remove_incomplete, with_previous_hint,
)
from .checkpoint_params import is_name_based, read_name_based_params, read_tf_params  # noqa: F401
from .checkpoint_reading import _check_built, restore, verify_match  # noqa: F401
from .start_epoch import restore_for_start_epoch, start_epoch_setting  # noqa: F401


class CheckpointManager(CheckpointManagerBase):
    """Saves and restores the trainer's state per epoch under one model prefix.

    ``objects`` maps names to trackables (``{"model": net, "optimizer": opt,
    "rng": tf.random.Generator}``); ``extra`` is a JSON-serialisable dict kept in
    the sidecar (step count, dataset RNG state, ...).
    """

    def save(self, epoch: int, objects: Mapping[str, Any], extra: Optional[Mapping[str, Any]] = None,
             *, overwrite: bool = False) -> str:
        """Writes the checkpoint of `epoch` atomically; returns its path (prefix)."""
        if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 0:
            raise ValueError(f"epoch must be a whole number >= 0, got {epoch!r}")
        final = self.path_for(epoch)
        if os.path.exists(final + INDEX_SUFFIX):
            if not overwrite:
                raise CheckpointError(f"checkpoint '{final}' exists already; it is never overwritten")
            os.unlink(final + INDEX_SUFFIX)  # from now on the old one is incomplete
            _fsync_dir(self.directory)
        sidecar = {"format": SIDECAR_FORMAT, "version": SIDECAR_VERSION, "epoch": epoch,
                   "objects": sorted(objects), "extra": dict(extra or {})}
        sidecar_text = json.dumps(sidecar, indent=1, sort_keys=True)  # fails early if extra is not JSON
        os.makedirs(self.directory, exist_ok=True)
        tmp = os.path.join(self.directory, f"{self.base}{_TMP_MARK}{epoch:03d}-{uuid.uuid4().hex[:8]}")
        tmp_base = os.path.basename(tmp)
        try:
            written = tf.train.Checkpoint(**objects).write(tmp)
            if written != tmp:  # TF keeps the prefix as given; anything else would break the renames
                raise RuntimeError(f"TensorFlow wrote the checkpoint as {written!r}, expected {tmp!r}")
            with open(tmp + SIDECAR_SUFFIX, "w", encoding="utf-8") as f:
                f.write(sidecar_text + "\n")
            pieces = sorted(n for n in _listdir(self.directory) if n.startswith(tmp_base + "."))
            if tmp_base + INDEX_SUFFIX not in pieces:
                raise RuntimeError(f"TensorFlow wrote no index file for {tmp!r}")
            for name in pieces:
                _fsync_file(os.path.join(self.directory, name))
            pieces.remove(tmp_base + INDEX_SUFFIX)
            for name in pieces + [tmp_base + INDEX_SUFFIX]:  # the index last: it marks completeness
                self._rename_into_place(os.path.join(self.directory, name),
                                        final + name[len(tmp_base):])
            _fsync_dir(self.directory)
        except Exception as exc:
            problem = self._write_problem(exc, final, INDEX_SUFFIX)
            if problem is None:
                raise
            raise problem from None
        finally:
            _remove_quietly(self.directory, tmp_base)
        return final

    def restore(self, path: str, objects: Mapping[str, Any]) -> Dict[str, Any]:
        """Restores `objects` from checkpoint `path` strictly; returns the sidecar's ``extra``."""
        _check_built(objects)
        sidecar = read_sidecar(path)  # read first: a damaged sidecar should fail before variables change
        restore(tf.train.Checkpoint(**objects), path)
        return dict(sidecar.get("extra", {}))


__all__ = ["CheckpointManager", "checkpoint_path", "complete_checkpoints", "is_disk_full", "latest_complete",
           "read_sidecar", "remove_incomplete", "restore", "verify_match", "with_previous_hint", "NoCheckpoints"]
