"""Share groups (KIP-932, queues): the state of each share partition and its persistence.

* :mod:`~riverbed.share.share_partition`: which offsets are available, locked (by which
  member, until when), acknowledged or archived; pure and synchronous, loop thread only.
* :mod:`~riverbed.share.share_values`: acknowledge types, record states, settings and
  the results of its calls (re-exported by ``share_partition``).
* :mod:`~riverbed.share.share_state_records`: the ``__share_group_state`` records
  (ShareSnapshot, ShareUpdate) in Kafka's formats.
* :mod:`~riverbed.share.share_state_log`: replaying those records after a restart.

The broker's ShareFetch / ShareAcknowledge handlers call :class:`SharePartition` and
append the records it returns; nothing here does I/O.
"""

from riverbed.share.share_partition import (
    AcknowledgeResult,
    AcknowledgeType,
    AcquiredRecords,
    AcquireResult,
    ArchivedRecords,
    ArchiveReason,
    RecordState,
    SharePartition,
    SharePartitionConfig,
    ShareStateChange,
    initial_start_offset,
)
from riverbed.share.share_state_log import (
    PersistedShareState,
    ShareStateReplay,
    SnapshotOffsets,
    replay,
    replay_partition_log,
)
from riverbed.share.share_state_records import (
    DeliveryState,
    SharePartitionKey,
    ShareStateRecord,
    ShareStateTombstone,
    StateBatch,
    coordinator_key,
    decode_share_state_record,
    state_partition_for,
)

__all__ = [
    "AcknowledgeResult",
    "AcknowledgeType",
    "AcquireResult",
    "AcquiredRecords",
    "ArchiveReason",
    "ArchivedRecords",
    "DeliveryState",
    "PersistedShareState",
    "RecordState",
    "SharePartition",
    "SharePartitionConfig",
    "SharePartitionKey",
    "ShareStateChange",
    "ShareStateRecord",
    "ShareStateReplay",
    "ShareStateTombstone",
    "SnapshotOffsets",
    "StateBatch",
    "coordinator_key",
    "decode_share_state_record",
    "initial_start_offset",
    "replay",
    "replay_partition_log",
    "state_partition_for",
]
