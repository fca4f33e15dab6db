"""DescribeShareGroupOffsets (key 90, v0-1), AlterShareGroupOffsets (91, v0) and
DeleteShareGroupOffsets (92, v0): the share group offsets admin (KIP-932), at Kafka 4.4's
versions.

* **Describe** answers each share partition's start offset (SPSO) and, from v1, its lag
  (high watermark - start offset - records already delivered past it, negative for a
  start offset altered past the end, as Kafka answers; -1 where the group has no state
  for the partition, whose start offset is then -1 too).  Null topics mean
  every share partition the group has state for.  Like Kafka 4.4 on the wire, Describe
  never answers an error for a group or a topic: an unknown group id, the id of a
  consumer/classic group, an unknown topic (listed after the known ones, topic id zero)
  and a partition past the topic's end all answer "no state" (-1, -1, error NONE).  The
  known topics' partitions come in ascending order, as Kafka's answers them.
* **Alter** sets start offsets.  The group must have no members (NON_EMPTY_GROUP) and
  must not be a consumer/classic group (GROUP_ID_NOT_FOUND); an unknown group id is
  created (empty), as Kafka does.  Like Kafka, a top-level error answers no topics; an
  unknown topic or partition answers UNKNOWN_TOPIC_OR_PARTITION for itself (unknown
  topics first, as Kafka lists them).  A negative start offset answers INVALID_REQUEST
  for that partition (a deliberate difference: Kafka 4.4 stores it).  The new state is
  appended to ``__share_group_state`` as a snapshot and the answer is sent only once it
  is durable (its fsync), so an altered offset survives a crash.
* **Delete** forgets the group's state of whole topics (tombstones, durable before the
  answer); a later fetch starts them again at ``share.auto.offset.reset``.  Empty share
  groups only: NON_EMPTY_GROUP with members, GROUP_ID_NOT_FOUND for an unknown group or
  a consumer/classic group's id (top level, no topics).  Unknown topics answer
  UNKNOWN_TOPIC_OR_PARTITION, listed after the deleted ones (Kafka's order).

Checked against Kafka 4.4 on the wire (``test_share_group_wire.py``).
Event-loop only; the awaits are the fsync futures (the loop never waits on disk).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Protocol

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.deps import PartitionLogs
from riverbed.broker.share_partitions import Flushes
from riverbed.coordinator.share_group import ShareGroupDescription
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages.generated.alter_share_group_offsets_request import (
    AlterShareGroupOffsetsRequest,
)
from riverbed.protocol.messages.generated.alter_share_group_offsets_response import (
    AlterShareGroupOffsetsResponse,
)
from riverbed.protocol.messages.generated.delete_share_group_offsets_request import (
    DeleteShareGroupOffsetsRequest,
)
from riverbed.protocol.messages.generated.delete_share_group_offsets_response import (
    DeleteShareGroupOffsetsResponse,
)
from riverbed.protocol.messages.generated.describe_share_group_offsets_request import (
    DescribeShareGroupOffsetsRequest,
)
from riverbed.protocol.messages.generated.describe_share_group_offsets_response import (
    DescribeShareGroupOffsetsResponse,
)
from riverbed.protocol.primitives import ZERO_UUID
from riverbed.protocol.topic_partition import TopicPartition
from riverbed.storage.log import PartitionLog

DESCRIBE_KEY, ALTER_KEY, DELETE_KEY = 90, 91, 92
UNINITIALIZED = -1
"""Start offset and lag answered for a partition the group has no state for."""
NOT_HOSTED = "This server does not host this topic-partition."
NON_EMPTY = "The group is not empty."

DescResp = DescribeShareGroupOffsetsResponse
AltResp = AlterShareGroupOffsetsResponse
DelResp = DeleteShareGroupOffsetsResponse


class ShareOffsetsPort(Protocol):
    """The share group service as the offsets admin uses it
    (:class:`~riverbed.broker.share_groups.ShareGroupService`)."""

    @property
    def closed(self) -> bool: ...

    def describe(self, group_id: str) -> ShareGroupDescription: ...

    def is_share_group(self, group_id: str) -> bool: ...

    def has_members(self, group_id: str) -> bool | None: ...

    def start_offsets(self, group_id: str) -> list[tuple[TopicPartition, int, int]]: ...

    async def alter_start_offset(
        self, group_id: str, tp: TopicPartition, offset: int
    ) -> tuple[ErrorCode, Flushes]: ...

    async def delete_start_offsets(
        self, group_id: str, topic: str
    ) -> tuple[ErrorCode, Flushes]: ...


class ShareOffsetsDeps(Protocol):
    @property
    def share_groups(self) -> ShareOffsetsPort: ...

    @property
    def topics(self) -> PartitionLogs[PartitionLog]: ...


async def _durable(flushes: list[concurrent.futures.Future[None]]) -> None:
    for fut in flushes:
        await asyncio.wrap_future(fut)


def _group_error(shares: ShareOffsetsPort, group_id: str) -> tuple[ErrorCode, str | None]:
    """GROUP_ID_NOT_FOUND (with Kafka's message) unless ``group_id`` is a share group."""
    if shares.is_share_group(group_id):
        return ErrorCode.NONE, None
    described = shares.describe(group_id)
    message = described.error_message or f"Group {group_id} not found."
    return ErrorCode.GROUP_ID_NOT_FOUND, message


# -- DescribeShareGroupOffsets ---------------------------------------------------------
def handle_describe(
    deps: ShareOffsetsDeps, ctx: RequestContext, request: DescribeShareGroupOffsetsRequest
) -> DescribeShareGroupOffsetsResponse:
    return DescribeShareGroupOffsetsResponse(
        throttle_time_ms=0, groups=[_describe_group(deps, g) for g in request.groups]
    )


def _describe_group(
    deps: ShareOffsetsDeps,
    group: DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup,
) -> DescResp.DescribeShareGroupOffsetsResponseGroup:
    shares = deps.share_groups
    if shares.closed:
        return DescResp.DescribeShareGroupOffsetsResponseGroup(
            group_id=group.group_id,
            topics=[],
            error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE,
            error_message="the broker is shutting down",
        )
    # A group that is not a share group (or none) simply has no state, as in Kafka.
    state = {tp: (start, done) for tp, start, done in shares.start_offsets(group.group_id)}
    wanted: list[tuple[str, list[int]]]
    if group.topics is None:
        by_topic: dict[str, list[int]] = {}
        for tp in sorted(state):
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        wanted = list(by_topic.items())
    else:
        wanted = [(t.topic_name, list(t.partitions)) for t in group.topics]
    known: list[DescResp.DescribeShareGroupOffsetsResponseTopic] = []
    unknown: list[DescResp.DescribeShareGroupOffsetsResponseTopic] = []
    for name, partitions in wanted:
        topic = deps.topics.get(name)
        if topic is None:
            unknown.append(
                DescResp.DescribeShareGroupOffsetsResponseTopic(
                    topic_name=name,
                    topic_id=ZERO_UUID,
                    partitions=[_no_state(p) for p in partitions],
                )
            )
            continue
        parts = []
        for p in sorted(partitions):
            found = state.get(TopicPartition(name, p)) if 0 <= p < topic.partitions else None
            if found is None:
                parts.append(_no_state(p))
                continue
            start, done = found
            hwm = deps.topics.partition_log(name, p).high_watermark
            parts.append(
                DescResp.DescribeShareGroupOffsetsResponsePartition(
                    partition_index=p,
                    start_offset=start,
                    leader_epoch=0,
                    lag=hwm - start - done,  # negative past the end, as Kafka answers
                )
            )
        known.append(
            DescResp.DescribeShareGroupOffsetsResponseTopic(
                topic_name=name, topic_id=topic.topic_id, partitions=parts
            )
        )
    return DescResp.DescribeShareGroupOffsetsResponseGroup(
        group_id=group.group_id, topics=known + unknown, error_code=ErrorCode.NONE
    )


def _no_state(partition: int) -> DescResp.DescribeShareGroupOffsetsResponsePartition:
    return DescResp.DescribeShareGroupOffsetsResponsePartition(
        partition_index=partition, start_offset=UNINITIALIZED, leader_epoch=0, lag=UNINITIALIZED
    )


# -- AlterShareGroupOffsets -------------------------------------------------------------
def handle_alter(
    deps: ShareOffsetsDeps, ctx: RequestContext, request: AlterShareGroupOffsetsRequest
) -> asyncio.Future[AlterShareGroupOffsetsResponse]:
    return asyncio.ensure_future(_alter(deps, request))


async def _alter(
    deps: ShareOffsetsDeps, request: AlterShareGroupOffsetsRequest
) -> AlterShareGroupOffsetsResponse:
    shares, group_id = deps.share_groups, request.group_id
    top = _alter_group_error(shares, group_id)
    if top[0] != ErrorCode.NONE:
        return _alter_error(*top)
    flushes: list[concurrent.futures.Future[None]] = []
    unknown: list[AltResp.AlterShareGroupOffsetsResponseTopic] = []
    known: list[AltResp.AlterShareGroupOffsetsResponseTopic] = []
    for t in request.topics:
        topic = deps.topics.get(t.topic_name)
        parts = []
        for p in t.partitions:
            code, message = ErrorCode.NONE, None
            if topic is None or not 0 <= p.partition_index < topic.partitions:
                code, message = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, NOT_HOSTED
            elif p.start_offset < 0:
                code, message = ErrorCode.INVALID_REQUEST, "The start offset must be >= 0."
            else:
                tp = TopicPartition(t.topic_name, p.partition_index)
                code, fsyncs = await shares.alter_start_offset(group_id, tp, p.start_offset)
                flushes += fsyncs
                if code != ErrorCode.NONE:  # a member joined meanwhile: stop here
                    await _durable(flushes)
                    return _alter_error(code, NON_EMPTY)
            parts.append(
                AltResp.AlterShareGroupOffsetsResponsePartition(
                    partition_index=p.partition_index, error_code=code, error_message=message
                )
            )
        (unknown if topic is None else known).append(
            AltResp.AlterShareGroupOffsetsResponseTopic(
                topic_name=t.topic_name,
                topic_id=ZERO_UUID if topic is None else topic.topic_id,
                partitions=parts,
            )
        )
    await _durable(flushes)
    return AlterShareGroupOffsetsResponse(
        throttle_time_ms=0, error_code=ErrorCode.NONE, responses=unknown + known
    )


def _alter_group_error(shares: ShareOffsetsPort, group_id: str) -> tuple[ErrorCode, str | None]:
    """The top-level error of an Alter: the broker closing, a consumer/classic group's id
    (Kafka's "Group X is not a share group"; an unknown id is created), members."""
    if shares.closed:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, "the broker is shutting down"
    if not shares.is_share_group(group_id):
        message = shares.describe(group_id).error_message
        if message and "not a share group" in message:
            return ErrorCode.GROUP_ID_NOT_FOUND, message
        return ErrorCode.NONE, None
    if shares.has_members(group_id):
        return ErrorCode.NON_EMPTY_GROUP, NON_EMPTY
    return ErrorCode.NONE, None


def _alter_error(code: ErrorCode, message: str | None) -> AlterShareGroupOffsetsResponse:
    """A top-level error answers no topics, as Kafka's does."""
    return AlterShareGroupOffsetsResponse(
        throttle_time_ms=0, error_code=code, error_message=message, responses=[]
    )


# -- DeleteShareGroupOffsets ------------------------------------------------------------
def handle_delete(
    deps: ShareOffsetsDeps, ctx: RequestContext, request: DeleteShareGroupOffsetsRequest
) -> asyncio.Future[DeleteShareGroupOffsetsResponse]:
    return asyncio.ensure_future(_delete(deps, request))


async def _delete(
    deps: ShareOffsetsDeps, request: DeleteShareGroupOffsetsRequest
) -> DeleteShareGroupOffsetsResponse:
    shares, group_id = deps.share_groups, request.group_id
    if shares.closed:
        return DeleteShareGroupOffsetsResponse(
            error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE,
            error_message="the broker is shutting down",
        )
    code, message = _group_error(shares, group_id)
    if code == ErrorCode.NONE and shares.has_members(group_id):
        code, message = ErrorCode.NON_EMPTY_GROUP, NON_EMPTY
    if code != ErrorCode.NONE:
        return DeleteShareGroupOffsetsResponse(error_code=code, error_message=message)
    flushes: list[concurrent.futures.Future[None]] = []
    deleted: list[DelResp.DeleteShareGroupOffsetsResponseTopic] = []
    unknown: list[DelResp.DeleteShareGroupOffsetsResponseTopic] = []
    for t in request.topics:
        topic = deps.topics.get(t.topic_name)
        if topic is None:
            unknown.append(
                DelResp.DeleteShareGroupOffsetsResponseTopic(
                    topic_name=t.topic_name,
                    error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    error_message=NOT_HOSTED,
                )
            )
            continue
        code, fsyncs = await shares.delete_start_offsets(group_id, t.topic_name)
        flushes += fsyncs
        if code != ErrorCode.NONE:  # a member joined meanwhile: stop here
            await _durable(flushes)
            return DeleteShareGroupOffsetsResponse(error_code=code, error_message=NON_EMPTY)
        deleted.append(
            DelResp.DeleteShareGroupOffsetsResponseTopic(
                topic_name=t.topic_name, topic_id=topic.topic_id, error_code=code
            )
        )
    await _durable(flushes)
    return DeleteShareGroupOffsetsResponse(
        throttle_time_ms=0, error_code=ErrorCode.NONE, responses=deleted + unknown
    )
