"""The data directory's exclusive lock: one process owns a data dir at a time.

Two processes appending to the same segment files would interleave batches and destroy
the log, so :class:`~riverbed.storage.manager.LogManager` takes an exclusive, non-blocking
``flock`` on ``<data_dir>/.lock`` before it reads anything (Kafka does the same per log
dir).  The lock file holds the owner's pid for people, not for correctness.

Crash behaviour: ``flock`` locks die with the process (SIGKILL included), so a crashed
broker never leaves a stale lock behind; the file itself stays and is reused.
Within one process a second manager on the same dir is refused too (``flock`` locks
belong to the open file description).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from riverbed.errors import DataDirInUseError

LOCK_FILE = ".lock"


class DataDirLock:
    """An acquired lock; :meth:`release` is idempotent."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, data_dir: Path) -> DataDirLock:
        """Lock ``data_dir`` or raise DataDirInUseError naming the holder's pid."""
        path = data_dir / LOCK_FILE
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise DataDirInUseError(
                f"data dir {data_dir} is in use by another process (pid {holder}); "
                f"stop it first or choose another --data-dir"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return cls(path, fd)

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing the descriptor drops the flock
