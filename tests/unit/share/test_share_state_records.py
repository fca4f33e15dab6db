"""``__share_group_state`` records: Kafka's byte layout, round trips, replay rules."""

from __future__ import annotations

import struct
import uuid

import pytest

from riverbed.errors import DecodeError
from riverbed.share import (
    DeliveryState,
    SharePartitionKey,
    ShareStateRecord,
    ShareStateTombstone,
    StateBatch,
    decode_share_state_record,
    replay,
)
from riverbed.share.share_state_log import overlay

AV, ACK, ARC = DeliveryState.AVAILABLE, DeliveryState.ACKNOWLEDGED, DeliveryState.ARCHIVED
KEY = SharePartitionKey("grp", uuid.UUID("00112233-4455-6677-8899-aabbccddeeff"), 3)


def snap(
    start: int, *batches: StateBatch, epoch: int = 0, state_epoch: int = 0
) -> ShareStateRecord:
    return ShareStateRecord(
        key=KEY,
        is_snapshot=True,
        snapshot_epoch=epoch,
        leader_epoch=0,
        start_offset=start,
        state_batches=batches,
        state_epoch=state_epoch,
        create_timestamp_ms=100,
        write_timestamp_ms=200,
    )


def upd(start: int, *batches: StateBatch, epoch: int = 0) -> ShareStateRecord:
    return ShareStateRecord(
        key=KEY,
        is_snapshot=False,
        snapshot_epoch=epoch,
        leader_epoch=0,
        start_offset=start,
        state_batches=batches,
    )


def test_key_layout_is_kafkas() -> None:
    # int16 record type | int16 len + "grp" | 16-byte uuid | int32 partition
    expected = struct.pack(">hh", 1, 3) + b"grp" + KEY.topic_id.bytes + struct.pack(">i", 3)
    assert upd(-1).key_bytes() == expected
    assert snap(0).key_bytes()[:2] == b"\x00\x00"


def test_update_value_layout_is_kafkas() -> None:
    rec = upd(-1, StateBatch(5, 9, ACK, 2))
    # version 0 | snapshot_epoch | leader_epoch | start_offset | compact array (n+1) |
    # first | last | state int8 | count int16 | batch tags | value tags
    expected = (
        struct.pack(">hiiq", 0, 0, 0, -1)
        + bytes([2])
        + struct.pack(">qqbh", 5, 9, 2, 2)
        + b"\x00\x00"
    )
    assert rec.value_bytes() == expected


@pytest.mark.parametrize(
    "record",
    [
        snap(10, StateBatch(10, 12, AV, 1), StateBatch(13, 13, ARC, 5), state_epoch=4),
        snap(0),
        upd(-1, StateBatch(5, 9, ACK, 2)),
        upd(7),
    ],
)
def test_round_trip(record: ShareStateRecord) -> None:
    assert decode_share_state_record(record.key_bytes(), record.value_bytes()) == record


def test_delivery_complete_count_travels_as_a_tagged_field() -> None:
    rec = ShareStateRecord(KEY, False, 0, 0, -1, (), delivery_complete_count=9)
    assert len(rec.value_bytes()) > len(upd(-1).value_bytes())
    assert decode_share_state_record(rec.key_bytes(), rec.value_bytes()) == rec


def test_tombstone() -> None:
    t = ShareStateTombstone(KEY)
    assert decode_share_state_record(t.key_bytes(), None) == t


@pytest.mark.parametrize(
    "key,value",
    [
        (b"\x00", b""),
        (b"\x00\x09" + b"\x00" * 30, b"\x00\x00"),
        (upd(-1).key_bytes(), b"\x00\x07" + b"\x00" * 30),
        (upd(-1).key_bytes(), upd(-1, StateBatch(1, 2, AV, 1)).value_bytes()[:-5]),
    ],
)
def test_malformed_records_raise_decode_error(key: bytes, value: bytes) -> None:
    with pytest.raises(DecodeError):
        decode_share_state_record(key, value)


def test_unknown_delivery_state_is_a_decode_error() -> None:
    bad = bytearray(upd(-1, StateBatch(1, 2, AV, 1)).value_bytes())
    bad[2 + 16 + 1 + 16] = 1  # the delivery_state byte: ACQUIRED is never persisted
    with pytest.raises(DecodeError):
        decode_share_state_record(upd(-1).key_bytes(), bytes(bad))


def test_overlay_writes_updates_over_batches_and_coalesces() -> None:
    base = (StateBatch(10, 19, AV, 1),)
    got = overlay(base, (StateBatch(12, 13, ACK, 1), StateBatch(15, 25, AV, 2)), 11)
    assert got == (
        StateBatch(11, 11, AV, 1),
        StateBatch(12, 13, ACK, 1),
        StateBatch(14, 14, AV, 1),
        StateBatch(15, 25, AV, 2),
    )
    assert overlay(got, (StateBatch(11, 11, ACK, 1),), 11)[0] == StateBatch(11, 13, ACK, 1)


def test_overlay_later_batch_wins_within_one_input() -> None:
    got = overlay((), (StateBatch(0, 9, AV, 1), StateBatch(3, 4, ARC, 1)), 0)
    assert got == (StateBatch(0, 2, AV, 1), StateBatch(3, 4, ARC, 1), StateBatch(5, 9, AV, 1))


