"""OffsetCommit (key 8): store a group's consumed positions in ``__consumer_offsets``.

v1+ carry the generation (classic) or member epoch (KIP-848) and member id, v7+ the
group instance id; v2-4's ``retention_time_ms`` and v1's per-partition commit timestamp
are ignored (Kafka 4 ignores them too); v10 names topics by id.  Partitions of unknown
topics are answered UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID for ids) without reaching
the coordinator, as Kafka's broker does; the rest are validated and stored by it.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.deps import GroupDeps
from riverbed.broker.handlers.group_common import call
from riverbed.coordinator import OffsetCommitPartition
from riverbed.coordinator import OffsetCommitRequest as Commit
from riverbed.coordinator import OffsetCommitResponse as Committed
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import OffsetCommitRequest, OffsetCommitResponse

API_KEY = 8
TOPIC_IDS_VERSION = 10
LEADER_EPOCH_VERSION = 6

Partition = OffsetCommitResponse.OffsetCommitResponsePartition


def handle(
    deps: GroupDeps, ctx: RequestContext, request: OffsetCommitRequest
) -> OffsetCommitResponse | Awaitable[OffsetCommitResponse]:
    version = ctx.api_version
    by_id = version >= TOPIC_IDS_VERSION
    ids: dict[str, uuid.UUID] = {}
    rejected: list[tuple[str, uuid.UUID, int, ErrorCode]] = []
    partitions: list[OffsetCommitPartition] = []
    for topic in request.topics:
        name: str | None = topic.name
        if by_id:
            found = deps.topics.by_id(topic.topic_id)
            name = None if found is None else found.name
        else:
            found = deps.topics.get(topic.name)
        for p in topic.partitions:
            if found is None or name is None or not 0 <= p.partition_index < found.partitions:
                code = (
                    ErrorCode.UNKNOWN_TOPIC_ID
                    if by_id and found is None
                    else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                )
                rejected.append((topic.name, topic.topic_id, p.partition_index, code))
                continue
            ids[name] = found.topic_id
            partitions.append(
                OffsetCommitPartition(
                    name,
                    p.partition_index,
                    p.committed_offset,
                    p.committed_leader_epoch if version >= LEADER_EPOCH_VERSION else -1,
                    p.committed_metadata,
                )
            )
    req = Commit(
        request.group_id,
        tuple(partitions),
        request.generation_id_or_member_epoch if version >= 1 else -1,
        request.member_id if version >= 1 else "",
        request.group_instance_id,
    )
    coordinator = deps.groups.coordinator

    def encode(answer: Committed) -> OffsetCommitResponse:
        results = [
            (r.topic, ids.get(r.topic, uuid.UUID(int=0)), r.partition, r.error_code)
            for r in answer.partitions
        ]
        return _encode(results + rejected)

    def error(code: ErrorCode) -> OffsetCommitResponse:
        return _encode([(p.topic, ids[p.topic], p.partition, code) for p in partitions] + rejected)

    if not partitions:
        return _encode(rejected)
    return call(deps.groups, lambda now: coordinator.offset_commit(req, now), encode, error)


def _encode(results: list[tuple[str, uuid.UUID, int, ErrorCode]]) -> OffsetCommitResponse:
    topics: dict[tuple[str, uuid.UUID], list[Partition]] = {}
    for name, topic_id, partition, code in results:
        topics.setdefault((name, topic_id), []).append(
            Partition(partition_index=partition, error_code=code)
        )
    return OffsetCommitResponse(
        throttle_time_ms=0,
        topics=[
            OffsetCommitResponse.OffsetCommitResponseTopic(
                name=name, topic_id=topic_id, partitions=parts
            )
            for (name, topic_id), parts in topics.items()
        ],
    )
