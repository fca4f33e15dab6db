"""Which ``__consumer_offsets`` partition owns a group: Kafka's
``Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions``; the same rule places a
transactional id in ``__transaction_state`` (``transaction.state.log.num.partitions``).

``java_string_hash`` is Java's ``String.hashCode`` (``s[0]*31^(n-1) + ... + s[n-1]`` over
UTF-16 code units, wrapping at 32 bits, signed); Kafka's ``Utils.abs`` maps
``Integer.MIN_VALUE`` to 0.  Getting this exactly right lets a Kafka client's
FindCoordinator answer and a Kafka tool agree with us on where a group's records live.
"""

from __future__ import annotations

OFFSETS_TOPIC_NAME = "__consumer_offsets"
DEFAULT_OFFSETS_TOPIC_PARTITIONS = 50
TRANSACTION_STATE_TOPIC_NAME = "__transaction_state"
DEFAULT_TRANSACTION_STATE_PARTITIONS = 50


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode``: a signed 32-bit int."""
    h = 0
    units = s.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(group_id: str, num_partitions: int = DEFAULT_OFFSETS_TOPIC_PARTITIONS) -> int:
    """The ``__consumer_offsets`` partition holding ``group_id``'s records (or the
    ``__transaction_state`` partition of a transactional id, with that topic's count)."""
    if num_partitions <= 0:
        raise ValueError("num_partitions must be positive")
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions
