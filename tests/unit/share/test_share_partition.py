"""Every transition of a share partition's offsets, one test each.

Timelines show the in-flight window; letters are states (A available, Q acquired,
K acknowledged, X archived), digits the delivery count::

    offsets   10 11 12 13 14
    state     Q1 Q1 Q1 Q1 Q1      after acquire("m1", [(10, 14)])
"""

from __future__ import annotations

import uuid

import pytest

from riverbed.errors import ConfigError
from riverbed.protocol.error_codes import ErrorCode
from riverbed.share import (
    AcknowledgeType,
    AcquiredRecords,
    ArchivedRecords,
    ArchiveReason,
    DeliveryState,
    RecordState,
    SharePartition,
    SharePartitionConfig,
    StateBatch,
    initial_start_offset,
)

R = RecordState
A, Q, K, X = R.AVAILABLE, R.ACQUIRED, R.ACKNOWLEDGED, R.ARCHIVED
GAP, ACCEPT, RELEASE, REJECT, RENEW = (int(t) for t in AcknowledgeType)
TOPIC = uuid.UUID(int=7)
LOCK = 30_000


def make(start: int = 10, **cfg: int) -> SharePartition:
    return SharePartition("g", TOPIC, 0, SharePartitionConfig(**cfg), start_offset=start)  # type: ignore[arg-type]


def states(sp: SharePartition) -> list[tuple[int, int, RecordState, int, str | None]]:
    return list(sp.in_flight())


def test_ack_types_match_the_schema_numbering() -> None:
    assert [int(t) for t in AcknowledgeType] == [0, 1, 2, 3, 4]
    assert [t.name for t in AcknowledgeType] == ["GAP", "ACCEPT", "RELEASE", "REJECT", "RENEW"]
    assert [int(s) for s in DeliveryState] == [0, 2, 4]


def test_config_is_validated() -> None:
    with pytest.raises(ConfigError):
        SharePartitionConfig(delivery_count_limit=0)
    with pytest.raises(ConfigError):
        SharePartitionConfig(record_lock_duration_ms=0)
    with pytest.raises(ConfigError):
        SharePartitionConfig(auto_offset_reset="middle")  # type: ignore[arg-type]
    cfg = SharePartitionConfig(auto_offset_reset="earliest")
    assert initial_start_offset(cfg, 3, 50) == 3
    assert initial_start_offset(SharePartitionConfig(), 3, 50) == 50


def test_acquire_new_offsets_locks_them_with_delivery_count_one() -> None:
    sp = make()
    assert sp.next_fetch_offset() == 10
    r = sp.acquire("m1", [(10, 14)], 100, now_ms=0)
    assert r.acquired == (AcquiredRecords(10, 14, 1),)
    assert states(sp) == [(10, 14, Q, 1, "m1")]
    assert sp.next_fetch_offset() == 15 and sp.end_offset == 15
    assert sp.acquired_records == 5 and sp.in_flight_records == 5
    assert sp.next_lock_deadline_ms() == LOCK
    # The first change of a new partition is written as a snapshot.
    (rec,) = r.records
    assert rec.is_snapshot and rec.start_offset == 10
    assert rec.state_batches == (StateBatch(10, 14, DeliveryState.AVAILABLE, 1),)


def test_acquire_respects_max_records_and_resumes() -> None:
    sp = make()
    assert sp.acquire("m1", [(10, 19)], 3, 0).acquired == (AcquiredRecords(10, 12, 1),)
    assert sp.next_fetch_offset() == 13
    assert sp.acquire("m2", [(10, 19)], 3, 0).acquired == (AcquiredRecords(13, 15, 1),)
    assert states(sp) == [(10, 12, Q, 1, "m1"), (13, 15, Q, 1, "m2")]


def test_acquire_skips_offsets_below_start_and_already_acquired() -> None:
    sp = make()
    sp.acquire("m1", [(10, 12)], 100, 0)
    r = sp.acquire("m2", [(5, 15)], 100, 0)
    assert r.acquired == (AcquiredRecords(13, 15, 1),)


def test_offsets_between_batches_are_archived_as_gaps() -> None:
    #   10 11 12 13 14 15
    #   Q1 Q1 X0 X0 Q1 Q1     batches (10,11) and (14,15): 12-13 are control/aborted
    sp = make()
    r = sp.acquire("m1", [(10, 11), (14, 15)], 100, 0)
    assert r.acquired == (AcquiredRecords(10, 11, 1), AcquiredRecords(14, 15, 1))
    assert states(sp) == [(10, 11, Q, 1, "m1"), (12, 13, X, 0, None), (14, 15, Q, 1, "m1")]
    # Gaps are not dead letters, and a gap at the front moves the start offset.
    sp2 = make()
    sp2.acquire("m1", [(13, 14)], 100, 0)
    assert sp2.start_offset == 13


