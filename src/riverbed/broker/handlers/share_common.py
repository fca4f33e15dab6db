"""What ShareFetch and ShareAcknowledge share: their dependencies and small helpers.

:class:`ShareFetchDeps` names what both handlers touch: the share group service (its
sessions and share partitions), the topic table (ids <-> names, partition logs), the
purgatory (long polling) and this node (``CurrentLeader``).  Event-loop only.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

from riverbed.broker.handlers.deps import FetchWaits, PartitionLogs
from riverbed.protocol.error_codes import ErrorCode

if TYPE_CHECKING:
    from riverbed.broker.share_partitions import SharePartitions
    from riverbed.broker.share_sessions import ShareSessionCache
    from riverbed.storage.log import PartitionLog


class ShareService(Protocol):
    """The share group service as ShareFetch / ShareAcknowledge use it."""

    @property
    def closed(self) -> bool: ...

    @property
    def sessions(self) -> ShareSessionCache: ...

    @property
    def partitions(self) -> SharePartitions: ...


class ShareFetchDeps(Protocol):
    @property
    def share_groups(self) -> ShareService: ...

    @property
    def topics(self) -> PartitionLogs[PartitionLog]: ...

    @property
    def purgatory(self) -> FetchWaits: ...

    @property
    def node_id(self) -> int: ...

    @property
    def closing(self) -> bool: ...


class _AckBatch(Protocol):
    first_offset: int
    last_offset: int
    acknowledge_types: list[int]


def ack_batches(batches: Iterable[_AckBatch]) -> list[tuple[int, int, list[int]]]:
    """Wire ``AcknowledgementBatches`` as ``(first, last, types)``."""
    return [(b.first_offset, b.last_offset, list(b.acknowledge_types)) for b in batches]


def leader(deps: ShareFetchDeps) -> int:
    """``CurrentLeader.LeaderId``: this node leads every partition."""
    return deps.node_id


def top_level_error(
    closed: bool, group_id: str | None, member_id: str | None
) -> tuple[ErrorCode, str] | None:
    """The request-level refusal, if any: stopping, or no group / member id."""
    if closed:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, "the broker is shutting down"
    if not group_id:
        return ErrorCode.INVALID_REQUEST, "GroupId can't be empty"
    if not member_id:
        return ErrorCode.INVALID_REQUEST, "MemberId can't be empty"
    return None
