"""OffsetFetch (key 9): a group's committed offsets, with their metadata.

v0-7 ask for one group (``topics`` null, v2+, means every committed offset); v8+ for a
batch of groups; v10 names topics by id (offsets of topics that no longer exist are left
out of "all" answers).  A partition without a commit answers offset -1 and metadata "".
``require_stable`` (KIP-447) answers UNSTABLE_OFFSET_COMMIT, offset -1, for a partition
with a transactional offset (TxnOffsetCommit) whose transaction is not decided yet; the
consumer retries.
"""

from __future__ import annotations

import uuid

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.deps import OffsetFetchDeps
from riverbed.broker.handlers.group_common import query
from riverbed.coordinator import OffsetFetchPartition, TopicPartition
from riverbed.coordinator import OffsetFetchRequest as Fetch
from riverbed.coordinator import OffsetFetchResponse as Fetched
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import OffsetFetchRequest, OffsetFetchResponse

API_KEY = 9
BATCHED_VERSION = 8
TOPIC_IDS_VERSION = 10
ZERO_UUID = uuid.UUID(int=0)

Resp = OffsetFetchResponse


def handle(
    deps: OffsetFetchDeps, ctx: RequestContext, request: OffsetFetchRequest
) -> OffsetFetchResponse:
    version = ctx.api_version
    if version < BATCHED_VERSION:
        wanted = (
            None
            if request.topics is None
            else tuple(
                TopicPartition(t.name, p) for t in request.topics for p in t.partition_indexes
            )
        )
        answer = _fetch(deps, Fetch(request.group_id, wanted, request.require_stable))
        code = answer.error_code
        topics: dict[str, list[Resp.OffsetFetchResponsePartition]] = {}
        for p in answer.partitions:
            topics.setdefault(p.topic, []).append(
                Resp.OffsetFetchResponsePartition(
                    partition_index=p.partition,
                    committed_offset=p.committed_offset,
                    committed_leader_epoch=p.committed_leader_epoch,
                    metadata=p.metadata,
                    error_code=p.error_code if version >= 2 or code == ErrorCode.NONE else code,
                )
            )
        return OffsetFetchResponse(
            throttle_time_ms=0,
            error_code=code,
            topics=[
                Resp.OffsetFetchResponseTopic(name=n, partitions=ps) for n, ps in topics.items()
            ],
        )
    groups = []
    for group in request.groups:
        groups.append(_group(deps, group, version, request.require_stable))
    return OffsetFetchResponse(throttle_time_ms=0, groups=groups)


def _fetch(deps: OffsetFetchDeps, req: Fetch) -> Fetched:
    coordinator = deps.groups.coordinator
    answer = query(
        deps.groups, lambda: coordinator.offset_fetch(req), lambda a: a, lambda code: Fetched(code)
    )
    if not req.require_stable or answer.error_code != ErrorCode.NONE:
        return answer
    unstable = deps.transactions.unstable_offsets(req.group_id)
    if not unstable:
        return answer
    return Fetched(
        answer.error_code,
        tuple(
            OffsetFetchPartition(p.topic, p.partition, -1, -1, "", ErrorCode.UNSTABLE_OFFSET_COMMIT)
            if TopicPartition(p.topic, p.partition) in unstable
            else p
            for p in answer.partitions
        ),
    )


def _group(
    deps: OffsetFetchDeps,
    group: OffsetFetchRequest.OffsetFetchRequestGroup,
    version: int,
    require_stable: bool,
) -> Resp.OffsetFetchResponseGroup:
    by_id = version >= TOPIC_IDS_VERSION
    unknown: list[tuple[uuid.UUID, list[int]]] = []
    wanted: tuple[TopicPartition, ...] | None = None
    if group.topics is not None:
        parts = []
        for t in group.topics:
            name: str | None = t.name
            if by_id:
                found = deps.topics.by_id(t.topic_id)
                name = None if found is None else found.name
            if name is None:
                unknown.append((t.topic_id, list(t.partition_indexes)))
                continue
            parts += [TopicPartition(name, p) for p in t.partition_indexes]
        wanted = tuple(parts)
    answer = _fetch(deps, Fetch(group.group_id, wanted, require_stable))
    topics: dict[str, list[Resp.OffsetFetchResponsePartitions]] = {}
    for p in answer.partitions:
        topics.setdefault(p.topic, []).append(
            Resp.OffsetFetchResponsePartitions(
                partition_index=p.partition,
                committed_offset=p.committed_offset,
                committed_leader_epoch=p.committed_leader_epoch,
                metadata=p.metadata,
                error_code=p.error_code,
            )
        )
    out = []
    for name, partitions in topics.items():
        topic_id = ZERO_UUID
        if by_id:
            found = deps.topics.get(name)
            if found is None:
                continue
            topic_id = found.topic_id
        out.append(
            Resp.OffsetFetchResponseTopics(name=name, topic_id=topic_id, partitions=partitions)
        )
    for topic_id, indexes in unknown:
        out.append(
            Resp.OffsetFetchResponseTopics(
                name="",
                topic_id=topic_id,
                partitions=[
                    Resp.OffsetFetchResponsePartitions(
                        partition_index=i,
                        committed_offset=-1,
                        committed_leader_epoch=-1,
                        metadata="",
                        error_code=ErrorCode.UNKNOWN_TOPIC_ID,
                    )
                    for i in indexes
                ],
            )
        )
    return Resp.OffsetFetchResponseGroup(
        group_id=group.group_id, topics=out, error_code=answer.error_code
    )
