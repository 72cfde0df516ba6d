"""Where a model's checkpoints are and which of their files are whole: names, completeness, leftovers, sidecars.

Names follow RETURNN: the config key ``model = "out/model"`` gives
``out/model.001``, ``out/model.002``, ... as checkpoint prefixes (TensorFlow's
``<prefix>.index`` + ``<prefix>.data-00000-of-00001``, PyTorch's ``<prefix>.pt``),
plus netcompiler's sidecar ``<prefix>.meta.json``. A checkpoint counts as
complete exactly when its marker file (``.index``, ``.pt``) exists.

Leftovers of an interrupted write are recognised by name only, and nothing
else is ever removed:

* ``<model>.tmp-NNN-xxxxxxxx.*`` (the writer's temporary prefix: 3+ digits, 8 hex digits),
* TensorFlow's own temporary folder of such a prefix, ``<model>.tmp-NNN-xxxxxxxx_temp*``
  (removed only if it holds plain files and nothing else),
* ``<model>.NNN.data-*`` and ``<model>.NNN.meta.json`` without a ``<model>.NNN.index``,
* ``<model>.learning_rates.json.tmp-xxxxxxxx`` (the history file's temporary copy),
* ``<model>.curve.png.tmp-xxxxxxxx`` (the learning curve's, engine/learning_curve.py).

Also here, because they are about files and not about any backend: the errors
for damaged files (`with_previous_hint` names the intact checkpoint before a
damaged one) and the fsync helpers of the atomic writers. No TensorFlow import.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
from typing import Any, Dict, List, Optional, Tuple

from ..errors import CheckpointError

SIDECAR_SUFFIX = ".meta.json"
INDEX_SUFFIX = ".index"
SIDECAR_FORMAT = "netcompiler-checkpoint"
SIDECAR_VERSION = 1
_TMP_MARK = ".tmp-"


def checkpoint_path(model_prefix: str, epoch: int) -> str:
    """RETURNN's checkpoint name for `epoch`: ``<model>.003``."""
    return f"{model_prefix}.{epoch:03d}"


def _split(model_prefix: str) -> Tuple[str, str]:
    directory, base = os.path.split(model_prefix)
    if not base:
        raise CheckpointError(f"model prefix '{model_prefix}' names a directory; give a file prefix like 'out/model'")
    return directory or ".", base


def _listdir(directory: str) -> List[str]:
    try:
        return os.listdir(directory)
    except FileNotFoundError:
        return []


def complete_checkpoints(model_prefix: str, marker: str = INDEX_SUFFIX) -> List[Tuple[int, str]]:
    """All complete checkpoints of the model, as (epoch, path), oldest first. A checkpoint is complete when
    its file `<path><marker>` exists (TensorFlow's ``.index``; PyTorch's ``.pt``, see `torch_checkpoints`)."""
    directory, base = _split(model_prefix)
    pattern = re.compile(re.escape(base) + r"\.(\d{3,})" + re.escape(marker) + "$")
    found = []
    for name in _listdir(directory):
        match = pattern.match(name)
        if match:
            epoch = int(match.group(1))
            found.append((epoch, os.path.join(os.path.dirname(model_prefix), name[:-len(marker)])))
    return sorted(found)


def latest_complete(model_prefix: str, file_suffix: str = "") -> Optional[Tuple[int, str]]:
    """(epoch, path) of the newest complete checkpoint, or None: TensorFlow's (path a prefix, its ``.index``
    written last), or with `file_suffix` (PyTorch's ``.pt``) the file of that name, the path then ending in it."""
    found = complete_checkpoints(model_prefix, file_suffix or INDEX_SUFFIX)
    return (found[-1][0], found[-1][1] + file_suffix) if found else None


def _leftover_patterns(base: str):
    tmp = re.escape(base + _TMP_MARK) + r"\d{3,}-[0-9a-f]{8}"
    return (re.compile(tmp + r"\..+$"),  # files of our temporary prefix
            re.compile(tmp + r"_temp.*$"),  # TensorFlow's temporary folder for that prefix
            re.compile(re.escape(base) + r"\.(learning_rates\.json|curve\.png)\.tmp-[A-Za-z0-9_]{8}$"))


def _is_tf_temp_folder(path: str) -> bool:
    """A real folder (no symlink) holding plain files only: what TensorFlow's sharded save leaves."""
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            return False
        return all(stat.S_ISREG(os.lstat(os.path.join(path, n)).st_mode) for n in os.listdir(path))
    except OSError:
        return False


def remove_incomplete(model_prefix: str) -> List[str]:
    """Removes what interrupted writes left behind (see the module doc); returns the removed names."""
    directory, base = _split(model_prefix)
    names = _listdir(directory)
    complete = {os.path.basename(path) for _, path in complete_checkpoints(model_prefix)}
    final = re.compile(re.escape(base) + r"\.(\d{3,})(\.data-\d+-of-\d+|" + re.escape(SIDECAR_SUFFIX) + ")$")
    tmp_file, tmp_folder, history_tmp = _leftover_patterns(base)
    removed = []
    for name in names:
        path = os.path.join(directory, name)
        match = final.match(name)
        if tmp_folder.match(name):
            if not _is_tf_temp_folder(path):
                continue
            shutil.rmtree(path)
            removed.append(name)
            continue
        stale = bool(tmp_file.match(name) or history_tmp.match(name)
                     or (match and f"{base}.{match.group(1)}" not in complete))
        if stale:
            try:
                if not stat.S_ISREG(os.lstat(path).st_mode):
                    continue  # a folder or link with such a name is not something we wrote
                os.unlink(path)
                removed.append(name)
            except FileNotFoundError:
                pass
    return removed


def _remove_quietly(directory: str, tmp_base: str) -> None:
    """Removes the pieces of one interrupted write (clean-up on an error: must not raise)."""
    for name in _listdir(directory):
        if name.startswith(tmp_base + ".") or name.startswith(tmp_base + "_temp"):
            path = os.path.join(directory, name)
            try:
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    os.unlink(path)
            except OSError:
                pass


def _fsync_file(path: str) -> None:
    with open(path, "rb") as f:
        os.fsync(f.fileno())


def _fsync_dir(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def read_sidecar(path: str) -> Dict[str, Any]:
    """The sidecar of checkpoint `path` ({} if it has none, e.g. one made elsewhere)."""
    sidecar = path + SIDECAR_SUFFIX
    if not os.path.exists(sidecar):
        return {}
    try:
        with open(sidecar, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as exc:
        raise _marked(CheckpointError(f"checkpoint sidecar '{sidecar}' is damaged or unreadable: {exc}")) from None
    if not isinstance(data, dict) or data.get("format") != SIDECAR_FORMAT:
        raise _marked(CheckpointError(f"checkpoint sidecar '{sidecar}' is not a netcompiler checkpoint sidecar"))
    return data



def _first_line(exc: BaseException) -> str:
    text = getattr(exc, "message", None) or str(exc)
    text = re.sub(r"\{\{function_node [^}]*\}\}\s*|\s*\[Op:\w+\]", "", text)  # TF's op decorations
    return (text.strip().splitlines() or [type(exc).__name__])[0][:300]



def _marked(error: CheckpointError) -> CheckpointError:
    """Marks `error` as one about damaged files (not a mismatch): `damaged_hint` may say what to do."""
    error.damaged = True
    return error


def with_previous_hint(error: CheckpointError, model_prefix: str, path: str, *, training: bool,
                       found: Optional[List[str]] = None, files: Optional[str] = None) -> CheckpointError:
    """`error` about damaged checkpoint `path`, plus what to do: the newest complete checkpoint before it is
    intact, and how to use it (training resumes from the newest one, so its files must go; eval and forward
    take ``++load``). Errors that are not about damaged files are returned unchanged. `found` (the complete
    checkpoints, oldest first) and `files` (the damaged one's files) default to TensorFlow's."""
    if found is None:
        found = [p for _, p in complete_checkpoints(model_prefix)]
    if not getattr(error, "damaged", False) or path not in found:
        return error
    previous = found[:found.index(path)]
    if not previous:
        hint = "there is no earlier checkpoint to fall back to"
    elif training:
        files = files or f"'{path}{INDEX_SUFFIX}', '{path}.data-*' and '{path}{SIDECAR_SUFFIX}'"
        hint = (f"the previous checkpoint '{previous[-1]}' is intact: to resume from it, delete (or move away) "
                f"the damaged checkpoint's files {files}")
    else:
        hint = f"the previous checkpoint '{previous[-1]}' is intact: use it with ++load {previous[-1]}"
    hinted = CheckpointError(f"{error}; {hint}")
    hinted.damaged = True
    return hinted
