"""Version ranges the codec speaks beyond what Kafka 4.x's schemas declare.

Kafka 4.0 raised the lowest version of several APIs; their schemas mostly still describe
the old fields (``"versions": "0"``, ``"1+"``, …), so the generator only needs a lower
start.  Kafka 4.4 dropped the few fields only those old versions had: :data:`LEGACY_FIELDS`
puts them back.
Produce v0-2 stay because librdkafka needs them advertised (KAFKA-18659); v0-2 have no
TransactionalId (it is ``"3+"``) and otherwise match v3.  The broker decides which of these
versions it advertises; the codec just has to speak them.
"""

from __future__ import annotations

MIN_VERSION_OVERRIDES: dict[str, int] = {
    "ProduceRequest": 0,
    "ProduceResponse": 0,
    "ListOffsetsRequest": 0,
    "ListOffsetsResponse": 0,
    "OffsetCommitRequest": 0,
    "OffsetCommitResponse": 0,
    "OffsetFetchRequest": 0,
    "OffsetFetchResponse": 0,
    "CreateTopicsRequest": 0,
    "CreateTopicsResponse": 0,
    "DeleteTopicsRequest": 0,
    "DeleteTopicsResponse": 0,
    "DescribeConfigsRequest": 0,
    "DescribeConfigsResponse": 0,
    "RequestHeader": 0,
}
"""Schema name -> lowest version to generate (the schema's highest version is kept)."""


LegacyField = tuple[tuple[str, ...], str, dict[str, str]]
"""``(path of array fields down to the struct, field to insert after, field JSON)``."""

LEGACY_FIELDS: dict[str, tuple[LegacyField, ...]] = {
    # Kafka 4.4 dropped the fields that only versions below its new floor carried; the
    # versions we extend downward (MIN_VERSION_OVERRIDES) need them back, as Kafka 4.3's
    # schemas declared them.
    "ListOffsetsRequest": (
        (
            ("Topics", "Partitions"),
            "Timestamp",
            {"name": "MaxNumOffsets", "type": "int32", "versions": "0", "default": "1"},
        ),
    ),
    "ListOffsetsResponse": (
        (
            ("Topics", "Partitions"),
            "ErrorCode",
            {"name": "OldStyleOffsets", "type": "[]int64", "versions": "0"},
        ),
    ),
    "OffsetCommitRequest": (
        (
            ("Topics", "Partitions"),
            "CommittedLeaderEpoch",
            {"name": "CommitTimestamp", "type": "int64", "versions": "1", "default": "-1"},
        ),
    ),
    "DescribeConfigsResponse": (
        (
            ("Results", "Configs"),
            "ConfigSource",
            {"name": "IsDefault", "type": "bool", "versions": "0"},
        ),
    ),
}
"""Schema name -> fields to put back into it before generating."""
