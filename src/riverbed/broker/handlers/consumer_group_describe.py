"""ConsumerGroupDescribe (key 69): KIP-848 groups with members' current and target
assignments (topics by id and name).  A classic or unknown group answers
GROUP_ID_NOT_FOUND (the coordinator's answer).  Authorized operations, when asked for, for
each group answered without error: every operation Kafka supports on a group, as Kafka
answers without an authorizer (the authorization gate narrows them to the principal's)."""

from __future__ import annotations

import uuid

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.authorized_operations import OMITTED, all_operations
from riverbed.broker.handlers.deps import GroupDeps
from riverbed.broker.handlers.group_common import query
from riverbed.broker.security.authorizer import ResourceType
from riverbed.coordinator import ConsumerGroupDescription, TopicPartitions
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
)

API_KEY = 69
AUTHORIZED_OPERATIONS_OMITTED = OMITTED
ZERO_UUID = uuid.UUID(int=0)

Resp = ConsumerGroupDescribeResponse


def handle(
    deps: GroupDeps, ctx: RequestContext, request: ConsumerGroupDescribeRequest
) -> ConsumerGroupDescribeResponse:
    coordinator = deps.groups.coordinator
    group_ids = list(request.group_ids)
    ops = all_operations(ResourceType.GROUP) if request.include_authorized_operations else OMITTED

    def assignment(parts: TopicPartitions) -> Resp.Assignment:
        out = []
        for name, partitions in sorted(parts.items()):
            topic = deps.topics.get(name)
            out.append(
                Resp.TopicPartitions(
                    topic_id=ZERO_UUID if topic is None else topic.topic_id,
                    topic_name=name,
                    partitions=sorted(partitions),
                )
            )
        return Resp.Assignment(topic_partitions=out)

    def encode(groups: list[ConsumerGroupDescription]) -> ConsumerGroupDescribeResponse:
        return ConsumerGroupDescribeResponse(
            throttle_time_ms=0,
            groups=[
                Resp.DescribedGroup(
                    error_code=g.error_code,
                    error_message=None,
                    group_id=g.group_id,
                    group_state=g.group_state,
                    group_epoch=g.group_epoch,
                    assignment_epoch=g.assignment_epoch,
                    assignor_name=g.assignor_name,
                    members=[
                        Resp.Member(
                            member_id=m.member_id,
                            instance_id=m.instance_id,
                            rack_id=m.rack_id,
                            member_epoch=m.member_epoch,
                            client_id=m.client_id,
                            client_host=m.client_host,
                            subscribed_topic_names=list(m.subscribed_topic_names),
                            subscribed_topic_regex=m.subscribed_topic_regex,
                            assignment=assignment(m.assignment),
                            target_assignment=assignment(m.target_assignment),
                        )
                        for m in g.members
                    ],
                    authorized_operations=ops if g.error_code == ErrorCode.NONE else OMITTED,
                )
                for g in groups
            ],
        )

    return query(
        deps.groups,
        lambda: coordinator.consumer_group_describe(group_ids),
        encode,
        lambda code: encode([ConsumerGroupDescription(g, code) for g in group_ids]),
    )
