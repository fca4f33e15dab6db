"""The share group APIs' ACL gates (riverbed.broker.handlers.share_authorization), through
``authorize_routes`` as the broker binds them: a denied group answers
GROUP_AUTHORIZATION_FAILED without calling the route, a denied topic is taken out of the
request and answered TOPIC_AUTHORIZATION_FAILED beside the route's answer."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.authorization import authorize_routes
from riverbed.broker.security.authorizer import AclOperation, ResourceType
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.framing import RequestHeader
from riverbed.protocol.messages import (
    ShareAcknowledgeRequest,
    ShareFetchRequest,
    ShareFetchResponse,
    ShareGroupHeartbeatRequest,
)
from riverbed.protocol.messages.generated.alter_share_group_offsets_request import (
    AlterShareGroupOffsetsRequest,
)
from riverbed.protocol.messages.generated.alter_share_group_offsets_response import (
    AlterShareGroupOffsetsResponse,
)
from riverbed.protocol.messages.generated.delete_share_group_offsets_request import (
    DeleteShareGroupOffsetsRequest,
)

ALLOWED_ID, DENIED_ID = uuid.uuid4(), uuid.uuid4()


@dataclass
class _Topic:
    name: str
    topic_id: uuid.UUID
    partitions: int = 1


class _Topics:
    def __init__(self) -> None:
        self._by_name = {"open": _Topic("open", ALLOWED_ID), "secret": _Topic("secret", DENIED_ID)}

    def get(self, name: str) -> _Topic | None:
        return self._by_name.get(name)

    def by_id(self, topic_id: uuid.UUID) -> _Topic | None:
        return next((t for t in self._by_name.values() if t.topic_id == topic_id), None)

    def topics(self) -> list[_Topic]:
        return list(self._by_name.values())


@dataclass
class _Authorizer:
    """Allows exactly ``grants``: (operation, resource type, name)."""

    grants: set[tuple[AclOperation, ResourceType, str]] = field(default_factory=set)

    def authorize(
        self, principal: str, host: str | None, op: AclOperation, rtype: ResourceType, name: str
    ) -> bool:
        return (op, rtype, name) in self.grants


@dataclass
class _Deps:
    authorizer: _Authorizer
    topics: _Topics = field(default_factory=_Topics)
    auto_create_topics_enable: bool = False

    @property
    def config(self) -> Any:
        return self


def _ctx(key: int, version: int) -> RequestContext:
    return RequestContext(RequestHeader(key, version, 1), principal="User:alice")


def _routes(seen: list[Any], answer: Any) -> dict[int, Any]:
    def route(ctx: RequestContext, request: Any) -> Any:
        seen.append(request)
        return answer

    return {key: route for key in (76, 77, 78, 79, 90, 91, 92)}


def test_group_read_is_required_for_heartbeat_and_share_fetch() -> None:
    seen: list[Any] = []
    deps = _Deps(_Authorizer())
    routes = authorize_routes(deps, _routes(seen, None))  # type: ignore[arg-type]
    beat = routes[76](
        _ctx(76, 1),
        ShareGroupHeartbeatRequest(group_id="g", member_id="m", member_epoch=0, rack_id=None),
    )
    assert beat.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    fetch = routes[78](_ctx(78, 1), ShareFetchRequest(group_id="g", member_id="m", topics=[]))
    assert fetch.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    ack = routes[79](_ctx(79, 1), ShareAcknowledgeRequest(group_id="g", member_id="m", topics=[]))
    assert ack.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    assert seen == []  # the routes were never called


def test_share_fetch_of_a_denied_topic_answers_topic_authorization_failed() -> None:
    seen: list[Any] = []
    grants = {
        (AclOperation.READ, ResourceType.GROUP, "g"),
        (AclOperation.READ, ResourceType.TOPIC, "open"),
    }
    answer = ShareFetchResponse(throttle_time_ms=0, error_code=0, responses=[])
    routes = authorize_routes(_Deps(_Authorizer(grants)), _routes(seen, answer))  # type: ignore[arg-type]
    part = ShareFetchRequest.FetchPartition(partition_index=0)
    request = ShareFetchRequest(
        group_id="g",
        member_id="m",
        topics=[
            ShareFetchRequest.FetchTopic(topic_id=ALLOWED_ID, partitions=[part]),
            ShareFetchRequest.FetchTopic(topic_id=DENIED_ID, partitions=[part]),
        ],
    )
    response = routes[78](_ctx(78, 1), request)
    assert [t.topic_id for t in seen[0].topics] == [ALLOWED_ID]  # only the granted topic
    ((denied,),) = [t.partitions for t in response.responses if t.topic_id == DENIED_ID]
    assert denied.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED


def test_offsets_admin_needs_group_read_or_delete() -> None:
    seen: list[Any] = []
    grants = {
        (AclOperation.READ, ResourceType.GROUP, "g"),
        (AclOperation.READ, ResourceType.TOPIC, "open"),
    }
    answer = AlterShareGroupOffsetsResponse(error_code=0, responses=[])
    routes = authorize_routes(_Deps(_Authorizer(grants)), _routes(seen, answer))  # type: ignore[arg-type]
    alter = AlterShareGroupOffsetsRequest(
        group_id="g",
        topics=[
            AlterShareGroupOffsetsRequest.AlterShareGroupOffsetsRequestTopic(
                topic_name=name,
                partitions=[
                    AlterShareGroupOffsetsRequest.AlterShareGroupOffsetsRequestPartition(
                        partition_index=0, start_offset=0
                    )
                ],
            )
            for name in ("open", "secret")
        ],
    )
    response = routes[91](_ctx(91, 0), alter)
    assert [t.topic_name for t in seen[0].topics] == ["open"]
    assert [(t.topic_name, t.partitions[0].error_code) for t in response.responses] == [
        ("secret", ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    ]
    deleted = routes[92](_ctx(92, 0), DeleteShareGroupOffsetsRequest(group_id="g", topics=[]))
    assert deleted.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED  # DELETE not granted