def test_in_flight_limit_stops_new_acquisitions() -> None:
    sp = make(max_in_flight_records=4)
    assert sp.acquire("m1", [(10, 20)], 100, 0).acquired == (AcquiredRecords(10, 13, 1),)
    assert sp.acquire("m2", [(14, 20)], 100, 0).acquired == ()
    sp.acknowledge("m1", [(10, 11, [ACCEPT])], 1)  # start moves to 12: two more allowed
    assert sp.acquire("m2", [(14, 20)], 100, 2).acquired == (AcquiredRecords(14, 15, 1),)


def test_accept_acknowledges_and_moves_the_start_offset() -> None:
    sp = make()
    sp.acquire("m1", [(10, 14)], 100, 0)
    r = sp.acknowledge("m1", [(10, 12, [ACCEPT])], 1)
    assert r.error_code is ErrorCode.NONE and r.archived == ()
    assert sp.start_offset == 13
    assert states(sp) == [(13, 14, Q, 1, "m1")]
    (rec,) = r.records
    # Offsets below the new start offset need no batch: the start offset says they are done.
    assert not rec.is_snapshot and rec.start_offset == 13 and rec.state_batches == ()


def test_accept_out_of_order_keeps_the_start_offset() -> None:
    sp = make()
    sp.acquire("m1", [(10, 14)], 100, 0)
    r = sp.acknowledge("m1", [(12, 14, [ACCEPT])], 1)
    assert sp.start_offset == 10 and r.records[0].start_offset == -1
    assert sp.delivery_complete_count == 3
    assert sp.lag(high_watermark=20) == 20 - 10 - 3


def test_release_makes_records_available_again_with_their_count() -> None:
    sp = make()
    sp.acquire("m1", [(10, 14)], 100, 0)
    r = sp.acknowledge("m1", [(11, 12, [RELEASE])], 1)
    assert states(sp) == [(10, 10, Q, 1, "m1"), (11, 12, A, 1, None), (13, 14, Q, 1, "m1")]
    assert r.records[0].state_batches == (StateBatch(11, 12, DeliveryState.AVAILABLE, 1),)
    assert sp.next_fetch_offset() == 11
    again = sp.acquire("m2", [(10, 14)], 100, 2)
    assert again.acquired == (AcquiredRecords(11, 12, 2),)


def test_release_at_the_delivery_limit_archives() -> None:
    sp = make(delivery_count_limit=2)
    sp.acquire("m1", [(10, 10)], 100, 0)
    sp.acknowledge("m1", [(10, 10, [RELEASE])], 1)
    sp.acquire("m1", [(10, 10)], 100, 2)
    r = sp.acknowledge("m1", [(10, 10, [RELEASE])], 3)
    assert r.archived == (ArchivedRecords(10, 10, 2, ArchiveReason.DELIVERY_LIMIT),)
    assert sp.start_offset == 11 and states(sp) == []


def test_reject_archives_and_reports_a_dead_letter() -> None:
    sp = make()
    sp.acquire("m1", [(10, 12)], 100, 0)
    r = sp.acknowledge("m1", [(11, 11, [REJECT])], 1)
    assert r.archived == (ArchivedRecords(11, 11, 1, ArchiveReason.REJECTED),)
    assert states(sp)[1] == (11, 11, X, 1, None)
    assert r.records[0].state_batches == (StateBatch(11, 11, DeliveryState.ARCHIVED, 1),)


def test_gap_archives_without_a_dead_letter() -> None:
    sp = make()
    sp.acquire("m1", [(10, 12)], 100, 0)
    r = sp.acknowledge("m1", [(10, 12, [ACCEPT, GAP, ACCEPT])], 1)
    assert r.archived == () and sp.start_offset == 13


def test_renew_extends_the_lock_and_persists_nothing() -> None:
    sp = make()
    sp.acquire("m1", [(10, 12)], 100, 0)
    r = sp.acknowledge("m1", [(10, 12, [RENEW, ACCEPT, RENEW])], 20_000)
    assert r.error_code is ErrorCode.NONE
    assert r.records[0].state_batches == (StateBatch(11, 11, DeliveryState.ACKNOWLEDGED, 1),)
    assert sp.expire_locks(LOCK).released == 0  # the original deadline passed: renewed
    assert sp.expire_locks(20_000 + LOCK).released == 2
    assert states(sp) == [(10, 10, A, 1, None), (11, 11, K, 1, None), (12, 12, A, 1, None)]


