"""LogSegment.read ends a read inside the segment at the last whole batch through the
offset index (one exact pread, no trimming copy): the bytes must be exactly what cutting
a ``max_bytes`` read after its last whole batch gives, also when the index is wrong."""

from __future__ import annotations

import random
from pathlib import Path

from _batches import batch

from riverbed.clock import ManualClock
from riverbed.protocol.batch import HEADER_SIZE, BatchHeader
from riverbed.storage import LogConfig, PartitionLog


def _fill(tmp_path: Path, index_interval_bytes: int) -> tuple[PartitionLog, bytes]:
    log = PartitionLog.open(
        tmp_path / "t-0",
        LogConfig(index_interval_bytes=index_interval_bytes),
        clock=ManualClock(),
    )
    rng = random.Random(7)
    for _ in range(120):  # batches of 1 to 20 records of 1 to 300 bytes
        log.append(batch(*(b"v" * rng.randint(1, 300) for _ in range(rng.randint(1, 20)))))
    whole = log.read(0, 1 << 30).records
    return log, whole


def _starts(whole: bytes) -> list[int]:
    pos, out = 0, []
    while pos < len(whole):
        out.append(pos)
        pos += BatchHeader.parse(whole, pos).size
    return out


def _expected(whole: bytes, position: int, max_bytes: int) -> bytes:
    """The old algorithm: read ``max_bytes`` and drop the partial last batch."""
    data = whole[position : position + max_bytes]
    end = 0
    while end + 12 <= len(data):
        size = int.from_bytes(data[end + 8 : end + 12], "big") + 12
        if end + size > len(data):
            break
        end += size
    return data[:end]


def test_reads_end_at_the_last_whole_batch(tmp_path: Path) -> None:
    for interval in (1, 700, 4096, 1 << 20):
        log, whole = _fill(tmp_path / str(interval), interval)
        seg = log.segments()[0]
        rng = random.Random(interval)
        for start in _starts(whole)[::7]:
            for max_bytes in (HEADER_SIZE, 1000, 5000, *(rng.randint(1, 60_000) for _ in range(5))):
                got = seg.read(start, max_bytes, min_one_batch=False)
                assert got == _expected(whole, start, max_bytes), (interval, start, max_bytes)
        log.close()


def test_a_wrong_index_entry_still_reads_whole_batches(tmp_path: Path) -> None:
    log, whole = _fill(tmp_path, 700)
    seg = log.segments()[0]
    positions = seg.offset_index.values
    assert len(positions) > 10
    for i in range(1, len(positions)):
        positions[i] += 5  # no entry points at a batch start any more
    for start in _starts(whole)[::5]:
        for max_bytes in (1000, 7000, 30_000):
            assert seg.read(start, max_bytes, min_one_batch=False) == _expected(
                whole, start, max_bytes
            )
    log.close()
