"""Unclean stops: torn and corrupt tails *beyond the flushed position* are cut; damage
below it, or in a sealed segment, takes the partition offline untouched; indexes are
rebuilt."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from riverbed.clock import ManualClock
from riverbed.errors import CorruptSegmentError
from riverbed.protocol.records import build_batch, iter_batches_with_records
from riverbed.storage import LogConfig, PartitionLog
from riverbed.storage.config import LONG_MAX

# OS flush policy: appends are not fsynced, so the test decides what the flushed
# position is.
CONFIG = LogConfig(segment_bytes=1000, index_interval_bytes=64, flush_messages=LONG_MAX)


def make(directory: Path, n: int) -> None:
    """n one-record batches from one idempotent producer, all fsynced except the last
    one, then a crash-like close."""
    log = PartitionLog.open(directory, CONFIG, clock=ManualClock())
    for i in range(n):
        if i == n - 1:
            log.flush()  # the flushed position ends before the last batch
        log.append(
            build_batch(
                [(None, f"value-{i}".encode(), 1000 + i)],
                producer_id=3,
                producer_epoch=0,
                base_sequence=i,
            )
        )
    log.close_unclean()  # no clean-shutdown marker: the next open recovers


def read_all(log: PartitionLog) -> list[bytes | None]:
    out = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20).records
        for h, rs in iter_batches_with_records(data):
            out.extend(r.value for r in rs if r.offset >= offset)
            offset = h.next_offset
    return out


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("pristine") / "t-0"
    make(d, 20)
    return d


def last_segment(d: Path) -> Path:
    return sorted(d.glob("*.log"))[-1]


def batch_bounds(path: Path) -> tuple[int, int]:
    """(start, end) byte positions of the last batch of a .log file."""
    data = path.read_bytes()
    pos = prev = 0
    while pos < len(data):
        prev = pos
        pos += int.from_bytes(data[pos + 8 : pos + 12], "big") + 12
    return prev, pos


def test_cut_last_batch_at_every_byte(pristine: Path, tmp_path: Path) -> None:
    start, end = batch_bounds(last_segment(pristine))
    expected = [f"value-{i}".encode() for i in range(20)]
    for cut in range(start, end):
        d = tmp_path / f"c{cut}" / "t-0"
        shutil.copytree(pristine, d)
        with open(last_segment(d), "r+b") as f:
            f.truncate(cut)
        log = PartitionLog.open(d, CONFIG, clock=ManualClock())
        assert log.log_end_offset == 19
        assert read_all(log) == expected[:19]
        assert last_segment(d).stat().st_size == start
        # the producer's next batch follows the last surviving one
        log.append(
            build_batch([(None, b"again", 1)], producer_id=3, producer_epoch=0, base_sequence=19)
        )
        assert log.log_end_offset == 20
        log.close()
        shutil.rmtree(d.parent)


def test_bit_flips_in_last_batch_are_truncated(pristine: Path, tmp_path: Path) -> None:
    start, end = batch_bounds(last_segment(pristine))
    for pos in range(start, end):
        if pos in range(start, start + 8) or pos in range(start + 12, start + 16):
            continue  # base offset and leader epoch are outside the CRC (checked otherwise)
        d = tmp_path / f"b{pos}" / "t-0"
        shutil.copytree(pristine, d)
        with open(last_segment(d), "r+b") as f:
            f.seek(pos)
            byte = f.read(1)[0]
            f.seek(pos)
            f.write(bytes([byte ^ (1 << (pos % 8))]))
        log = PartitionLog.open(d, CONFIG, clock=ManualClock())
        assert log.log_end_offset == 19, pos
        log.close()
        shutil.rmtree(d.parent)


def test_corruption_in_sealed_segment_is_refused(pristine: Path, tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    shutil.copytree(pristine, d)
    first = sorted(d.glob("*.log"))[0]
    assert len(list(d.glob("*.log"))) > 1
    # make the sealed segment untrusted: recovery point 0 forces a CRC check
    (d / "partition.checkpoint").unlink(missing_ok=True)
    with open(first, "r+b") as f:
        f.seek(70)
        b = f.read(1)[0]
        f.seek(70)
        f.write(bytes([b ^ 0xFF]))
    before = {p.name: p.read_bytes() for p in d.iterdir()}
    log = PartitionLog.open(d, CONFIG, clock=ManualClock())
    assert log.offline_error is not None
    with pytest.raises(CorruptSegmentError, match=first.name):
        log.read(0, 1 << 20)
    log.close()
    assert {p.name: p.read_bytes() for p in d.iterdir()} == before  # nothing was cut


def test_missing_and_garbage_indexes_are_rebuilt(pristine: Path, tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    shutil.copytree(pristine, d)
    log = PartitionLog.open(d, CONFIG, clock=ManualClock())
    log.close()  # clean: indexes are trusted on the next open if consistent
    indexes = sorted(d.glob("*.index"))
    indexes[0].unlink()
    indexes[-1].write_bytes(os.urandom(13))
    sorted(d.glob("*.timeindex"))[0].write_bytes(b"\xff" * 24)
    log = PartitionLog.open(d, CONFIG, clock=ManualClock())
    assert read_all(log) == [f"value-{i}".encode() for i in range(20)]
    assert log.offset_for_timestamp(1005) == (5, 1005)
    assert indexes[0].exists()
    log.close()
