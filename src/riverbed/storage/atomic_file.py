"""Crash-safe small-file writes: every durable file Riverbed rewrites in place goes
through :func:`write_atomically`.

Protocol for ``path``: write ``<path>.tmp``, fsync it, ``rename`` it over ``path``, fsync
the directory.  A crash at any step leaves either the old file or the new one, never a
mix; a stray ``.tmp`` is overwritten by the next write (partition recovery also deletes
it, :mod:`riverbed.storage.recovery`).  Failure points (:mod:`riverbed.storage.faults`):
``file.fsync`` before the ``.tmp``'s fsync (path: the target), ``file.rename`` before
the rename (path: the ``.tmp``), ``dir.fsync`` before the directory's fsync.

Users: ``partition.checkpoint`` and the clean-shutdown marker, producer snapshots,
``topic.properties``, the broker's JSON state files.

Thread-safety: concurrent writers of the *same* path must be serialised by the caller
(they share the ``.tmp`` name); different paths are independent.
"""

from __future__ import annotations

import os
from pathlib import Path

from riverbed.storage import faults


def fsync_dir(directory: Path) -> None:
    """fsync ``directory`` itself, making the names created, renamed or removed in it
    durable (a new file's data is not enough: its directory entry must be too)."""
    faults.point("dir.fsync", directory)
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` durably and atomically (module docstring)."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        faults.point("file.fsync", path)
        os.fsync(f.fileno())
    faults.point("file.rename", tmp)
    os.replace(tmp, path)
    fsync_dir(path.parent)
