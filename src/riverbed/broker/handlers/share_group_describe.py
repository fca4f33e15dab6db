"""ShareGroupDescribe (key 77, v1): share groups' state, epochs and members.

An unknown id, or the id of a consumer/classic group, answers GROUP_ID_NOT_FOUND for that
group (Kafka's "Group X is not a share group").  Authorized operations are not computed
(Kafka's "not requested" value is answered).
"""

from __future__ import annotations

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.share_deps import ShareGroupDeps
from riverbed.coordinator.share_group import ShareGroupDescription
from riverbed.protocol.messages import ShareGroupDescribeRequest, ShareGroupDescribeResponse

API_KEY = 77

Resp = ShareGroupDescribeResponse


def handle(
    deps: ShareGroupDeps, ctx: RequestContext, request: ShareGroupDescribeRequest
) -> ShareGroupDescribeResponse:
    return ShareGroupDescribeResponse(
        throttle_time_ms=0,
        groups=[_group(deps, deps.share_groups.describe(g)) for g in request.group_ids],
    )


def _group(deps: ShareGroupDeps, d: ShareGroupDescription) -> Resp.DescribedGroup:
    members = []
    for m in d.members:
        parts = []
        for name, partitions in sorted(m.assignment.items()):
            topic = deps.topics.get(name)
            if topic is not None:
                parts.append(
                    Resp.TopicPartitions(
                        topic_id=topic.topic_id, topic_name=name, partitions=sorted(partitions)
                    )
                )
        members.append(
            Resp.Member(
                member_id=m.member_id,
                rack_id=m.rack_id,
                member_epoch=m.member_epoch,
                client_id=m.client_id,
                client_host=m.client_host,
                subscribed_topic_names=list(m.subscribed_topic_names),
                assignment=Resp.Assignment(topic_partitions=parts),
            )
        )
    return Resp.DescribedGroup(
        error_code=d.error_code,
        error_message=d.error_message,
        group_id=d.group_id,
        group_state=d.group_state,
        group_epoch=d.group_epoch,
        assignment_epoch=d.assignment_epoch,
        assignor_name=d.assignor_name,
        members=members,
    )
