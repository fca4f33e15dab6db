"""The clean-shutdown marker of a partition directory: ``.clean_shutdown``.

An empty file, created (atomically, fsynced: :func:`~riverbed.storage.atomic_file.write_atomically`)
as the last step of :meth:`PartitionLog.close`, and removed (durably) at the next open,
before anything is read.  Its presence at open means the previous close finished every
fsync, index write, producer snapshot and checkpoint, so recovery may trust the
indexes and the end of the log without CRC checks.  A crash never leaves it: an
unclean close (or an open that crashes) has already removed it.
"""

from __future__ import annotations

from pathlib import Path

from riverbed.storage.atomic_file import fsync_dir, write_atomically

CLEAN_SHUTDOWN_FILE = ".clean_shutdown"


def mark_clean_shutdown(directory: Path) -> None:
    """Write the marker (the last step of a clean close)."""
    write_atomically(directory / CLEAN_SHUTDOWN_FILE, b"")


def consume_clean_shutdown(directory: Path) -> bool:
    """True if the last close was clean; removes the marker (durably) either way."""
    path = directory / CLEAN_SHUTDOWN_FILE
    if not path.exists():
        return False
    path.unlink()
    fsync_dir(directory)
    return True
