"""The log's side of transactions: open transactions hold the LSO, markers end them,
ABORTs go to the segment's ``.txnindex``, read_committed reads stop at the LSO and carry
the aborted transactions, snapshots and recovery keep it all.

Timelines: ``T1`` = transactional batch of producer 1, ``C1``/``A1`` its COMMIT/ABORT
marker, ``n`` a plain batch; the LSO is drawn as ``^``.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from _batches import batch

from riverbed.clock import ManualClock
from riverbed.errors import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    TransactionCoordinatorFencedError,
    error_code_for,
)
from riverbed.protocol.batch import BatchHeader
from riverbed.protocol.control import build_control_batch
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.records import build_batch, iter_batches_with_records
from riverbed.storage import LogConfig, PartitionLog
from riverbed.storage.cleaner import LogCleaner
from riverbed.storage.producer_state import SNAPSHOT_SUFFIX
from riverbed.storage.transactions import IsolationLevel
from riverbed.storage.txn_index import AbortedTxn, TransactionIndex
from riverbed.testing.read_committed import committed_records

T0 = 1_700_000_000_000
RC = IsolationLevel.READ_COMMITTED


def txn(pid: int, seq: int, *values: bytes, epoch: int = 0, key: bytes | None = None) -> bytes:
    return build_batch(
        [(key, v, T0) for v in values],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=True,
        base_timestamp=T0,
    )


def open_log(path: Path, clock: ManualClock | None = None, **cfg: object) -> PartitionLog:
    return PartitionLog.open(
        path,
        LogConfig(**cfg),  # type: ignore[arg-type]
        clock=clock or ManualClock(T0),
    )


def seen(log: PartitionLog) -> list[bytes | None]:
    return [r.value for r in committed_records(log)]


def txn_files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.glob("*.txnindex"))}


def test_open_transaction_holds_the_lso_and_commit_releases_it(tmp_path: Path) -> None:
    # n  T1 T1 n  C1
    # 0  1  2  3  4
    #    ^ LSO while open
    log = open_log(tmp_path / "t-0")
    log.append(batch(b"a"))
    log.append(txn(1, 0, b"b", b"c"))
    log.append(batch(b"d"))
    assert (log.last_stable_offset, log.high_watermark) == (1, 4)
    assert log.ongoing_transactions() == {1: 1}
    result = log.read(0, 1 << 20, isolation=RC)
    assert [h.base_offset for h, _ in iter_batches_with_records(result.records)] == [0]
    assert (result.last_stable_offset, result.aborted_transactions) == (1, ())
    assert log.read(1, 1 << 20, isolation=RC).records == b""
    assert log.read(3, 1 << 20, isolation=RC).records == b""  # between LSO and end: empty
    assert log.read(0, 1 << 20).aborted_transactions is None  # read_uncommitted: all
    assert log.offset_for_timestamp(-1, isolation=RC) == (1, -1)
    assert log.offset_for_timestamp(-1) == (4, -1)
    assert log.offset_for_timestamp(T0, isolation=RC) == (0, T0)
    result_marker = log.append_control_marker(1, 0, True, 5)
    assert result_marker.base_offset == 4
    assert log.last_stable_offset == 5 and log.ongoing_transactions() == {}
    assert seen(log) == [b"a", b"b", b"c", b"d"]
    assert txn_files(log.directory) == {}  # commits leave no index entry


def test_abort_is_indexed_in_kafkas_format_and_filtered_by_consumers(tmp_path: Path) -> None:
    # T1 T2 T1 A1 n  C2
    # 0  1  2  3  4  5
    #    ^ LSO after A1 (producer 2 still open)
    log = open_log(tmp_path / "t-0")
    log.append(txn(1, 0, b"x1"))
    log.append(txn(2, 0, b"y1"))
    log.append(txn(1, 1, b"x2"))
    marker = log.append_control_marker(1, 0, False, 7)
    assert marker.base_offset == 3
    assert log.last_stable_offset == 1
    entry = AbortedTxn(1, 0, 3, 1)
    assert txn_files(log.directory) == {
        "00000000000000000000.txnindex": struct.pack(">hqqqq", 0, 1, 0, 3, 1)
    }
    log.append(batch(b"n"))
    log.append_control_marker(2, 0, True, 7)
    assert log.last_stable_offset == 6
    assert log.collect_aborted_transactions(0, 6) == [entry]
    assert log.collect_aborted_transactions(4, 6) == []  # ended before the range
    result = log.read(0, 1 << 20, isolation=RC)
    assert result.aborted_transactions == (entry,)
    assert seen(log) == [b"y1", b"n"]
    # the marker batch is byte for byte what Kafka's coordinator writes
    raw = log.read(3, 1 << 20).records
    header = BatchHeader.parse(raw)
    assert header.is_control and header.is_transactional and header.base_sequence == -1
    assert raw[: header.size] == build_control_batch(
        False, producer_id=1, producer_epoch=0, timestamp=T0, base_offset=3, coordinator_epoch=7
    )


def test_markers_with_old_epochs_are_fenced_and_write_nothing(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    log.append(txn(1, 0, b"a", epoch=3))
    with pytest.raises(InvalidProducerEpochError) as exc:
        log.append_control_marker(1, 2, True, 0)
    assert error_code_for(exc.value) is ErrorCode.INVALID_PRODUCER_EPOCH
    log.append_control_marker(1, 3, False, 4)
    log.append(txn(1, 1, b"b", epoch=3))
    with pytest.raises(TransactionCoordinatorFencedError) as fenced:
        log.append_control_marker(1, 3, True, 3)
    assert error_code_for(fenced.value) is ErrorCode.TRANSACTION_COORDINATOR_FENCED
    assert log.log_end_offset == 3 and log.last_stable_offset == 2
    # a marker with a newer epoch (transaction version 2 bumps it) is accepted
    log.append_control_marker(1, 4, True, 4)
    assert log.last_stable_offset == 4 and log.producers.entries[1].producer_epoch == 4


def test_plain_batch_inside_an_open_transaction_is_refused(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    log.append(txn(1, 0, b"a"))
    with pytest.raises(InvalidTxnStateError) as exc:
        log.append(batch(b"b", pid=1, epoch=0, seq=1))
    assert error_code_for(exc.value) is ErrorCode.INVALID_TXN_STATE
    assert log.log_end_offset == 1


def test_marker_without_data_still_written_and_empty_abort_indexed(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    log.append_control_marker(9, 0, False, 0)
    assert log.collect_aborted_transactions(0, 1) == [AbortedTxn(9, 0, 0, 1)]
    assert log.last_stable_offset == 1


def test_open_transactions_survive_a_clean_restart(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    log = open_log(tmp_path / "t-0", clock)
    log.append(batch(b"a"))
    log.append(txn(1, 0, b"b"))
    log.append(txn(2, 0, b"c"))
    log.append_control_marker(2, 0, False, 1)
    log.close()
    log = open_log(tmp_path / "t-0", clock)
    assert log.last_stable_offset == 1 and log.ongoing_transactions() == {1: 1}
    assert log.collect_aborted_transactions(0, 4) == [AbortedTxn(2, 2, 3, 1)]
    log.append_control_marker(1, 0, True, 1)
    assert seen(log) == [b"a", b"b"]
    log.close()


def test_open_transaction_is_not_expired(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    log = PartitionLog.open(
        tmp_path / "t-0", LogConfig(), clock=clock, producer_id_expiration_ms=1000
    )
    log.append(txn(1, 0, b"a"))
    log.append(batch(b"b", pid=2, epoch=0, seq=0, ts=T0))
    clock.advance(10_000)
    assert log.remove_expired_producers() == 1
    assert log.last_stable_offset == 0
    log.close()


def test_snapshot_version_1_still_loads(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory)
    log.append(batch(b"a", pid=5, epoch=2, seq=0, ts=T0))
    log.close()
    # rewrite the snapshot in the pre-transaction layout (version 1)
    from riverbed.protocol.batch import crc32c

    body = (
        struct.pack(">i", 1) + struct.pack(">qhqb", 5, 2, T0, 1) + struct.pack(">iiqq", 0, 0, 0, 0)
    )
    (snapshot,) = directory.glob("*" + SNAPSHOT_SUFFIX)
    snapshot.write_bytes(struct.pack(">hI", 1, crc32c(body)) + body)
    log = open_log(directory)
    entry = log.producers.entries[5]
    assert (entry.producer_epoch, entry.current_txn_first_offset, entry.coordinator_epoch) == (
        2,
        -1,
        -1,
    )
    assert log.append(batch(b"a", pid=5, epoch=2, seq=0, ts=T0)).duplicate
    log.close()


def _busy_log(directory: Path, clock: ManualClock) -> PartitionLog:
    """Several segments; transactions spanning rolls, aborted and committed, one open."""
    log = open_log(directory, clock, segment_bytes=300)
    log.append(txn(1, 0, b"p1-0"))
    log.append(txn(2, 0, b"p2-0"))
    for i in range(4):
        log.append(batch(b"n%d" % i))
    log.append(txn(1, 1, b"p1-1"))
    log.append_control_marker(1, 0, False, 0)
    log.append(txn(3, 0, b"p3-0"))
    log.append_control_marker(2, 0, True, 0)
    log.append(txn(1, 2, b"p1-2"))
    log.append_control_marker(3, 0, False, 0)
    log.append(txn(2, 1, b"p2-1"))  # stays open
    log.append(batch(b"tail"))
    return log


def test_unclean_restart_rebuilds_lso_and_lost_indexes(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    directory = tmp_path / "t-0"
    log = _busy_log(directory, clock)
    assert len(log.segments()) > 2
    before = (
        log.last_stable_offset,
        log.collect_aborted_transactions(0, 1 << 40),
        seen(log),
        txn_files(directory),
        log.ongoing_transactions(),
    )
    assert len(before[1]) == 2 and len(before[4]) == 2
    log.close_unclean()
    # a kill -9 right after the later rolls: their producer snapshots were never
    # written and the aborted-transaction indexes after the oldest one are lost
    snapshots = sorted(directory.glob("*" + SNAPSHOT_SUFFIX))
    assert len(snapshots) >= 2
    for path in snapshots[1:]:
        path.unlink()
    kept = int(snapshots[0].name[:20])
    lost = [p for p in directory.glob("*.txnindex") if int(p.name[:20]) >= kept]
    assert lost
    for path in lost:
        path.unlink()
    log = open_log(directory, clock, segment_bytes=300)
    after = (
        log.last_stable_offset,
        log.collect_aborted_transactions(0, 1 << 40),
        seen(log),
        txn_files(directory),
        log.ongoing_transactions(),
    )
    assert after == before
    assert [v for v in after[2] if v is not None and v.startswith(b"p")] == [b"p2-0"]
    log.close()


def test_crash_between_data_and_marker_keeps_the_transaction_open(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    directory = tmp_path / "t-0"
    log = open_log(directory, clock)
    log.append(txn(1, 0, b"a"))
    log.append(batch(b"b"))
    log.flush()
    log.close_unclean()
    log = open_log(directory, clock)
    assert log.last_stable_offset == 0 and seen(log) == []
    log.append_control_marker(1, 0, False, 0)  # the coordinator completes it
    assert seen(log) == [b"b"] and log.last_stable_offset == 3
    log.close()


def test_truncation_drops_index_entries_of_removed_markers(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    log.append(txn(1, 0, b"a"))
    log.append_control_marker(1, 0, False, 0)
    log.append(txn(2, 0, b"b"))
    log.append_control_marker(2, 0, False, 0)
    log.truncate_to(3)
    assert log.collect_aborted_transactions(0, 10) == [AbortedTxn(1, 0, 1, 2)]
    assert log.ongoing_transactions() == {2: 2} and log.last_stable_offset == 2
    log.close()


def test_retention_deletes_the_txnindex_with_its_segment(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    directory = tmp_path / "t-0"
    log = open_log(directory, clock, segment_bytes=200, retention_ms=1000, file_delete_delay_ms=0)
    log.append(txn(1, 0, b"a"))
    log.append_control_marker(1, 0, False, 0)
    log.roll()
    log.append(batch(b"later", ts=T0 + 5000))
    assert "00000000000000000000.txnindex" in txn_files(directory)
    clock.advance(3000)
    assert log.enforce_retention() == 1
    assert txn_files(directory) == {}
    assert not list(directory.glob("*.deleted"))
    assert log.collect_aborted_transactions(0, 10) == []
    log.close()


def test_compaction_keeps_the_aborted_transactions_of_merged_segments(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    directory = tmp_path / "t-0"
    log = open_log(
        directory,
        clock,
        segment_bytes=1000,
        cleanup_policy="compact",
        min_cleanable_dirty_ratio=0.0,
        file_delete_delay_ms=0,
    )
    log.append(txn(1, 0, b"a", key=b"k1"))
    log.append_control_marker(1, 0, False, 0)
    log.roll()
    log.append(txn(2, 0, b"b", key=b"k2"))
    log.append_control_marker(2, 0, False, 0)
    log.roll()
    log.append(batch(b"c", key=b"k3"))
    before = log.collect_aborted_transactions(0, 10)
    assert len(before) == 2
    result = LogCleaner(clock).clean(log)
    assert result is not None and result.segments_after == 1
    assert log.collect_aborted_transactions(0, 10) == before
    assert list(txn_files(directory)) == ["00000000000000000000.txnindex"]
    log.close_unclean()
    log = open_log(directory, clock, segment_bytes=1000, cleanup_policy="compact")
    assert log.collect_aborted_transactions(0, 10) == before
    log.close()


def test_recovery_completes_a_swap_with_its_txnindex(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory)
    log.append(txn(1, 0, b"a"))
    log.append_control_marker(1, 0, False, 0)
    log.close()
    entry = AbortedTxn(1, 0, 1, 2)
    # committed swap: the recovery renames both swaps
    log_file = directory / "00000000000000000000.log"
    (directory / "00000000000000000000.log.swap").write_bytes(log_file.read_bytes())
    (directory / "00000000000000000000.txnindex").unlink()
    (directory / "00000000000000000000.txnindex.swap").write_bytes(entry.encode())
    # a stray one of a swap that never committed is deleted
    (directory / "00000000000000000009.txnindex.swap").write_bytes(entry.encode())
    log = open_log(directory)
    assert log.collect_aborted_transactions(0, 10) == [entry]
    assert not list(directory.glob("*.swap"))
    log.close()


def test_txnindex_torn_tail_is_cut(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.txnindex"
    entries = [AbortedTxn(1, 0, 3, 4), AbortedTxn(2, 1, 7, 8)]
    path.write_bytes(b"".join(e.encode() for e in entries) + b"\x00" * 10)
    index = TransactionIndex.load(path, 0)
    assert index.entries == entries and path.stat().st_size == 68
    assert index.collect(4, 100) == ([entries[1]], False)
    assert index.collect(0, 4) == ([entries[0]], True)


def test_compaction_drops_aborted_data_and_never_lets_it_shadow_committed(tmp_path: Path) -> None:
    # n(k=v1) T1(k=x) A1 T2(k=v2) C2 | n   (| = roll)
    clock = ManualClock(T0)
    log = open_log(
        tmp_path / "t-0",
        clock,
        segment_bytes=1000,
        cleanup_policy="compact",
        min_cleanable_dirty_ratio=0.0,
        file_delete_delay_ms=0,
    )
    log.append(batch(b"v1", key=b"k"))
    log.append(txn(1, 0, b"x", key=b"k"))
    log.append_control_marker(1, 0, False, 0)
    log.append(txn(2, 0, b"y", key=b"j"))
    log.append(txn(3, 0, b"z", key=b"j"))
    log.append_control_marker(3, 0, False, 0)
    log.append_control_marker(2, 0, True, 0)
    log.roll()
    log.append(batch(b"tail", key=b"t"))
    assert seen(log) == [b"v1", b"y", b"tail"]
    result = LogCleaner(clock).clean(log)
    assert result is not None and result.records_removed == 2  # x and z, nothing else
    assert seen(log) == [b"v1", b"y", b"tail"]
    everything = [
        r.value
        for _h, rs in iter_batches_with_records(log.read(0, 1 << 20).records)
        for r in rs
        if not _h.is_control
    ]
    assert everything == [b"v1", b"y"]  # read_uncommitted: the aborted records are gone
    log.close()


def test_compaction_stops_at_the_segment_of_the_lso(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    log = open_log(
        tmp_path / "t-0",
        clock,
        segment_bytes=1000,
        cleanup_policy="compact",
        min_cleanable_dirty_ratio=0.0,
        file_delete_delay_ms=0,
    )
    log.append(batch(b"old", key=b"k"))
    log.roll()
    log.append(txn(1, 0, b"open", key=b"k"))  # open: its segment must not be cleaned
    log.append(batch(b"new", key=b"k"))
    log.roll()
    log.append(batch(b"tail", key=b"t"))
    segments = [s.base_offset for s in log.segments()]
    LogCleaner(clock).clean(log)
    assert [s.base_offset for s in log.segments()] == segments
    assert len(log.read(1, 1 << 20).records) > 0
    raw = log.read(0, 1 << 20).records
    assert [r.value for _h, rs in iter_batches_with_records(raw) for r in rs] == [b"old"]
    log.close()


def test_power_loss_after_a_marker_leaves_no_index_entry_without_its_marker(tmp_path: Path) -> None:
    from riverbed.storage import faults

    directory = tmp_path / "t-0"
    log = open_log(directory)
    log.append(txn(1, 0, b"a"))
    log.close()  # producer snapshot at offset 1
    with faults.record_power_loss() as power:
        log = open_log(directory, flush_messages=(1 << 63) - 1)  # fsync left to the OS
        log.append_control_marker(1, 0, False, 0)  # never fsynced
        assert log.collect_aborted_transactions(0, 10) == [AbortedTxn(1, 0, 1, 2)]
        log.close_unclean()
        assert sum(power.cut().values()) > 0  # the marker is lost, its index entry not
    log = open_log(directory)
    assert log.log_end_offset == 1
    assert log.collect_aborted_transactions(0, 10) == []
    assert log.ongoing_transactions() == {1: 0} and log.last_stable_offset == 0
    log.close()


def test_a_failed_marker_write_changes_nothing(tmp_path: Path) -> None:
    import errno

    from riverbed.errors import StorageError
    from riverbed.storage import faults

    log = open_log(tmp_path / "t-0")
    log.append(txn(1, 0, b"a"))
    with faults.inject("segment.write", error=errno.ENOSPC), pytest.raises(StorageError):
        log.append_control_marker(1, 0, False, 0)
    assert log.log_end_offset == 1 and log.ongoing_transactions() == {1: 0}
    assert log.collect_aborted_transactions(0, 10) == [] and txn_files(log.directory) == {}
    with (
        faults.inject("index.flush", error=errno.ENOSPC, match=".txnindex"),
        pytest.raises(StorageError, match=r"txnindex failed: .*\(ENOSPC\)"),
    ):
        log.append_control_marker(1, 0, False, 0)
    assert log.log_end_offset == 1 and log.ongoing_transactions() == {1: 0}
    log.append_control_marker(1, 0, False, 0)  # the coordinator's retry
    assert log.collect_aborted_transactions(0, 10) == [AbortedTxn(1, 0, 1, 2)]
    log.close()


def _control_offsets(log: PartitionLog) -> list[int]:
    raw = log.read(log.log_start_offset, 1 << 20).records
    return [h.base_offset for h, _r in iter_batches_with_records(raw) if h.is_control]


def test_markers_guarding_nothing_go_after_delete_retention(tmp_path: Path) -> None:
    # T1(k) C1 T2(j) A2 n(k) T1(z) C1 T2(z) C2 | n
    # 0     1  2     3  4    5     6  7     8    9
    clock = ManualClock(T0)
    cfg: dict[str, object] = dict(
        segment_bytes=4000,
        cleanup_policy="compact",
        min_cleanable_dirty_ratio=0.0,
        file_delete_delay_ms=0,
        delete_retention_ms=1000,
    )
    log = open_log(tmp_path / "t-0", clock, **cfg)
    log.append(txn(1, 0, b"old", key=b"k"))
    log.append_control_marker(1, 0, True, 0)
    log.append(txn(2, 0, b"aborted", key=b"j"))
    log.append_control_marker(2, 0, False, 0)
    log.append(batch(b"new", key=b"k"))  # shadows offset 0
    log.append(txn(1, 1, b"z1", key=b"z"))
    log.append_control_marker(1, 0, True, 0)
    log.append(txn(2, 1, b"z2", key=b"z"))
    log.append_control_marker(2, 0, True, 0)
    log.roll()
    log.append(batch(b"tail", key=b"t"))
    cleaner = LogCleaner(clock)
    assert seen(log) == [b"old", b"new", b"z1", b"z2", b"tail"]
    assert cleaner.clean(log) is not None  # drops old and aborted: markers still guard
    assert seen(log) == [b"new", b"z2", b"tail"] and _control_offsets(log) == [1, 3, 6, 8]
    assert log.collect_aborted_transactions(0, 10) == [AbortedTxn(2, 2, 3, 4)]
    assert cleaner.clean(log) is not None  # markers 1 and 3 guard nothing: horizon set
    assert _control_offsets(log) == [1, 3, 6, 8]
    assert not cleaner.needs_cleaning(log)
    clock.advance(1000)
    assert cleaner.needs_cleaning(log)
    assert cleaner.clean(log) is not None
    assert _control_offsets(log) == [6, 8]  # 8 stays: it guards z2 (6 guarded z1, gone)
    assert log.collect_aborted_transactions(0, 10) == []
    assert seen(log) == [b"new", b"z2", b"tail"]
    log.close()
    log = open_log(tmp_path / "t-0", clock, **cfg)
    assert seen(log) == [b"new", b"z2", b"tail"] and log.last_stable_offset == 10
    log.close()


def test_an_old_snapshot_cannot_reopen_a_transaction_compaction_removed(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    directory = tmp_path / "t-0"
    cfg: dict[str, object] = dict(
        segment_bytes=4000,
        cleanup_policy="compact",
        min_cleanable_dirty_ratio=0.0,
        file_delete_delay_ms=0,
        delete_retention_ms=0,
    )
    log = open_log(directory, clock, **cfg)
    log.append(txn(1, 0, b"old", key=b"k"))
    log.close()  # snapshot at 1: producer 1's transaction open from 0
    log = open_log(directory, clock, **cfg)
    log.append_control_marker(1, 0, False, 0)
    log.append(batch(b"new", key=b"k"))
    log.append(batch(b"p1", key=b"p", pid=1, epoch=0, seq=1))  # 0 is no longer its last
    log.roll()
    log.append(batch(b"tail", key=b"t"))
    cleaner = LogCleaner(clock)
    for _ in range(3):
        cleaner.clean(log)
    assert _control_offsets(log) == [] and seen(log) == [b"new", b"p1", b"tail"]
    log.close_unclean()
    for path in directory.glob("*" + SNAPSHOT_SUFFIX):  # a crash lost the newer snapshots
        if path.name != "00000000000000000001.snapshot":
            path.unlink()
    log = open_log(directory, clock, **cfg)
    assert log.ongoing_transactions() == {} and log.last_stable_offset == 5
    assert seen(log) == [b"new", b"p1", b"tail"]
    log.close()
