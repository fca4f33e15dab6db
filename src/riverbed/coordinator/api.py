"""Request and response values of the group coordinator's handlers.

These are the coordinator's own frozen values, not wire messages: a broker adapter decodes
a Kafka request (any version), builds one of these, calls the handler and encodes the
answer for the version it speaks.  Version-dependent behaviour that the coordinator must
know is passed explicitly (``JoinGroupRequest.api_version``).  Topics are named by topic
*name*; adapters map topic ids (KIP-848 APIs) to names and back.  ``""`` is Kafka's
UNKNOWN_MEMBER_ID (no member id yet).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.topic_partition import TopicPartition

UNKNOWN_MEMBER_ID = ""
NO_GENERATION = -1
LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2

TopicPartitions = Mapping[str, frozenset[int]]
"""Partitions by topic name."""


@dataclass(frozen=True, slots=True)
class Pending:
    """The answer waits (a join until the rebalance completes, a follower's sync until the
    leader's assignment): it arrives later as a :class:`Completion` with this ``token``."""

    token: int


# -- classic group protocol ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JoinGroupRequest:
    group_id: str
    member_id: str
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    """(protocol name, member metadata) in the member's order of preference."""
    session_timeout_ms: int
    rebalance_timeout_ms: int = -1
    """-1 (JoinGroup v0) means: the session timeout."""
    group_instance_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    api_version: int = 9
    """v4+: a new member first gets MEMBER_ID_REQUIRED; v9+: the static leader may skip
    assignment."""
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class JoinGroupMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinGroupResponse:
    error_code: ErrorCode
    member_id: str = UNKNOWN_MEMBER_ID
    generation_id: int = NO_GENERATION
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    skip_assignment: bool = False
    members: tuple[JoinGroupMember, ...] = ()
    """Only the leader gets the members (with metadata for the selected protocol)."""


@dataclass(frozen=True, slots=True)
class SyncGroupRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignments: tuple[tuple[str, bytes], ...] = ()
    """(member id, assignment): sent by the leader only."""


@dataclass(frozen=True, slots=True)
class SyncGroupResponse:
    error_code: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class HeartbeatResponse:
    error_code: ErrorCode


@dataclass(frozen=True, slots=True)
class MemberIdentity:
    member_id: str
    group_instance_id: str | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class LeaveGroupRequest:
    """LeaveGroup v0-2 carry one member id: adapters pass it as a one-member tuple and
    answer the per-member error as the top-level one."""

    group_id: str
    members: tuple[MemberIdentity, ...]


@dataclass(frozen=True, slots=True)
class LeaveGroupMemberResponse:
    member_id: str
    group_instance_id: str | None
    error_code: ErrorCode


@dataclass(frozen=True, slots=True)
class LeaveGroupResponse:
    error_code: ErrorCode
    members: tuple[LeaveGroupMemberResponse, ...] = ()


# -- KIP-848 consumer group protocol ------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    """0 to join, -1 to leave, -2 for a static member's temporary leave, else current."""
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    """None: unchanged since the last heartbeat."""
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned_partitions: TopicPartitions | None = None
    """Partitions the member owns now; None: unchanged."""
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeatResponse:
    error_code: ErrorCode
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: TopicPartitions | None = None
    """The member's full assignment when it changed (or on join); None: unchanged."""


@dataclass(frozen=True, slots=True)
class ConsumerGroupMemberDescription:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    assignment: TopicPartitions
    target_assignment: TopicPartitions


@dataclass(frozen=True, slots=True)
class ConsumerGroupDescription:
    group_id: str
    error_code: ErrorCode
    group_state: str = "Dead"
    group_epoch: int = -1
    assignment_epoch: int = -1
    assignor_name: str = ""
    members: tuple[ConsumerGroupMemberDescription, ...] = ()


# -- offsets and group administration ------------------------------------------------


@dataclass(frozen=True, slots=True)
class OffsetCommitPartition:
    topic: str
    partition: int
    committed_offset: int
    committed_leader_epoch: int = -1
    committed_metadata: str | None = ""


@dataclass(frozen=True, slots=True)
class OffsetCommitRequest:
    group_id: str
    partitions: tuple[OffsetCommitPartition, ...]
    generation_id_or_member_epoch: int = NO_GENERATION
    member_id: str = UNKNOWN_MEMBER_ID
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class PartitionResult:
    topic: str
    partition: int
    error_code: ErrorCode


@dataclass(frozen=True, slots=True)
class OffsetCommitResponse:
    partitions: tuple[PartitionResult, ...]


@dataclass(frozen=True, slots=True)
class OffsetFetchRequest:
    group_id: str
    partitions: tuple[TopicPartition, ...] | None = None
    """None: every committed offset of the group."""
    require_stable: bool = False


@dataclass(frozen=True, slots=True)
class OffsetFetchPartition:
    topic: str
    partition: int
    committed_offset: int
    committed_leader_epoch: int
    metadata: str | None
    error_code: ErrorCode = ErrorCode.NONE


@dataclass(frozen=True, slots=True)
class OffsetFetchResponse:
    error_code: ErrorCode
    partitions: tuple[OffsetFetchPartition, ...] = ()


@dataclass(frozen=True, slots=True)
class OffsetDeleteRequest:
    group_id: str
    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True)
class OffsetDeleteResponse:
    error_code: ErrorCode
    partitions: tuple[PartitionResult, ...] = ()


@dataclass(frozen=True, slots=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    group_state: str
    group_type: str
    """"classic" or "consumer"."""


@dataclass(frozen=True, slots=True)
class DescribedGroupMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    member_metadata: bytes
    member_assignment: bytes


@dataclass(frozen=True, slots=True)
class DescribedGroup:
    group_id: str
    error_code: ErrorCode
    group_state: str = "Dead"
    protocol_type: str = ""
    protocol_data: str = ""
    members: tuple[DescribedGroupMember, ...] = field(default=())


@dataclass(frozen=True, slots=True)
class DeletedGroup:
    group_id: str
    error_code: ErrorCode
