"""riverbed.coordinator: consumer groups and committed offsets as pure state machines.

No I/O, no asyncio, no clock reads: handlers take a request value and ``now_ms`` and
return a :class:`Reply` (response or :class:`Pending`, plus ``__consumer_offsets``
records to append); :meth:`GroupCoordinator.tick` fires timers; deferred answers come
from :meth:`GroupCoordinator.poll_completions`; :meth:`GroupCoordinator.replay` rebuilds
state from the records.  See :mod:`riverbed.coordinator.coordinator` for the contract.
Kafka transactions live in :mod:`riverbed.coordinator.transactions`, in the same shape.
"""

from riverbed.coordinator.api import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    NO_GENERATION,
    UNKNOWN_MEMBER_ID,
    ConsumerGroupDescription,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupMemberDescription,
    DeletedGroup,
    DescribedGroup,
    DescribedGroupMember,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupMember,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupMemberResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListedGroup,
    MemberIdentity,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchPartition,
    OffsetFetchRequest,
    OffsetFetchResponse,
    PartitionResult,
    Pending,
    SyncGroupRequest,
    SyncGroupResponse,
    TopicPartitions,
)
from riverbed.coordinator.config import GroupCoordinatorConfig
from riverbed.coordinator.consumer import TopicMetadata
from riverbed.coordinator.context import Completion, Reply
from riverbed.coordinator.coordinator import GroupCoordinator
from riverbed.coordinator.errors import GroupCoordinatorError
from riverbed.coordinator.offsets_topic_records import CoordinatorRecord
from riverbed.coordinator.partitioning import (
    OFFSETS_TOPIC_NAME,
    TRANSACTION_STATE_TOPIC_NAME,
    java_string_hash,
    partition_for,
)
from riverbed.coordinator.state import ClassicGroupState, ConsumerGroupState, MemberState
from riverbed.protocol.topic_partition import TopicPartition

__all__ = [
    "LEAVE_GROUP_MEMBER_EPOCH",
    "LEAVE_GROUP_STATIC_MEMBER_EPOCH",
    "NO_GENERATION",
    "OFFSETS_TOPIC_NAME",
    "TRANSACTION_STATE_TOPIC_NAME",
    "UNKNOWN_MEMBER_ID",
    "ClassicGroupState",
    "Completion",
    "ConsumerGroupDescription",
    "ConsumerGroupHeartbeatRequest",
    "ConsumerGroupHeartbeatResponse",
    "ConsumerGroupMemberDescription",
    "ConsumerGroupState",
    "CoordinatorRecord",
    "DeletedGroup",
    "DescribedGroup",
    "DescribedGroupMember",
    "GroupCoordinator",
    "GroupCoordinatorConfig",
    "GroupCoordinatorError",
    "HeartbeatRequest",
    "HeartbeatResponse",
    "JoinGroupMember",
    "JoinGroupRequest",
    "JoinGroupResponse",
    "LeaveGroupMemberResponse",
    "LeaveGroupRequest",
    "LeaveGroupResponse",
    "ListedGroup",
    "MemberIdentity",
    "MemberState",
    "OffsetCommitPartition",
    "OffsetCommitRequest",
    "OffsetCommitResponse",
    "OffsetDeleteRequest",
    "OffsetDeleteResponse",
    "OffsetFetchPartition",
    "OffsetFetchRequest",
    "OffsetFetchResponse",
    "PartitionResult",
    "Pending",
    "Reply",
    "SyncGroupRequest",
    "SyncGroupResponse",
    "TopicMetadata",
    "TopicPartition",
    "TopicPartitions",
    "java_string_hash",
    "partition_for",
]