def test_replay_snapshot_then_updates() -> None:
    r = replay(
        [
            snap(10, StateBatch(10, 14, AV, 1)),
            upd(-1, StateBatch(12, 12, ACK, 1)),
            upd(12, StateBatch(10, 11, ACK, 1)),
        ]
    )
    st = r.state(KEY)
    assert st is not None
    assert st.start_offset == 12 and st.updates_since_snapshot == 2
    assert st.state_batches == (StateBatch(12, 12, ACK, 1), StateBatch(13, 14, AV, 1))


def test_replay_skips_updates_of_another_snapshot_epoch() -> None:
    r = replay(
        [
            upd(-1, StateBatch(1, 1, ACK, 1)),  # before any snapshot
            snap(0, StateBatch(0, 3, AV, 1), epoch=1),
            upd(-1, StateBatch(2, 2, ACK, 1), epoch=0),  # stale
            upd(-1, StateBatch(3, 3, ACK, 1), epoch=1),
        ]
    )
    st = r.state(KEY)
    assert st is not None and r.skipped_updates == 2
    assert st.state_batches == (StateBatch(0, 2, AV, 1), StateBatch(3, 3, ACK, 1))


def test_a_snapshot_replaces_and_a_tombstone_forgets() -> None:
    r = replay([snap(0, StateBatch(0, 3, ACK, 1)), snap(5, epoch=1)])
    st = r.state(KEY)
    assert st is not None and st.start_offset == 5 and st.state_batches == ()
    r.apply(ShareStateTombstone(KEY))
    assert r.state(KEY) is None and r.states() == {}


def test_start_offset_never_moves_back_in_an_update() -> None:
    r = replay([snap(10), upd(4)])
    st = r.state(KEY)
    assert st is not None and st.start_offset == 10


def _workload(every: int = 3) -> list[ShareStateRecord]:
    from riverbed.share import SharePartition, SharePartitionConfig

    sp = SharePartition(
        "g", KEY.topic_id, 0, SharePartitionConfig(snapshot_update_records=every), start_offset=0
    )
    out = [sp.snapshot(0)]
    for i in range(0, 20, 2):
        out += sp.acquire("m", [(i, i + 1)], 2, i).records
        out += sp.acknowledge("m", [(i + 1, i + 1, [1])], i).records  # ACCEPT every odd offset
    return out


def test_compaction_would_lose_acknowledged_state() -> None:
    """Why ``__share_group_state`` is cleanup.policy=delete: updates share one key."""
    records = _workload(every=100)
    latest_per_key = {r.key_bytes(): i for i, r in enumerate(records)}
    compacted = [r for i, r in enumerate(records) if latest_per_key[r.key_bytes()] == i]
    full, lossy = replay(records).state(records[0].key), replay(compacted).state(records[0].key)
    assert full is not None and lossy is not None
    assert full.state_batches != lossy.state_batches


def test_replay_from_the_redundant_offset_equals_the_full_replay() -> None:
    records = _workload()
    other = ShareStateTombstone(SharePartitionKey("gone", KEY.topic_id, 9))
    log = [snap(0).__class__(**{**_fields(snap(0)), "key": other.key}), *records, other]
    full = replay([])
    for offset, r in enumerate(log):
        full.apply(r, offset)
    cut = full.snapshot_offsets.redundant_offset()
    assert 0 < cut < len(log)
    assert isinstance(log[cut], ShareStateRecord) and log[cut].is_snapshot
    assert replay(log[cut:]).states() == full.states()


def _fields(r: ShareStateRecord) -> dict[str, object]:
    return {f: getattr(r, f) for f in r.__slots__}


def test_an_uninitialised_start_offset_restores_where_the_caller_says() -> None:
    """Kafka's first snapshot says start offset -1: not initialised yet."""
    from riverbed.share import SharePartition, SharePartitionConfig

    st = replay([snap(-1)]).state(KEY)
    assert st is not None and st.start_offset == -1
    sp, change = SharePartition.restore(st, SharePartitionConfig(), 0, unset_start_offset=40)
    assert sp.start_offset == 40 and change.records == ()
    # Kafka's first update carries the start offset from before its change, with batches.
    st = replay([snap(-1), upd(0, StateBatch(0, 3, ACK, 1), StateBatch(4, 4, AV, 1))]).state(KEY)
    assert st is not None
    sp, _ = SharePartition.restore(st, SharePartitionConfig(), 0, unset_start_offset=40)
    assert sp.start_offset == 4 and sp.next_fetch_offset() == 4


def test_coordinator_key_is_kafkas() -> None:
    from riverbed.share.share_state_records import coordinator_key, state_partition_for

    # Kafka's Uuid.toString(): URL-safe base64 without padding.
    assert coordinator_key(KEY) == "grp:ABEiM0RVZneImaq7zN3u_w:3"
    assert 0 <= state_partition_for(KEY, 50) < 50


def test_public_api() -> None:
    import riverbed.share as share

    assert sorted(share.__all__) == [
        "AcknowledgeResult", "AcknowledgeType", "AcquireResult", "AcquiredRecords",
        "ArchiveReason", "ArchivedRecords", "DeliveryState", "PersistedShareState",
        "RecordState", "SharePartition", "SharePartitionConfig", "SharePartitionKey",
        "ShareStateChange", "ShareStateRecord", "ShareStateReplay", "ShareStateTombstone",
        "SnapshotOffsets", "StateBatch", "coordinator_key", "decode_share_state_record",
        "initial_start_offset", "replay", "replay_partition_log", "state_partition_for",
    ]  # fmt: skip
    assert all(hasattr(share, name) for name in share.__all__)
