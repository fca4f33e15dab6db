"""Start-up cost is O(segments): sealed segments open lazily (their index files are read on
first use), and recovery after a crash re-reads only what follows the recovery point.

Index-file reads are counted through the storage failure point ``index.read``
(:mod:`riverbed.storage.faults`), not by patching ``os``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _batches import batch, values

from riverbed.clock import ManualClock
from riverbed.errors import CorruptSegmentError
from riverbed.storage import LogConfig, PartitionLog, faults
from riverbed.storage.config import LONG_MAX
from riverbed.storage.segment import LogSegment

CONFIG = LogConfig(segment_bytes=2048, index_interval_bytes=128, flush_messages=LONG_MAX)
TS = 1_700_000_000_000


def fill(log: PartitionLog, start: int, n: int) -> None:
    for i in range(start, start + n):
        log.append(batch(f"value-{i:04d}".encode() + b"." * 40, ts=TS + i))


def read_all(log: PartitionLog) -> list[bytes | None]:
    out: list[bytes | None] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        records = log.read(offset, 1 << 20).records
        got = values(records, offset)
        out.extend(v for _o, v in got)
        offset = got[-1][0] + 1
    return out


def expected(n: int) -> list[bytes | None]:
    return [f"value-{i:04d}".encode() + b"." * 40 for i in range(n)]


def state(seg: LogSegment) -> tuple[int, int, int, int, int]:
    return (
        seg.base_offset,
        seg.next_offset,
        seg.max_timestamp,
        seg.offset_of_max_timestamp,
        seg.first_batch_timestamp,
    )


def index_names(fault: faults.Fault) -> set[str]:
    return {Path(p).name for p in fault.paths}


def test_clean_start_reads_only_the_active_segments_index_files(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = PartitionLog.open(d, CONFIG, clock=ManualClock())
    fill(log, 0, 200)
    log.close()
    with faults.inject("index.read") as reads:
        log = PartitionLog.open(d, CONFIG, clock=ManualClock())
    segments = log.segments()
    assert len(segments) >= 5
    active = segments[-1].offset_index_path.name[:20]
    assert index_names(reads) == {active + ".index", active + ".timeindex"}
    assert not any(seg.indexes_loaded for seg in segments[:-1])

    # the lazy state is what a full (eager) load computes
    for seg in segments[:-1]:
        ref = LogSegment.open(d, seg.base_offset, index_interval_bytes=128, created_ms=0)
        ref.load_trusted(None)
        assert state(seg) == state(ref)
        ref.close()

    # first use of one sealed segment reads its files, and only its
    with faults.inject("index.read") as reads:
        assert log.offset_for_timestamp(TS + 50) == (50, TS + 50)
    owner = next(s for s in segments if s.base_offset <= 50 < s.next_offset)
    assert owner.indexes_loaded
    name = owner.offset_index_path.name[:20]
    assert index_names(reads) == {name + ".index", name + ".timeindex"}
    assert read_all(log) == expected(200)
    log.close()


def test_a_damaged_index_of_a_lazy_segment_is_rebuilt_on_first_use(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = PartitionLog.open(d, CONFIG, clock=ManualClock())
    fill(log, 0, 120)
    log.close()
    first = sorted(d.glob("*.index"))[0]
    data = bytearray(first.read_bytes())
    assert len(data) >= 24
    data[8:16] = b"\xff" * 8  # a middle entry: the lazy open sees only the first and last
    first.write_bytes(bytes(data))
    log = PartitionLog.open(d, CONFIG, clock=ManualClock())
    assert not log.segments()[0].indexes_loaded
    assert read_all(log) == expected(120)
    assert log.offset_for_timestamp(TS + 3) == (3, TS + 3)
    log.close()
    assert first.read_bytes() != bytes(data)  # rewritten from the batch headers


def crashed_log(tmp_path: Path) -> tuple[Path, int]:
    """Sealed segments and an active one, checkpointed at ``recovery_point``, then more
    appends (fsynced) and a crash-like close; returns the dir and the recovery point."""
    d = tmp_path / "t-0"
    config = LogConfig(segment_bytes=1 << 20, index_interval_bytes=128, flush_messages=LONG_MAX)
    log = PartitionLog.open(d, CONFIG, clock=ManualClock())
    fill(log, 0, 100)
    log.close()
    log = PartitionLog.open(d, config, clock=ManualClock())  # one big active segment now
    fill(log, 100, 150)
    log.flush()
    log.checkpoint()
    recovery_point = log.flushed_offset
    fill(log, 250, 30)
    log.flush()
    log.close_unclean()
    return d, recovery_point


def test_unclean_start_reads_sealed_segments_lazily_and_the_active_one_from_the_checkpoint(
    tmp_path: Path,
) -> None:
    d, recovery_point = crashed_log(tmp_path)
    assert recovery_point == 250
    with faults.inject("index.read") as reads:
        log = PartitionLog.open(d, CONFIG, clock=ManualClock())
    active = log.segments()[-1]
    name = active.offset_index_path.name[:20]
    assert index_names(reads) == {name + ".index", name + ".timeindex"}
    assert not any(seg.indexes_loaded for seg in log.segments()[:-1])
    assert active.verified_to == 0  # its prefix below the checkpoint was not re-read
    assert log.offline_error is None and log.log_end_offset == 280
    assert read_all(log) == expected(280)
    assert log.offset_for_timestamp(TS + 260) == (260, TS + 260)
    log.append(batch(b"after", ts=TS + 280))
    assert log.log_end_offset == 281
    log.close()
    log = PartitionLog.open(d, CONFIG, clock=ManualClock())
    assert read_all(log)[-1] == b"after"
    log.close()


def test_damage_after_the_recovery_point_is_still_found_at_start(tmp_path: Path) -> None:
    d, _rp = crashed_log(tmp_path)
    active = sorted(d.glob("*.log"))[-1]
    data = active.read_bytes()
    # a byte inside the value of a record written after the checkpoint (offset 260)
    at = data.index(b"value-0260") + 2
    with open(active, "r+b") as f:
        f.seek(at)
        f.write(b"X")
    log = PartitionLog.open(d, CONFIG, clock=ManualClock())
    assert log.offline_error is not None  # fsynced (below flushed.mark): corruption
    assert active.read_bytes()[:at] == data[:at]  # nothing was cut
    log.close()


def test_damage_below_the_recovery_point_is_never_served(tmp_path: Path) -> None:
    """Below the recovery point the active segment is trusted as a sealed one is: the
    start does not read it, serving verifies it (riverbed.storage.verify)."""
    d, _rp = crashed_log(tmp_path)
    active = sorted(d.glob("*.log"))[-1]
    at = active.read_bytes().index(b"value-0150") + 2
    with open(active, "r+b") as f:
        f.seek(at)
        f.write(b"X")
    log = PartitionLog.open(d, CONFIG, clock=ManualClock())
    assert log.offline_error is None and log.log_end_offset == 280
    with pytest.raises(CorruptSegmentError, match=active.name):
        read_all(log)
    log.close_unclean()


def test_a_short_time_index_moves_the_checked_start_earlier(tmp_path: Path) -> None:
    """A time index cut short (its writes never fsynced) must not let recovery trust
    batches whose timestamps it does not cover: the max timestamp stays exact."""
    d, _rp = crashed_log(tmp_path)
    timeindex = sorted(d.glob("*.timeindex"))[-1]
    data = timeindex.read_bytes()
    timeindex.write_bytes(data[: (len(data) // 12 // 4) * 12])
    log = PartitionLog.open(d, CONFIG, clock=ManualClock())
    active = log.segments()[-1]
    assert log.offline_error is None and log.log_end_offset == 280
    assert (active.max_timestamp, active.offset_of_max_timestamp) == (TS + 279, 279)
    assert log.offset_for_timestamp(TS + 120) == (120, TS + 120)
    assert read_all(log) == expected(280)
    log.close()


def test_an_index_entry_off_a_batch_start_falls_back_to_a_full_check(tmp_path: Path) -> None:
    d, _rp = crashed_log(tmp_path)
    index = sorted(d.glob("*.index"))[-1]
    data = bytearray(index.read_bytes())
    last = len(data) // 8 - 1
    position = int.from_bytes(data[last * 8 + 4 : last * 8 + 8], "big")
    for i in range(last + 1):  # every entry 5 bytes off its batch: none is usable
        pos = int.from_bytes(data[i * 8 + 4 : i * 8 + 8], "big")
        data[i * 8 + 4 : i * 8 + 8] = (pos + 5).to_bytes(4, "big")
    assert position > 0
    index.write_bytes(bytes(data))
    log = PartitionLog.open(d, CONFIG, clock=ManualClock())
    assert log.offline_error is None and log.log_end_offset == 280
    assert log.segments()[-1].verified_to > 0  # checked from byte 0, as before
    assert read_all(log) == expected(280)
    log.close()


def test_a_flush_writes_a_producer_snapshot_every_interval_so_a_crash_replays_little(
    tmp_path: Path,
) -> None:
    d = tmp_path / "t-0"
    config = LogConfig(segment_bytes=1 << 20, flush_messages=LONG_MAX)
    log = PartitionLog.open(d, config, clock=ManualClock())
    log.snapshot_interval_bytes = 2000
    for i in range(200):
        log.append(batch(b"v" * 40, ts=TS + i, pid=7, epoch=0, seq=i))
        if i % 10 == 9:
            log.flush()
    end = log.log_end_offset
    log.close_unclean()
    snapshots = sorted(int(p.name[:20]) for p in d.glob("*.snapshot"))
    assert len(snapshots) == 1 and end - 10 <= snapshots[0] <= end  # the previous ones went
    log = PartitionLog.open(d, config, clock=ManualClock())
    assert log.log_end_offset == end
    retry = log.append(batch(b"v" * 40, ts=TS + 199, pid=7, epoch=0, seq=199))
    assert retry.duplicate and retry.base_offset == end - 1
    nxt = log.append(batch(b"w", ts=TS + 200, pid=7, epoch=0, seq=200))
    assert not nxt.duplicate and nxt.base_offset == end
    log.close()
