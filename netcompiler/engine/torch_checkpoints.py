"""Checkpoints of PyTorch training: the TensorFlow side's names, resume rules and atomic writing, one file each.

The checkpoint of epoch 3 of ``model = "out/model"`` is ``out/model.003.pt`` (written with `torch.save`: state
dicts only -- the parameters by their checkpoint names, the optimizer's state, the step count) and its sidecar
``out/model.003.pt.meta.json`` (the same JSON as on TensorFlow: epoch, learning rate, ...). The ``.pt`` file is
renamed into place last, after both were written under a temporary name and flushed: a checkpoint is complete
exactly when its ``.pt`` file exists. Naming, leftovers clean-up, the lock and the messages are those of
`checkpoints.py`, shared through `checkpoint_manager_base` (which loads no TensorFlow); files are read with
``torch.load(weights_only=True)`` (no code runs from a checkpoint).

Restoring checks the names and shapes of every saved parameter against the network before assigning any, and
names those that differ. A damaged file is reported by name, with the previous intact checkpoint.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import stat
import uuid
from typing import Any, Dict, List, Mapping, Optional, Tuple

import torch

from ..errors import CheckpointError
from .checkpoint_files import (
    SIDECAR_FORMAT, SIDECAR_SUFFIX, SIDECAR_VERSION, _TMP_MARK, _first_line, _fsync_dir, _fsync_file, _listdir,
    _marked, _remove_quietly, complete_checkpoints, latest_complete, read_sidecar, remove_incomplete,
    with_previous_hint,
)
from .checkpoint_manager_base import CheckpointManagerBase

TORCH_SUFFIX = ".pt"
_FORMAT = "netcompiler-torch-checkpoint"
_MAX_NAMES = 12


def remove_incomplete_torch(model_prefix: str) -> List[str]:
    """`checkpoints.remove_incomplete` plus the sidecars ``<model>.NNN.pt.meta.json`` whose ``.pt`` is missing."""
    removed = remove_incomplete(model_prefix)
    directory, base = os.path.split(model_prefix)
    directory = directory or "."
    orphan = re.compile(re.escape(base) + r"\.\d{3,}" + re.escape(TORCH_SUFFIX + SIDECAR_SUFFIX) + "$")
    for name in _listdir(directory):
        path = os.path.join(directory, name)
        if orphan.match(name) and not os.path.exists(path[:-len(SIDECAR_SUFFIX)]):
            try:
                if stat.S_ISREG(os.lstat(path).st_mode):
                    os.unlink(path)
                    removed.append(name)
            except FileNotFoundError:
                pass
    return removed


def state_of(obj: Any) -> Any:
    """What is saved of one object: a mapping of tensors (the parameters) as detached copies; else its
    ``state_dict()``."""
    if isinstance(obj, Mapping):
        return {name: value.detach().clone() for name, value in obj.items()}
    return obj.state_dict()


def _describe_shapes(saved: Mapping[str, Any], live: Mapping[str, Any]) -> List[str]:
    parts = []
    for title, names in (
            ("parameters of the network missing in the checkpoint", [n for n in live if n not in saved]),
            ("parameters in the checkpoint that the network does not have", [n for n in saved if n not in live]),
            ("parameters with a different shape",
             [f"{n}: checkpoint {tuple(saved[n].shape)}, network {tuple(live[n].shape)}"
              for n in live if n in saved and tuple(saved[n].shape) != tuple(live[n].shape)])):
        if names:
            shown = names[:_MAX_NAMES] + ([f"... ({len(names) - _MAX_NAMES} more)"] if len(names) > _MAX_NAMES else [])
            parts.append(f"{title}: {', '.join(shown)}")
    return parts


class _KeepsWriteErrors(io.BufferedWriter):
    """The file `torch.save` writes to, keeping the first OSError of its writes: torch reports a failed write as a
    RuntimeError without errno (torch 2.13 on a full disk: "[enforce fail at inline_container.cc:672] .
    unexpected pos 704 vs 598"), in which a full disk or a read-only folder could not be recognised."""

    error: Optional[OSError] = None

    def write(self, data) -> int:
        try:
            return super().write(data)
        except OSError as exc:
            self.error = self.error or exc
            raise


def _torch_save(payload: Any, path: str) -> None:
    """``torch.save(payload, path)``; a failed write raises the OSError the system gave (ENOSPC, EROFS, ...)."""
    f = _KeepsWriteErrors(open(path, "wb", buffering=0))
    try:
        torch.save(payload, f)
        f.flush()  # what is still buffered: a small payload meets a full disk only here
    except Exception:
        error = f.error
        with contextlib.suppress(OSError):
            f.close()
        if error is not None:
            raise error from None
        raise
    f.close()


class TorchCheckpointManager(CheckpointManagerBase):
    """The checkpoint manager for PyTorch: ``objects`` maps names to a dict of parameters by checkpoint name (restored
    in place, after checking names and shapes) or to objects with ``state_dict``/``load_state_dict`` (the
    optimizer, the trainer's step count)."""

    def __init__(self, model_prefix: str, clean: bool = True):
        super().__init__(model_prefix, clean=False)
        self.removed_leftovers = remove_incomplete_torch(model_prefix) if clean else []

    def path_for(self, epoch: int) -> str:
        return super().path_for(epoch) + TORCH_SUFFIX

    def complete(self) -> List[Tuple[int, str]]:
        return [(epoch, path + TORCH_SUFFIX) for epoch, path in complete_checkpoints(self.model_prefix, TORCH_SUFFIX)]

    def latest_complete(self) -> Optional[Tuple[int, str]]:
        return latest_complete(self.model_prefix, TORCH_SUFFIX)

    def save(self, epoch: int, objects: Mapping[str, Any], extra: Optional[Mapping[str, Any]] = None,
             *, overwrite: bool = False) -> str:
        """Writes the checkpoint of `epoch` atomically (never over an existing one); returns its path."""
        if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 0:
            raise ValueError(f"epoch must be a whole number >= 0, got {epoch!r}")
        final = self.path_for(epoch)
        if os.path.exists(final) and not overwrite:
            raise CheckpointError(f"checkpoint '{final}' exists already; it is never overwritten")
        sidecar = {"format": SIDECAR_FORMAT, "version": SIDECAR_VERSION, "epoch": epoch,
                   "objects": sorted(objects), "extra": dict(extra or {})}
        sidecar_text = json.dumps(sidecar, indent=1, sort_keys=True)  # fails early if extra is not JSON
        payload = {"format": _FORMAT, "epoch": epoch, **{name: state_of(obj) for name, obj in objects.items()}}
        os.makedirs(self.directory, exist_ok=True)
        tmp = os.path.join(self.directory, f"{self.base}{_TMP_MARK}{epoch:03d}-{uuid.uuid4().hex[:8]}")
        try:
            _torch_save(payload, tmp + TORCH_SUFFIX)
            with open(tmp + TORCH_SUFFIX + SIDECAR_SUFFIX, "w", encoding="utf-8") as f:
                f.write(sidecar_text + "\n")
            for suffix in (TORCH_SUFFIX + SIDECAR_SUFFIX, TORCH_SUFFIX):
                _fsync_file(tmp + suffix)
            for suffix in (SIDECAR_SUFFIX, ""):  # the .pt file last: it marks completeness
                self._rename_into_place(tmp + TORCH_SUFFIX + suffix, final + suffix)
            _fsync_dir(self.directory)
        except Exception as exc:
            problem = self._write_problem(exc, final)
            if problem is None or os.path.exists(final):
                raise
            raise problem from None
        finally:
            _remove_quietly(self.directory, os.path.basename(tmp))
        return final

    def restore(self, path: str, objects: Mapping[str, Any]) -> Dict[str, Any]:
        """Restores `objects` from checkpoint `path` strictly; returns the sidecar's ``extra``."""
        path = self.resolve(path)
        sidecar = read_sidecar(path)  # read first: a damaged sidecar should fail before parameters change
        payload = self._load(path)
        missing = [name for name in objects if name not in payload]
        if missing:
            raise CheckpointError(f"checkpoint '{path}' holds no {', '.join(missing)} (it holds: "
                                  f"{', '.join(k for k in payload if k not in ('format', 'epoch'))})")
        for name, obj in objects.items():
            if isinstance(obj, Mapping):
                parts = _describe_shapes(payload[name], obj)
                if parts:
                    raise CheckpointError(f"checkpoint '{path}' does not match the network; " + "; ".join(parts))
        for name, obj in objects.items():
            if isinstance(obj, Mapping):
                with torch.no_grad():
                    for key, param in obj.items():
                        param.copy_(payload[name][key])
            else:
                try:
                    obj.load_state_dict(payload[name])
                except (ValueError, KeyError, RuntimeError) as exc:
                    raise CheckpointError(f"checkpoint '{path}': the saved {name} does not fit ({_first_line(exc)})"
                                          ) from None
        return dict(sidecar.get("extra", {}))

    def resolve(self, path: str) -> str:
        """The ``.pt`` file of `path` (``out/model.003`` or ``out/model.003.pt``); a TensorFlow checkpoint is
        refused by name."""
        if not path.endswith(TORCH_SUFFIX) and os.path.exists(path + TORCH_SUFFIX):
            return path + TORCH_SUFFIX
        if not os.path.exists(path):
            tf_hint = " (it is a TensorFlow checkpoint: train or load it with backend = 'tensorflow')" \
                if os.path.exists(path + ".index") else ""
            raise CheckpointError(f"checkpoint '{path}' does not exist (no file '{path}'){tf_hint}")
        return path

    def _load(self, path: str) -> Dict[str, Any]:
        try:
            payload = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as exc:  # RuntimeError, UnpicklingError, EOFError, ... from a damaged file
            raise _marked(CheckpointError(f"checkpoint '{path}' cannot be read: the file is damaged or truncated "
                                          f"({type(exc).__name__}: {_first_line(exc)})")) from None
        if not isinstance(payload, dict) or payload.get("format") != _FORMAT:
            raise _marked(CheckpointError(f"checkpoint '{path}' is not a netcompiler PyTorch checkpoint"))
        return payload

    def read_params(self, path: str) -> Dict[str, Any]:
        """The parameters in checkpoint `path` as {checkpoint name: numpy array}."""
        path = self.resolve(path)
        params = self._load(path).get("model")
        if not isinstance(params, Mapping):
            raise CheckpointError(f"checkpoint '{path}' holds no network parameters (no 'model' state in it)")
        return {name: value.detach().cpu().numpy() for name, value in params.items()}

    def with_previous_hint(self, error: CheckpointError, path: str, *, training: bool) -> CheckpointError:
        """`checkpoints.with_previous_hint` for this manager's files."""
        return with_previous_hint(error, self.model_prefix, path, training=training,
                                  found=[p for _, p in self.complete()],
                                  files=f"'{path}' and '{path}{SIDECAR_SUFFIX}'")


def read_torch_params(path: str) -> Dict[str, Any]:
    """The parameters of PyTorch checkpoint `path` (``out/model.003`` or ``out/model.003.pt``) as {name: numpy
    array}, read without a lock and without cleaning up (for loading them on another backend)."""
    stem = path[:-len(TORCH_SUFFIX)] if path.endswith(TORCH_SUFFIX) else path
    return TorchCheckpointManager(os.path.splitext(stem)[0] or stem, clean=False).read_params(path)


__all__ = ["TORCH_SUFFIX", "TorchCheckpointManager", "read_torch_params", "remove_incomplete_torch"]
