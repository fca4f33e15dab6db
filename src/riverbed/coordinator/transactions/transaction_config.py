"""Transaction coordinator settings, named after Kafka's broker configs (``_ms`` = millis)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from riverbed.coordinator.config import CoordinatorConfigError

TV_0, TV_1, TV_2 = 0, 1, 2
"""``transaction.version`` feature levels: 0 and 1 keep the epoch for the producer's life
(KIP-98); 2 bumps it at the end of every transaction (KIP-890 part 2).  Level 0 writes
``__transaction_state`` values at version 0, levels 1+ at version 1 (flexible)."""


@dataclass(frozen=True, slots=True)
class TransactionCoordinatorConfig:
    transaction_max_timeout_ms: int = 900_000
    """``transaction.max.timeout.ms``: a larger ``transaction.timeout.ms`` is refused with
    INVALID_TRANSACTION_TIMEOUT."""
    transactional_id_expiration_ms: int = 604_800_000
    """``transactional.id.expiration.ms`` (7 days): an id idle this long with no transaction
    in progress is forgotten (a tombstone is written)."""
    transaction_state_log_num_partitions: int = 50
    """``transaction.state.log.num.partitions``."""
    offsets_topic_num_partitions: int = 50
    """``offsets.topic.num.partitions``: AddOffsetsToTxn adds the group's partition."""
    transaction_version: int = TV_2
    """The finalized ``transaction.version`` feature level of the cluster: the value version
    written, and the rules of aborts the coordinator starts itself (timeouts, fencing)."""
    coordinator_epoch: int = 0
    """Sent with every marker (WriteTxnMarkers' ``CoordinatorEpoch``); a single-node
    broker leads every ``__transaction_state`` partition at one epoch."""


_KEYS: dict[str, str] = {
    "transaction.max.timeout.ms": "transaction_max_timeout_ms",
    "transactional.id.expiration.ms": "transactional_id_expiration_ms",
    "transaction.state.log.num.partitions": "transaction_state_log_num_partitions",
    "offsets.topic.num.partitions": "offsets_topic_num_partitions",
}
TRANSACTION_COORDINATOR_KEYS: frozenset[str] = frozenset(_KEYS)
"""Broker settings (Kafka's names) that configure the transaction coordinator."""


def transaction_config_from_props(props: Mapping[str, str]) -> TransactionCoordinatorConfig:
    """Build from Kafka-named broker settings; other keys are ignored.  Raises
    :class:`CoordinatorConfigError` naming the bad key."""
    values: dict[str, int] = {}
    for raw_key, raw_value in props.items():
        key = raw_key.strip()
        if key not in _KEYS:
            continue
        try:
            number = int(str(raw_value).strip())
        except ValueError:
            raise CoordinatorConfigError(
                f"setting {key!r}: {raw_value!r} is not an integer"
            ) from None
        if number <= 0:
            raise CoordinatorConfigError(f"setting {key!r}: {number} is out of range")
        values[_KEYS[key]] = number
    return TransactionCoordinatorConfig(**values)
