"""One run per model: a lock file ``<model>.lock`` held for the whole run (train, eval, forward).

Why `fcntl.flock` and not a pid file alone: the kernel releases a flock when its
process ends in any way (exit, exception, SIGKILL, out of memory), so a lock
can never outlive its run and nothing has to guess whether a holder is still
alive. The file also records who holds it (pid, host, start time, as JSON), so
that a second run can name the other process; a record left by a dead process
is simply overwritten. The file itself stays in the model folder (empty when
free): deleting it on release would let two runs lock two different files.

Where the file system does not support flock (some network file systems), the
record alone decides: a holder on this host whose pid is gone (``os.kill(pid,
0)``) is stale and taken over; a live one, or one on another host, refuses.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import time
from typing import Any, Dict, Optional

from ..errors import DISK_FULL_ERRNOS, NOT_WRITABLE_ERRNOS, ModelFolderError

LOCK_SUFFIX = ".lock"


def _describe(holder: Dict[str, Any]) -> str:
    since = holder.get("started")
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(since)) if isinstance(since, (int, float)) else "?"
    task = f", task {holder['task']}" if holder.get("task") else ""
    return f"process {holder.get('pid', '?')} on host {holder.get('host', '?')}, running since {when}{task}"


def _alive(holder: Dict[str, Any]) -> bool:
    """Whether the process named in a lock record may still run (another host: assume it does)."""
    pid = holder.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    if holder.get("host") != socket.gethostname():
        return True
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, belongs to someone else
        return True
    return True


class ModelLock:
    """The lock of model prefix `model_prefix`; `acquire` raises ModelFolderError if it is taken."""

    def __init__(self, model_prefix: str, task: str = ""):
        self.model_prefix = model_prefix
        self.path = model_prefix + LOCK_SUFFIX
        self.directory = os.path.dirname(model_prefix) or "."
        self.task = task
        self.fd: Optional[int] = None
        self.took_over: Optional[Dict[str, Any]] = None  # the stale record replaced, if any

    def _read(self, fd: int) -> Dict[str, Any]:
        try:
            os.lseek(fd, 0, os.SEEK_SET)
            data = json.loads(os.read(fd, 65536).decode("utf-8") or "{}")
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _refuse(self, holder: Dict[str, Any]) -> ModelFolderError:
        return ModelFolderError(
            f"model '{self.model_prefix}' is in use by another run: {_describe(holder)} "
            f"(lock file '{self.path}'); wait for it to end or give this run another 'model'",
            path=self.path, reason="in use")

    def acquire(self) -> "ModelLock":
        try:
            os.makedirs(self.directory, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            if exc.errno in NOT_WRITABLE_ERRNOS:
                raise ModelFolderError(f"the model folder '{self.directory}' is not writable "
                                       f"({exc.strerror}: '{exc.filename}')", path=self.directory,
                                       reason="not writable") from None
            if exc.errno in DISK_FULL_ERRNOS:
                raise ModelFolderError(f"the disk is full: cannot create the lock file '{self.path}'",
                                       path=self.path, reason="disk full") from None
            raise
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise self._refuse(self._read(fd)) from None
            except OSError as exc:  # no flock here (ENOLCK, EOPNOTSUPP, ...): the record decides
                if exc.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                    raise
                holder = self._read(fd)
                if holder and _alive(holder):
                    raise self._refuse(holder) from None
            previous = self._read(fd)
            if previous and previous.get("pid") != os.getpid():
                self.took_over = previous
            record = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.time(), "task": self.task}
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, (json.dumps(record) + "\n").encode("utf-8"))
            os.fsync(fd)
        except BaseException as exc:
            os.close(fd)
            if isinstance(exc, OSError) and exc.errno in DISK_FULL_ERRNOS:
                raise ModelFolderError(f"the disk is full: cannot write the lock file '{self.path}'",
                                       path=self.path, reason="disk full") from None
            raise
        self.fd = fd
        return self

    def release(self) -> None:
        """Empties the record and unlocks (closing the file releases the flock)."""
        if self.fd is None:
            return
        fd, self.fd = self.fd, None
        try:
            os.ftruncate(fd, 0)
        except OSError:
            pass
        finally:
            os.close(fd)

    def __enter__(self) -> "ModelLock":
        return self.acquire()

    def __exit__(self, *exc_info) -> None:
        self.release()


__all__ = ["LOCK_SUFFIX", "ModelLock"]
