"""__transaction_state records: Kafka's bytes, built by hand from the schema, and replay.

TransactionLogValue v1 (flexible), as Kafka 4.x's ``TransactionLog.valueToBytes`` writes it::

    00 01                      value version 1
    int64 producer_id, int16 producer_epoch, int32 transaction_timeout_ms, int8 status
    uvarint n+1, then per topic: uvarint len+1, topic, uvarint n+1, int32 partitions..., 00
    int64 last_update_timestamp_ms, int64 start_timestamp_ms
    01 02 02 00 02             one tagged field: tag 2 (ClientTransactionVersion), size 2, 2
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from riverbed.coordinator.partitioning import java_string_hash, partition_for
from riverbed.coordinator.transactions import TransactionMetadata, TransactionState
from riverbed.coordinator.transactions.transaction_driver import TransactionDriver
from riverbed.coordinator.transactions.transaction_log import (
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from riverbed.errors import DecodeError
from riverbed.protocol.topic_partition import TopicPartition as TP

S = TransactionState


def _meta(**kw: object) -> TransactionMetadata:
    base: dict[str, object] = dict(
        transactional_id="my-txn",
        producer_id=4000,
        producer_epoch=7,
        timeout_ms=60_000,
        state=S.ONGOING,
        partitions=frozenset({TP("t", 1), TP("t", 0), TP("u", 3)}),
        start_ms=1_700_000_000_000,
        last_update_ms=1_700_000_000_123,
        client_transaction_version=2,
    )
    base.update(kw)
    return TransactionMetadata(**base)  # type: ignore[arg-type]


def test_key_bytes() -> None:
    assert encode_key("my-txn") == b"\x00\x00" + b"\x00\x06my-txn"
    assert decode_key(encode_key("my-txn")) == "my-txn"
    with pytest.raises(DecodeError):
        decode_key(b"\x00\x01\x00\x01x")


def test_value_v1_bytes_match_kafkas_layout() -> None:
    expected = (
        b"\x00\x01"
        + struct.pack(">qhib", 4000, 7, 60_000, 1)
        + b"\x03"  # 2 topics
        + b"\x02t"
        + b"\x03"
        + struct.pack(">ii", 0, 1)
        + b"\x00"
        + b"\x02u"
        + b"\x02"
        + struct.pack(">i", 3)
        + b"\x00"
        + struct.pack(">qq", 1_700_000_000_123, 1_700_000_000_000)
        + b"\x01\x02\x02\x00\x02"
    )
    assert encode_value(_meta(), 1) == expected


def test_value_v0_bytes_and_null_partitions_in_empty() -> None:
    meta = _meta(state=S.EMPTY, partitions=frozenset(), start_ms=-1)
    expected = (
        b"\x00\x00"
        + struct.pack(">qhib", 4000, 7, 60_000, 0)
        + b"\xff\xff\xff\xff"  # null array: Kafka writes no partitions in Empty
        + struct.pack(">qq", 1_700_000_000_123, -1)
    )
    assert encode_value(meta, 0) == expected
    assert encode_value(meta, 1)[2 + 15] == 0  # compact null array


def test_rotation_fields_are_written_as_kafkas_tagged_fields() -> None:
    value = encode_value(_meta(previous_producer_id=11, next_producer_id=12), 1)
    tags = value[-(1 + 10 + 10 + 4) :]
    assert tags == (
        b"\x03"
        + b"\x00\x08"
        + struct.pack(">q", 11)
        + b"\x01\x08"
        + struct.pack(">q", 12)
        + b"\x02\x02\x00\x02"
    )


@given(
    state=st.sampled_from([s for s in S if s not in (S.DEAD, S.PREPARE_EPOCH_FENCE)]),
    partitions=st.frozensets(
        st.builds(TP, st.sampled_from(["a", "b", "ü"]), st.integers(0, 2**31 - 1)), max_size=6
    ),
    version=st.sampled_from([0, 1]),
    epoch=st.integers(0, 32767),
)
def test_value_round_trips(
    state: TransactionState, partitions: frozenset[TP], version: int, epoch: int
) -> None:
    if state in (S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT):
        partitions = frozenset()
    meta = _meta(
        state=state,
        partitions=partitions,
        producer_epoch=epoch,
        client_transaction_version=version * 2,
        previous_producer_id=3 if version else -1,
    )
    decoded = decode_value("my-txn", encode_value(meta, version))
    assert decoded.persisted() == meta.persisted()


def test_unknown_status_is_a_decode_error() -> None:
    value = bytearray(encode_value(_meta(state=S.EMPTY, partitions=frozenset()), 0))
    value[2 + 14] = 9
    with pytest.raises(DecodeError):
        decode_value("x", bytes(value))


def test_transactional_ids_land_where_kafka_puts_them() -> None:
    # Utils.abs("my-txn".hashCode()) % 50, the partition FindCoordinator(TRANSACTION) names
    assert partition_for("my-txn", 50) == abs(java_string_hash("my-txn")) % 50
    d = TransactionDriver()
    assert d.coordinator.partition_for("my-txn") == partition_for("my-txn", 50)


def test_replay_rebuilds_state_and_recover_resends_markers() -> None:
    d = TransactionDriver()
    a = d.init("a")
    b = d.init("b")
    d.init("c")
    d.add("a", a.producer_id, 0, TP("x", 0), TP("y", 1))
    d.end("a", a.producer_id, 0, commit=True)  # PrepareCommit: markers not yet written
    d.add("b", b.producer_id, 0, TP("x", 1))  # Ongoing
    before = d.coordinator.snapshot()
    d.restart()
    assert d.coordinator.snapshot() == before
    [marker] = d.markers
    assert (marker.transactional_id, marker.result.name, marker.partitions) == (
        "a",
        "COMMIT",
        frozenset({TP("x", 0), TP("y", 1)}),
    )
    d.write_markers()
    assert d.coordinator.transaction("a").state is S.COMPLETE_COMMIT  # type: ignore[union-attr]
    assert d.coordinator.transaction("b").state is S.ONGOING  # type: ignore[union-attr]