def test_renew_only_is_not_persisted() -> None:
    sp = make()
    sp.acquire("m1", [(10, 12)], 100, 0)
    assert sp.acknowledge("m1", [(10, 12, [RENEW])], 5).records == ()


def test_per_offset_types_apply_to_each_offset() -> None:
    sp = make()
    sp.acquire("m1", [(10, 14)], 100, 0)
    types = [ACCEPT, RELEASE, REJECT, GAP, ACCEPT]
    r = sp.acknowledge("m1", [(10, 14, types)], 1)
    assert r.error_code is ErrorCode.NONE
    assert states(sp) == [(11, 11, A, 1, None), (12, 13, X, 1, None), (14, 14, K, 1, None)]
    assert sp.start_offset == 11


def test_lock_timeout_releases_and_archives_at_the_limit() -> None:
    sp = make(delivery_count_limit=2)
    sp.acquire("m1", [(10, 11)], 100, 0)
    assert sp.expire_locks(LOCK - 1).released == 0
    e = sp.expire_locks(LOCK)
    assert e.released == 2 and e.archived == ()
    assert states(sp) == [(10, 11, A, 1, None)]
    assert e.records[0].state_batches == (StateBatch(10, 11, DeliveryState.AVAILABLE, 1),)
    sp.acquire("m2", [(10, 11)], 100, LOCK)
    e = sp.expire_locks(2 * LOCK)
    assert e.archived == (ArchivedRecords(10, 11, 2, ArchiveReason.DELIVERY_LIMIT),)
    assert sp.start_offset == 12


def test_ack_after_lock_timeout_is_invalid_record_state() -> None:
    sp = make()
    sp.acquire("m1", [(10, 11)], 100, 0)
    sp.expire_locks(LOCK)
    r = sp.acknowledge("m1", [(10, 11, [ACCEPT])], LOCK + 1)
    assert r.error_code is ErrorCode.INVALID_RECORD_STATE and r.records == ()


def test_only_the_holding_member_may_acknowledge() -> None:
    sp = make()
    sp.acquire("m1", [(10, 11)], 100, 0)
    sp.acquire("m2", [(12, 13)], 100, 0)
    r = sp.acknowledge("m2", [(11, 12, [ACCEPT])], 1)
    assert r.error_code is ErrorCode.INVALID_RECORD_STATE
    assert states(sp) == [(10, 11, Q, 1, "m1"), (12, 13, Q, 1, "m2")]  # nothing applied


@pytest.mark.parametrize(
    "batches",
    [
        [(10, 9, [ACCEPT])],
        [(10, 12, [ACCEPT, ACCEPT])],
        [(10, 10, [7])],
        [(10, 11, [ACCEPT]), (11, 12, [ACCEPT])],
        [(-1, 0, [ACCEPT])],
    ],
)
def test_malformed_acknowledgements_are_invalid_request(
    batches: list[tuple[int, int, list[int]]],
) -> None:
    sp = make()
    sp.acquire("m1", [(10, 14)], 100, 0)
    r = sp.acknowledge("m1", batches, 1)
    assert r.error_code is ErrorCode.INVALID_REQUEST and r.error_message
    assert states(sp) == [(10, 14, Q, 1, "m1")]


@pytest.mark.parametrize("first,last", [(5, 10), (14, 15), (20, 21)])
def test_acknowledging_outside_the_window_is_invalid_record_state(first: int, last: int) -> None:
    sp = make()
    sp.acquire("m1", [(10, 14)], 100, 0)
    assert sp.acknowledge("m1", [(first, last, [ACCEPT])], 1).error_code is (
        ErrorCode.INVALID_RECORD_STATE
    )


def test_acknowledging_twice_is_invalid_record_state() -> None:
    sp = make()
    sp.acquire("m1", [(10, 14)], 100, 0)
    assert sp.acknowledge("m1", [(12, 12, [ACCEPT])], 1).error_code is ErrorCode.NONE
    assert sp.acknowledge("m1", [(12, 12, [ACCEPT])], 1).error_code is (
        ErrorCode.INVALID_RECORD_STATE
    )


