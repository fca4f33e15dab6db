"""OffsetDelete (key 47): drop committed offsets of partitions the group does not consume.

The coordinator refuses partitions of subscribed topics (GROUP_SUBSCRIBED_TO_TOPIC) and
unknown groups (GROUP_ID_NOT_FOUND); deletions are persisted as tombstones.
"""

from __future__ import annotations

from collections.abc import Awaitable

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.deps import GroupDeps
from riverbed.broker.handlers.group_common import call
from riverbed.coordinator import OffsetDeleteRequest as Delete
from riverbed.coordinator import OffsetDeleteResponse as Deleted
from riverbed.coordinator import Reply, TopicPartition
from riverbed.protocol.messages import OffsetDeleteRequest, OffsetDeleteResponse

API_KEY = 47

Resp = OffsetDeleteResponse


def handle(
    deps: GroupDeps, ctx: RequestContext, request: OffsetDeleteRequest
) -> OffsetDeleteResponse | Awaitable[OffsetDeleteResponse]:
    req = Delete(
        request.group_id,
        tuple(
            TopicPartition(t.name, p.partition_index) for t in request.topics for p in t.partitions
        ),
    )
    coordinator = deps.groups.coordinator

    def run(now: int) -> Reply[Deleted]:
        return coordinator.offset_delete(req)

    return call(deps.groups, run, _encode, lambda code: _encode(Deleted(code)))


def _encode(answer: Deleted) -> OffsetDeleteResponse:
    topics: dict[str, list[Resp.OffsetDeleteResponsePartition]] = {}
    for r in answer.partitions:
        topics.setdefault(r.topic, []).append(
            Resp.OffsetDeleteResponsePartition(partition_index=r.partition, error_code=r.error_code)
        )
    return OffsetDeleteResponse(
        error_code=answer.error_code,
        throttle_time_ms=0,
        topics=[Resp.OffsetDeleteResponseTopic(name=n, partitions=ps) for n, ps in topics.items()],
    )
