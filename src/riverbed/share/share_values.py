"""The values a share partition speaks in: acknowledge types, record states, settings,
and the results of its calls (KIP-932).

Frozen, slotted dataclasses and enums; no behaviour beyond validation.  The states and
their transitions are drawn in :mod:`riverbed.share.share_partition`.  Thread-safe
(immutable).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, IntEnum
from typing import Literal

from riverbed.errors import ConfigError
from riverbed.protocol.error_codes import ErrorCode
from riverbed.share.share_state_records import ShareStateRecord


class AcknowledgeType(IntEnum):
    """ShareFetch / ShareAcknowledge ``AcknowledgeTypes``: 0 Gap, 1 Accept, 2 Release,
    3 Reject, 4 Renew (KIP-1222, request v2+)."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


class RecordState(IntEnum):
    """Kafka's ``RecordState`` (ids 0, 1, 2, 4: ``ACQUIRED`` is never persisted)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4

    @property
    def is_final(self) -> bool:
        return self is RecordState.ACKNOWLEDGED or self is RecordState.ARCHIVED


class ArchiveReason(Enum):
    """Why offsets were archived, for the dead-letter writer."""

    REJECTED = "rejected"
    """The consumer answered REJECT."""
    DELIVERY_LIMIT = "delivery_limit"
    """Released, timed out or orphaned with ``delivery_count >= delivery_count_limit``."""


@dataclass(frozen=True, slots=True)
class AcquiredRecords:
    """ShareFetch response ``AcquiredRecords``: offsets now locked by the fetching member."""

    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class ArchivedRecords:
    """Offsets that became ARCHIVED because of a REJECT or the delivery limit."""

    first_offset: int
    last_offset: int
    delivery_count: int
    reason: ArchiveReason


@dataclass(frozen=True, slots=True)
class SharePartitionConfig:
    """Per-group settings, with Kafka's names and defaults.

    ``record_lock_duration_ms``: ``group.share.record.lock.duration.ms`` (30 s);
    ``delivery_count_limit``: ``group.share.delivery.count.limit`` (5);
    ``max_in_flight_records``: ``group.share.partition.max.record.locks`` (2000): no new
    offset at or beyond ``start_offset + max_in_flight_records`` is acquired;
    ``auto_offset_reset``: ``share.auto.offset.reset``, where a new share partition starts
    (the caller computes ``start_offset`` with :func:`initial_start_offset`);
    ``isolation_level``: ``share.isolation.level``: the caller reads up to the last stable
    offset (read_committed) or the high watermark, and passes only deliverable batches;
    ``snapshot_update_records``: ``share.coordinator.snapshot.update.records.per.snapshot``
    (500): after this many updates the next change is written as a full snapshot.
    """

    record_lock_duration_ms: int = 30_000
    delivery_count_limit: int = 5
    max_in_flight_records: int = 2000
    auto_offset_reset: Literal["latest", "earliest"] = "latest"
    isolation_level: Literal["read_uncommitted", "read_committed"] = "read_uncommitted"
    snapshot_update_records: int = 500

    def __post_init__(self) -> None:
        if self.record_lock_duration_ms <= 0:
            raise ConfigError("record_lock_duration_ms must be > 0")
        if not 1 <= self.delivery_count_limit <= 32767:
            raise ConfigError("delivery_count_limit must be in 1..32767")
        if self.max_in_flight_records <= 0:
            raise ConfigError("max_in_flight_records must be > 0")
        if self.auto_offset_reset not in ("latest", "earliest"):
            raise ConfigError(f"unknown auto_offset_reset {self.auto_offset_reset!r}")
        if self.isolation_level not in ("read_uncommitted", "read_committed"):
            raise ConfigError(f"unknown isolation_level {self.isolation_level!r}")
        if self.snapshot_update_records <= 0:
            raise ConfigError("snapshot_update_records must be > 0")


def initial_start_offset(
    config: SharePartitionConfig, log_start_offset: int, high_watermark: int
) -> int:
    """Where a share partition with no persisted state starts (``share.auto.offset.reset``)."""
    return log_start_offset if config.auto_offset_reset == "earliest" else high_watermark


@dataclass(frozen=True, slots=True)
class AcquireResult:
    """``acquired``: for the ShareFetch response, sorted; ``records``: to append (may be
    written after the response is sent, see the module docstring)."""

    acquired: tuple[AcquiredRecords, ...] = ()
    records: tuple[ShareStateRecord, ...] = ()


@dataclass(frozen=True, slots=True)
class AcknowledgeResult:
    """The partition's ``AcknowledgeErrorCode`` and, on success, the records that must be
    durable before the response is sent, and the newly archived offsets."""

    error_code: ErrorCode = ErrorCode.NONE
    records: tuple[ShareStateRecord, ...] = ()
    archived: tuple[ArchivedRecords, ...] = ()
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class ShareStateChange:
    """A change not asked for by an acknowledgement (lock timeout, member left, restore,
    start offset moved): how many offsets it released, the records to append, and the
    newly archived offsets."""

    released: int = 0
    records: tuple[ShareStateRecord, ...] = ()
    archived: tuple[ArchivedRecords, ...] = ()