def test_release_member_frees_only_its_records_and_uncounts_them() -> None:
    # Kafka's releaseAcquiredRecords: DeliveryCountOps.DECREASE, AVAILABLE, never archived.
    sp = make(delivery_count_limit=1)
    sp.acquire("m1", [(10, 11)], 100, 0)
    sp.acquire("m2", [(12, 13)], 100, 0)
    c = sp.release_member("m1", 5)
    assert c.released == 2 and c.archived == ()
    assert states(sp) == [(10, 11, A, 0, None), (12, 13, Q, 1, "m2")]
    assert c.records[0].state_batches == (StateBatch(10, 11, DeliveryState.AVAILABLE, 0),)
    assert sp.release_member("nobody", 6).records == ()
    assert sp.acquire("m3", [(10, 11)], 100, 7).acquired == (AcquiredRecords(10, 11, 1),)


def test_reset_start_offset_forgets_in_flight_and_bumps_the_state_epoch() -> None:
    sp = make()
    sp.acquire("m1", [(10, 14)], 100, 0)
    c = sp.reset_start_offset(3, 10)
    assert sp.start_offset == 3 and sp.end_offset == 3 and states(sp) == []
    (rec,) = c.records
    assert rec.is_snapshot and rec.state_epoch == 1 and rec.state_batches == ()
    assert sp.acknowledge("m1", [(10, 10, [ACCEPT])], 11).error_code is (
        ErrorCode.INVALID_RECORD_STATE
    )


def test_advance_start_offset_drops_what_retention_deleted() -> None:
    sp = make()
    sp.acquire("m1", [(10, 14)], 100, 0)
    c = sp.advance_start_offset(12, 5)
    assert sp.start_offset == 12 and states(sp) == [(12, 14, Q, 1, "m1")]
    assert c.records[0].start_offset == 12
    sp.advance_start_offset(30, 6)
    assert sp.start_offset == 30 and sp.end_offset == 30 and sp.next_fetch_offset() == 30
    assert sp.acquired_records == 0
    assert sp.advance_start_offset(20, 7).records == ()


def test_ranges_stay_compact() -> None:
    sp = make(max_in_flight_records=100_000)
    sp.acquire("m1", [(10, 10_009)], 100_000, 0)
    assert len(sp.in_flight()) == 1
    for off in range(10, 10_010, 2):
        sp.acknowledge("m1", [(off, off, [RELEASE])], 1)
    assert len(sp.in_flight()) == 10_000
    for off in range(11, 10_010, 2):
        sp.acknowledge("m1", [(off, off, [RELEASE])], 1)
    assert sp.in_flight() == ((10, 10_009, A, 1, None),)


def test_snapshot_every_n_updates() -> None:
    sp = make(snapshot_update_records=3)
    kinds = []
    for i in range(8):
        r = sp.acquire("m1", [(10 + i, 10 + i)], 1, i)
        kinds.append(r.records[0].is_snapshot)
    # First change: snapshot (epoch 0); then 3 updates; then a snapshot (epoch 1)...
    assert kinds == [True, False, False, False, True, False, False, False]
    assert sp.snapshot_epoch == 1


def test_last_snapshot_ms_tells_when_a_cold_partition_needs_one() -> None:
    sp = make(snapshot_update_records=2)
    assert sp.last_snapshot_ms == -1
    sp.acquire("m1", [(10, 10)], 1, now_ms=5)  # the first change is a snapshot
    assert sp.last_snapshot_ms == 5
    sp.acquire("m1", [(11, 11)], 1, now_ms=9)  # an update
    assert sp.last_snapshot_ms == 5
    rec = sp.snapshot(400_000)
    assert rec.is_snapshot and sp.last_snapshot_ms == 400_000 and rec.write_timestamp_ms == 400_000


def test_has_acquirable() -> None:
    sp = make(max_in_flight_records=3)
    assert not sp.has_acquirable(high_watermark=10)  # nothing produced yet
    assert sp.has_acquirable(high_watermark=11)
    sp.acquire("m1", [(10, 20)], 100, 0)
    assert sp.end_offset == 13 and not sp.has_acquirable(high_watermark=21)  # limit
    sp.acknowledge("m1", [(11, 11, [RELEASE])], 1)
    assert sp.has_acquirable(high_watermark=13)  # 11 is available again
    sp.acquire("m2", [(11, 11)], 100, 2)
    sp.acknowledge("m1", [(10, 10, [ACCEPT])], 3)  # start moves: the window opens
    assert sp.has_acquirable(high_watermark=21)
