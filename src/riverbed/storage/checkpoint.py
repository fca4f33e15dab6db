"""Small durable files of a partition directory: checkpoints and the clean-shutdown marker.

``partition.checkpoint`` (text, one ``name value`` pair a line, version first)::

    version 1
    recovery_point 1234        every batch below this offset was fsynced
    log_start_offset 1000      DeleteRecords / retention, persisted before acknowledging
    cleaner_offset 900         first dirty offset for the compactor

Writes are atomic: write ``.tmp``, fsync, rename over, fsync the directory, so a crash
leaves either the old or the new checkpoint.  A missing or unreadable file reads as
"nothing known" (recovery point 0: everything is re-checked); an unreadable one is
logged as a WARNING naming the file.

``.clean_shutdown`` is created, fsynced, by a clean close and deleted at open; its
presence means the indexes and the end of the log can be trusted without CRC checks.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

from riverbed.storage import faults

log = logging.getLogger(__name__)

CHECKPOINT_FILE = "partition.checkpoint"
CLEAN_SHUTDOWN_FILE = ".clean_shutdown"


@dataclass(frozen=True, slots=True)
class PartitionCheckpoint:
    recovery_point: int = 0
    log_start_offset: int = 0
    cleaner_offset: int = 0


def fsync_dir(directory: Path) -> None:
    faults.point("dir.fsync", directory)
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        faults.point("file.fsync", path)
        os.fsync(f.fileno())
    faults.point("file.rename", tmp)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def read_checkpoint(directory: Path) -> PartitionCheckpoint:
    path = directory / CHECKPOINT_FILE
    try:
        text = path.read_text()
    except FileNotFoundError:
        return PartitionCheckpoint()
    except UnicodeDecodeError:
        text = ""
    values: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("-").isdigit():
            values[parts[0]] = int(parts[1])
    if values.get("version") != 1 or "recovery_point" not in values:
        log.warning("ignoring unreadable %s: every segment is CRC-checked "
                    "(full recovery) and the log start offset falls back to the first "
                    "segment's base offset", path)
        return PartitionCheckpoint()
    return PartitionCheckpoint(
        recovery_point=max(values.get("recovery_point", 0), 0),
        log_start_offset=max(values.get("log_start_offset", 0), 0),
        cleaner_offset=max(values.get("cleaner_offset", 0), 0),
    )


def write_checkpoint(directory: Path, cp: PartitionCheckpoint) -> None:
    text = (
        f"version 1\nrecovery_point {cp.recovery_point}\n"
        f"log_start_offset {cp.log_start_offset}\ncleaner_offset {cp.cleaner_offset}\n"
    )
    write_atomically(directory / CHECKPOINT_FILE, text.encode())


def mark_clean_shutdown(directory: Path) -> None:
    write_atomically(directory / CLEAN_SHUTDOWN_FILE, b"")


def consume_clean_shutdown(directory: Path) -> bool:
    """True if the last close was clean; removes the marker (durably) either way."""
    path = directory / CLEAN_SHUTDOWN_FILE
    if not path.exists():
        return False
    path.unlink()
    fsync_dir(directory)
    return True
