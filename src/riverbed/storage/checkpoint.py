"""``partition.checkpoint``: the offsets a partition persists beside its segments.

``partition.checkpoint`` (text, one ``name value`` pair a line, version first)::

    version 1
    recovery_point 1234        every batch below this offset was fsynced
    log_start_offset 1000      DeleteRecords / retention, persisted before acknowledging
    cleaner_offset 900         first dirty offset for the compactor

Writes are atomic (:func:`~riverbed.storage.atomic_file.write_atomically`: ``.tmp``,
fsync, rename over, fsync the directory), so a crash leaves either the old or the new
checkpoint.  A missing or unreadable file reads as
"nothing known" (recovery point 0: everything is re-checked); an unreadable one is
logged as a WARNING naming the file.

The clean-shutdown marker is :mod:`riverbed.storage.clean_shutdown`; the atomic write
itself, :mod:`riverbed.storage.atomic_file`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from riverbed.storage.atomic_file import write_atomically

log = logging.getLogger(__name__)

CHECKPOINT_FILE = "partition.checkpoint"


@dataclass(frozen=True, slots=True)
class PartitionCheckpoint:
    recovery_point: int = 0
    log_start_offset: int = 0
    cleaner_offset: int = 0


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
        log.warning(
            "ignoring unreadable %s: every segment is CRC-checked "
            "(full recovery) and the log start offset falls back to the first "
            "segment's base offset",
            path,
        )
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
