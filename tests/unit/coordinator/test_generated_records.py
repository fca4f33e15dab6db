"""The coordinator's records on the generated codec write the bytes the hand-written codec
wrote, and read what Kafka, librdkafka, kafka-python and our older versions wrote.

``OLD_BYTES`` were captured from the hand-written encoders (``coordinator/records.py``,
``consumer_records.py``, ``consumer_protocol.py`` at commit 818b405) for the values in
``SAMPLES``: data directories written before the switch must replay unchanged, and the
bytes must stay Kafka's.  The one intended difference is ``cg_value_4``
(ConsumerGroupPartitionMetadataValue): the hand-written encoder put an int32 group epoch
before ``topics``, a field Kafka's schema does not have; we now write Kafka's layout and
still read the old one.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any

import pytest

from riverbed.coordinator import consumer_group_records as C
from riverbed.coordinator import consumer_protocol as P
from riverbed.coordinator import offsets_topic_records as R
from riverbed.errors import DecodeError
from riverbed.protocol.messages import generated_records as gen
from riverbed.protocol.messages.base import Message
from riverbed.protocol.messages.coordinator_serde import (
    decode_record_key,
    decode_record_value,
    encode_record_key,
    encode_record_value,
)
from riverbed.protocol.messages.samples import random_message

U1 = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
U2 = uuid.UUID("f0e1d2c3-b4a5-9687-7869-5a4b3c2d1e0f")
PARTS: C.TopicPartitionsById = ((U1, (0, 1, 5)), (U2, ()))
MEMBERS = (
    R.MemberMetadata("m-1", None, "client-1", "/127.0.0.1", 300000, 45000, b"\x00\x01sub", b""),
    R.MemberMetadata("m-2", "static-2", "client-2", "/10.0.0.2", 60000, 10000, b"", b"\x00\x00asg"),
)
MEMBER = "member-é"

OLD_BYTES = {
    "offset_commit_key": "000100036772700007746f7069632d6100000003",
    "offset_commit_value": "0003000000000000002a0000000500046d6574610000018bcfe56800",
    "offset_commit_value_empty": "00030000000000000000ffffffff0000ffffffffffffffff",
    "group_metadata_key": "00020003677270",
    "group_metadata_value": (
        "00030008636f6e73756d657200000007000572616e676500036d2d310000018bcfe5687b0000000200"
        "036d2d31ffff0008636c69656e742d31000a2f3132372e302e302e31000493e00000afc80000000500"
        "017375620000000000036d2d3200087374617469632d320008636c69656e742d3200092f31302e302e"
        "302e320000ea600000271000000000000000050000617367"
    ),
    "group_metadata_value_empty": "0003000000000000ffffffffffffffffffffffff00000000",
    "cg_key_3": "0003000463672d31",
    "cg_key_4": "0004000463672d31",
    "cg_key_5": "0005000463672d3100096d656d6265722dc3a9",
    "cg_key_6": "0006000463672d31",
    "cg_key_7": "0007000463672d3100096d656d6265722dc3a9",
    "cg_key_8": "0008000463672d3100096d656d6265722dc3a9",
    "cg_value_3": "00000000000c00",
    "cg_value_4": (
        "00000000000c0300112233445566778899aabbccddeeff076f7264657273000000060100f0e1d2c3b4"
        "a5968778695a4b3c2d1e0f0100000000010000"
    ),
    "cg_value_5": (
        "000005696e7374077261636b2d6104636964092f312e322e332e3403076f7264657273097061796d65"
        "6e7473066f72642e2a0000afc808756e69666f726d00"
    ),
    "cg_value_5_nulls": "0000000001010100ffffffff0000",
    "cg_value_6": "00000000000b00",
    "cg_value_7": (
        "00000300112233445566778899aabbccddeeff0400000000000000010000000500f0e1d2c3b4a59687"
        "78695a4b3c2d1e0f010000"
    ),
    "cg_value_8": (
        "00000000000c0000000b010300112233445566778899aabbccddeeff04000000000000000100000005"
        "00f0e1d2c3b4a5968778695a4b3c2d1e0f010002f0e1d2c3b4a5968778695a4b3c2d1e0f0200000003"
        "0000"
    ),
    "cg_value_8_empty": "000000000000ffffffff00010100",
    "subscription": "00000000000200066f726465727300087061796d656e7473000000020102",
    "subscription_empty": "000000000000ffffffff",
    "assignment": (
        "00000000000200066f726465727300000002000000000000000100087061796d656e74730000000100"
        "000002ffffffff"
    ),
    "assignment_empty": "000000000000ffffffff",
}

CG_VALUES: dict[str, C.ConsumerGroupValue] = {
    "cg_value_3": C.ConsumerGroupMetadataValue(12),
    "cg_value_4": C.ConsumerGroupPartitionMetadataValue(
        (C.TopicMetadataEntry(U1, "orders", 6), C.TopicMetadataEntry(U2, "", 0))
    ),
    "cg_value_5": C.ConsumerGroupMemberMetadataValue(
        "inst", "rack-a", "cid", "/1.2.3.4", ("orders", "payments"), "ord.*", 45000, "uniform"
    ),
    "cg_value_5_nulls": C.ConsumerGroupMemberMetadataValue(None, None, "", "", (), None, -1, None),
    "cg_value_6": C.ConsumerGroupTargetAssignmentMetadataValue(11),
    "cg_value_7": C.ConsumerGroupTargetAssignmentMemberValue(PARTS),
    "cg_value_8": C.ConsumerGroupCurrentMemberAssignmentValue(12, 11, 1, PARTS, ((U2, (3,)),)),
    "cg_value_8_empty": C.ConsumerGroupCurrentMemberAssignmentValue(0, -1, 0, (), ()),
}
CG_KEYS = {
    f"cg_key_{v}": C.ConsumerGroupRecordKey(
        v, "cg-1", MEMBER if v in C.MEMBER_KEY_VERSIONS else None
    )
    for v in range(3, 9)
}
OFFSET_VALUE = R.OffsetCommitValue(42, 5, "meta", 1700000000000)
GROUP_VALUE = R.GroupMetadataValue("consumer", 7, "range", "m-1", 1700000000123, MEMBERS)


def _new_bytes() -> dict[str, bytes]:
    out = {
        "offset_commit_key": R.encode_offset_commit_key(R.OffsetCommitKey("grp", "topic-a", 3)),
        "offset_commit_value": R.encode_offset_commit_value(OFFSET_VALUE),
        "offset_commit_value_empty": R.encode_offset_commit_value(
            R.OffsetCommitValue(0, -1, "", -1)
        ),
        "group_metadata_key": R.encode_group_metadata_key(R.GroupMetadataKey("grp")),
        "group_metadata_value": R.encode_group_metadata_value(GROUP_VALUE),
        "group_metadata_value_empty": R.encode_group_metadata_value(
            R.GroupMetadataValue("", 0, None, None, -1, ())
        ),
        "subscription": P.encode_subscription(["orders", "payments"], b"\x01\x02"),
        "subscription_empty": P.encode_subscription([]),
        "assignment": P.encode_assignment({"payments": [2], "orders": [0, 1]}),
        "assignment_empty": P.encode_assignment({}),
    }
    out.update({name: C.encode_key(key) for name, key in CG_KEYS.items()})
    out.update({name: C.encode_value(value) for name, value in CG_VALUES.items()})
    return out


NEW_BYTES = _new_bytes()


@pytest.mark.parametrize("name", sorted(set(OLD_BYTES) - {"cg_value_4"}))
def test_same_bytes_as_the_hand_written_codec(name: str) -> None:
    assert NEW_BYTES[name].hex() == OLD_BYTES[name]


def test_partition_metadata_is_kafkas_layout_and_the_old_one_still_reads() -> None:
    old = bytes.fromhex(OLD_BYTES["cg_value_4"])
    assert NEW_BYTES["cg_value_4"] == old[:2] + old[6:]  # no int32 epoch after the version
    expected = CG_VALUES["cg_value_4"]
    assert C.decode_value(4, old) == expected
    assert C.decode_value(4, NEW_BYTES["cg_value_4"]) == expected
    _, kafkas = decode_record_value(
        gen.ConsumerGroupPartitionMetadataValue, NEW_BYTES["cg_value_4"]
    )
    assert [t.topic_name for t in kafkas.topics] == ["orders", ""]
    with pytest.raises(DecodeError):
        C.decode_value(4, old[:7])


def test_old_bytes_decode_to_the_same_values() -> None:
    assert R.decode_key(bytes.fromhex(OLD_BYTES["offset_commit_key"])) == R.OffsetCommitKey(
        "grp", "topic-a", 3
    )
    assert R.decode_key(bytes.fromhex(OLD_BYTES["group_metadata_key"])) == R.GroupMetadataKey("grp")
    assert (
        R.decode_offset_commit_value(bytes.fromhex(OLD_BYTES["offset_commit_value"]))
        == OFFSET_VALUE
    )
    assert (
        R.decode_group_metadata_value(bytes.fromhex(OLD_BYTES["group_metadata_value"]))
        == GROUP_VALUE
    )
    for name, key in CG_KEYS.items():
        assert R.decode_key(bytes.fromhex(OLD_BYTES[name])) == key
    for name, value in CG_VALUES.items():
        assert C.decode_value(C.key_version_of(value), bytes.fromhex(OLD_BYTES[name])) == value
    assert P.subscription_topics(bytes.fromhex(OLD_BYTES["subscription"])) == {"orders", "payments"}
    assert P.subscription_topics(bytes.fromhex(OLD_BYTES["subscription_empty"])) == frozenset()
    assert P.decode_assignment(bytes.fromhex(OLD_BYTES["assignment"])) == {
        "orders": [0, 1],
        "payments": [2],
    }
    assert P.decode_assignment(bytes.fromhex(OLD_BYTES["assignment_empty"])) == {}


def _s(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


# Older versions Kafka brokers wrote, and what the hand-written decoders made of them.
OLDER_VERSIONS: list[tuple[str, bytes, Any]] = [
    (
        "offset v0",
        struct.pack(">hq", 0, 7) + _s("m") + struct.pack(">q", 1000),
        R.OffsetCommitValue(7, -1, "m", 1000),
    ),
    (
        "offset v1",
        struct.pack(">hq", 1, 7) + _s("m") + struct.pack(">qq", 1000, 99999),
        R.OffsetCommitValue(7, -1, "m", 1000),
    ),
    (
        "offset v2",
        struct.pack(">hq", 2, 7) + _s("") + struct.pack(">q", 1000),
        R.OffsetCommitValue(7, -1, "", 1000),
    ),
    (
        "group v0",
        struct.pack(">h", 0)
        + _s("consumer")
        + struct.pack(">i", 3)
        + _s("range")
        + _s("m")
        + struct.pack(">i", 1)
        + _s("m")
        + _s("c")
        + _s("h")
        + struct.pack(">ii", 5000, 2)
        + b"ab"
        + struct.pack(">i", 0),
        R.GroupMetadataValue(
            "consumer",
            3,
            "range",
            "m",
            -1,
            (R.MemberMetadata("m", None, "c", "h", 5000, 5000, b"ab", b""),),
        ),
    ),
    (
        "group v1",
        struct.pack(">h", 1)
        + _s("consumer")
        + struct.pack(">ihhi", 3, -1, -1, 1)
        + _s("m")
        + _s("c")
        + _s("h")
        + struct.pack(">iiii", 9000, 5000, 0, 1)
        + b"z",
        R.GroupMetadataValue(
            "consumer",
            3,
            None,
            None,
            -1,
            (R.MemberMetadata("m", None, "c", "h", 9000, 5000, b"", b"z"),),
        ),
    ),
    (
        "group v2",
        struct.pack(">h", 2)
        + _s("consumer")
        + struct.pack(">i", 3)
        + _s("range")
        + _s("m")
        + struct.pack(">qi", 123, 0),
        R.GroupMetadataValue("consumer", 3, "range", "m", 123, ()),
    ),
]


@pytest.mark.parametrize(
    ("raw", "expected"), [pytest.param(r, e, id=n) for n, r, e in OLDER_VERSIONS]
)
def test_older_versions_decode_as_before(raw: bytes, expected: Any) -> None:
    if isinstance(expected, R.OffsetCommitValue):
        assert R.decode_offset_commit_value(raw) == expected
    else:
        assert R.decode_group_metadata_value(raw) == expected


def test_legacy_offset_key_and_kafka_4_value_versions() -> None:
    legacy = struct.pack(">h", 0) + _s("grp") + _s("t") + struct.pack(">i", 255)
    assert R.decode_key(legacy) == R.OffsetCommitKey("grp", "t", 255)
    # Kafka 4.x may write OffsetCommitValue v4: flexible, with the topic id as tag 0
    v4 = gen.OffsetCommitValue(
        offset=9, leader_epoch=2, metadata="x", commit_timestamp=5, topic_id=U1
    )
    assert R.decode_offset_commit_value(encode_record_value(v4, 4)) == R.OffsetCommitValue(
        9, 2, "x", 5
    )


@pytest.mark.parametrize(
    "raw", [b"", b"\x00", b"\x00\x01\x00", b"\x00\x09\x00\x00", b"\x00\x01\x00\x05ab"]
)
def test_malformed_records_are_decode_errors(raw: bytes) -> None:
    for decode in (R.decode_key, R.decode_offset_commit_value, R.decode_group_metadata_value):
        with pytest.raises(DecodeError):
            decode(raw)
    with pytest.raises(DecodeError):
        C.decode_value(5, raw)


# -- consumer protocol bytes written by real clients -----------------------------------

# kafka-python 3.0.12: ConsumerProtocolSubscription v3 (topics, user data, owned
# partitions, generation, rack) and ConsumerProtocolAssignment v3.
KAFKA_PYTHON_SUBSCRIPTION_V3 = bytes.fromhex(
    "00030000000200066f726465727300087061796d656e74730000000275640000000100066f72646572"
    "730000000200000000000000010000000500027231"
)
KAFKA_PYTHON_ASSIGNMENT_V3 = bytes.fromhex(
    "00030000000100066f7264657273000000020000000000000001ffffffff"
)


# librdkafka 2.16 (confluent-kafka 2.16.1), captured from its JoinGroup/SyncGroup against
# an EmbeddedBroker: subscription v3 with client.rack=rack-1 (range and cooperative-sticky
# send the same), and the assignments its range / cooperative-sticky leaders computed.
LIBRDKAFKA_SUBSCRIPTION_V3 = bytes.fromhex(
    "00030000000200066f726465727300087061796d656e74730000000000000000ffffffff00067261636b2d31"
)
LIBRDKAFKA_RANGE_ASSIGNMENT = bytes.fromhex(
    "00000000000200087061796d656e7473000000010000000000066f72646572730000000200000000000000"
    "0100000000"
)
LIBRDKAFKA_STICKY_ASSIGNMENT = bytes.fromhex(
    "00000000000200066f726465727300000002000000000000000100087061796d656e747300000001000000"
    "0000000000"
)


def test_librdkafka_consumer_protocol_bytes() -> None:
    assert P.subscription_topics(LIBRDKAFKA_SUBSCRIPTION_V3) == {"orders", "payments"}
    expected = {"orders": [0, 1], "payments": [0]}
    assert P.decode_assignment(LIBRDKAFKA_RANGE_ASSIGNMENT) == expected
    assert P.decode_assignment(LIBRDKAFKA_STICKY_ASSIGNMENT) == expected


def test_kafka_python_consumer_protocol_bytes() -> None:
    assert P.subscription_topics(KAFKA_PYTHON_SUBSCRIPTION_V3) == {"orders", "payments"}
    assert P.decode_assignment(KAFKA_PYTHON_ASSIGNMENT_V3) == {"orders": [0, 1]}
    # a version from the future is read with the newest layout we know
    future = struct.pack(">h", 9) + KAFKA_PYTHON_SUBSCRIPTION_V3[2:] + b"\x00\x00\x00\x07"
    assert P.subscription_topics(future) == {"orders", "payments"}


def test_live_kafka_python_consumer_protocol_bytes() -> None:
    metadata = pytest.importorskip("kafka.protocol.consumer.metadata")
    sub_cls = metadata.ConsumerProtocolSubscription
    for version in range(4):
        sub = sub_cls(
            version=version,
            topics=["a", "b"],
            user_data=b"u",
            owned_partitions=[sub_cls.TopicPartition(topic="a", partitions=[3])],
            generation_id=4,
            rack_id="r",
        )
        assert P.subscription_topics(sub.encode()) == {"a", "b"}
    ours = P.encode_subscription(["a", "b"], b"u")
    assert list(sub_cls.decode(ours).topics) == ["a", "b"]
    asg_cls = metadata.ConsumerProtocolAssignment
    theirs = asg_cls(
        version=1,
        assigned_partitions=[asg_cls.TopicPartition(topic="t", partitions=[0, 2])],
        user_data=None,
    )
    assert P.decode_assignment(theirs.encode()) == {"t": [0, 2]}
    assert asg_cls.decode(P.encode_assignment({"t": [0, 2]})).partitions() == [("t", 0), ("t", 2)]


# -- every generated internal record -----------------------------------------------------


RECORD_CASES = [
    pytest.param(cls, v, id=f"{cls.NAME}-v{v}")
    for cls in gen.ALL_RECORDS
    for v in range(cls.MIN_VERSION, cls.MAX_VERSION + 1)
]


@pytest.mark.parametrize(("cls", "version"), RECORD_CASES)
def test_every_record_round_trips(cls: type[Message], version: int) -> None:
    for seed in range(3):
        msg = random_message(cls, version, seed)
        data = msg.encode(version)
        assert cls.decode(data, version) == msg
        assert cls.decode(data, version).encode(version) == data


@pytest.mark.parametrize(
    "table",
    [
        gen.GROUP_COORDINATOR_RECORDS,
        gen.TRANSACTION_COORDINATOR_RECORDS,
        gen.SHARE_COORDINATOR_RECORDS,
    ],
)
def test_record_types_frame_as_kafkas_serde(
    table: dict[int, tuple[type[Message], type[Message]]],
) -> None:
    for record_type, (key_cls, value_cls) in table.items():
        assert key_cls.API_KEY == value_cls.API_KEY == record_type
        key = random_message(key_cls, 0, record_type)
        raw = encode_record_key(key)
        assert raw[:2] == struct.pack(">h", record_type)
        assert decode_record_key(table, raw) == key
        value = random_message(value_cls, value_cls.MAX_VERSION, record_type)
        framed = encode_record_value(value, value_cls.MAX_VERSION)
        assert decode_record_value(value_cls, framed) == (value_cls.MAX_VERSION, value)


def test_transaction_log_key_is_kafkas() -> None:
    raw = encode_record_key(gen.TransactionLogKey(transactional_id="tx-1"))
    assert raw == struct.pack(">hh4s", 0, 4, b"tx-1")
