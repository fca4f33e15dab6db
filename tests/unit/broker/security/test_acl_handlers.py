"""CreateAcls / DescribeAcls / DeleteAcls handlers, and the enforcement gates around the
routes (riverbed.broker.handlers.authorization), on in-memory deps."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers import authorization, create_acls, delete_acls, describe_acls
from riverbed.broker.security.acl_store import AclStore
from riverbed.broker.security.authorizer import Authorizer
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.framing import RequestHeader
from riverbed.protocol.messages import (
    CreateAclsRequest,
    DeleteAclsRequest,
    DescribeAclsRequest,
    HeartbeatRequest,
    ProduceRequest,
    ProduceResponse,
)


@dataclass
class Deps:
    acl_store: AclStore
    authorizer: Authorizer | None = None
    topics: Any = None
    config: Any = None
    calls: list[Any] = field(default_factory=list)


def ctx(api_key: int, version: int, principal: str) -> RequestContext:
    return RequestContext(RequestHeader(api_key, version, 1, "unit"), "10.0.0.1", principal)


def deps(tmp_path: Path, *, enabled: bool = True) -> Deps:
    store = AclStore(tmp_path)
    authorizer = Authorizer(store, super_users=["User:admin"]) if enabled else None
    return Deps(store, authorizer)


def creation(principal: str = "User:alice", op: int = 3, name: str = "t") -> Any:
    return CreateAclsRequest.AclCreation(
        resource_type=2,
        resource_name=name,
        resource_pattern_type=3,
        principal=principal,
        host="*",
        operation=op,
        permission_type=3,
    )


ANY_FILTER: dict[str, Any] = dict(
    resource_type_filter=1,
    resource_name_filter=None,
    pattern_type_filter=1,
    principal_filter=None,
    host_filter=None,
    operation=1,
    permission_type=1,
)


def test_without_authorizer_security_disabled(tmp_path: Path) -> None:
    d = deps(tmp_path, enabled=False)
    request = CreateAclsRequest(creations=[creation()])
    out = create_acls.handle(d, ctx(30, 3, "User:admin"), request)
    assert [r.error_code for r in out.results] == [ErrorCode.SECURITY_DISABLED]
    described = describe_acls.handle(d, ctx(29, 3, "User:admin"), DescribeAclsRequest(**ANY_FILTER))
    assert described.error_code == ErrorCode.SECURITY_DISABLED


def test_create_describe_delete(tmp_path: Path) -> None:
    d = deps(tmp_path)
    denied = create_acls.handle(
        d, ctx(30, 3, "User:alice"), CreateAclsRequest(creations=[creation()])
    )
    assert [r.error_code for r in denied.results] == [ErrorCode.CLUSTER_AUTHORIZATION_FAILED]
    out = create_acls.handle(
        d,
        ctx(30, 3, "User:admin"),
        CreateAclsRequest(creations=[creation(), creation(op=0), creation(name="u")]),
    )
    assert [r.error_code for r in out.results] == [0, ErrorCode.INVALID_REQUEST, 0]
    assert len(AclStore(tmp_path).acls()) == 2
    not_allowed = describe_acls.handle(
        d, ctx(29, 3, "User:alice"), DescribeAclsRequest(**ANY_FILTER)
    )
    assert not_allowed.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    described = describe_acls.handle(d, ctx(29, 3, "User:admin"), DescribeAclsRequest(**ANY_FILTER))
    assert [(r.resource_name, len(r.acls)) for r in described.resources] == [("t", 1), ("u", 1)]
    removed = delete_acls.handle(
        d,
        ctx(31, 3, "User:admin"),
        DeleteAclsRequest(
            filters=[
                DeleteAclsRequest.DeleteAclsFilter(**{**ANY_FILTER, "resource_name_filter": "t"})
            ]
        ),
    )
    assert [m.resource_name for m in removed.filter_results[0].matching_acls] == ["t"]
    assert {a.resource_name for a in AclStore(tmp_path).acls()} == {"u"}


def test_gates(tmp_path: Path) -> None:
    d = deps(tmp_path)

    def produce_route(context: RequestContext, request: Any) -> ProduceResponse:
        d.calls.append([t.name for t in request.topic_data])
        return ProduceResponse(responses=[], throttle_time_ms=0)

    def heartbeat_route(context: RequestContext, request: Any) -> str:
        return "ran"

    routes = authorization.authorize_routes(d, {0: produce_route, 12: heartbeat_route, 99: 1})
    assert routes[99] == 1  # not gated
    create_acls.handle(
        d, ctx(30, 3, "User:admin"), CreateAclsRequest(creations=[creation(op=4, name="ok")])
    )
    request = ProduceRequest(
        transactional_id=None,
        acks=1,
        timeout_ms=1000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name=n, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=b"x")]
            )
            for n in ("ok", "no")
        ],
    )
    response = routes[0](ctx(0, 9, "User:alice"), request)
    assert d.calls == [["ok"]]
    assert [(t.name, t.partition_responses[0].error_code) for t in response.responses] == [
        ("no", ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    ]
    hb = HeartbeatRequest(group_id="g", generation_id=1, member_id="m")
    denied_hb = routes[12](ctx(12, 4, "User:alice"), hb)
    assert denied_hb.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    assert routes[12](ctx(12, 4, "User:admin"), hb) == "ran"
    d.authorizer = None  # not configured: every route runs unchanged
    assert routes[12](ctx(12, 4, "User:alice"), hb) == "ran"


def filled(top: type[Any], cls: type[Any] | None = None) -> Any:
    """An instance of ``cls`` (default ``top``) with one element in every array and a
    name in every string, so each gate has something to deny."""
    cls = cls or top
    values: dict[str, Any] = {}
    for spec in cls.FIELDS:
        if spec.tag is not None:
            continue
        if spec.type == "string":
            values[spec.name] = "x"
        elif spec.type == "[]string":
            values[spec.name] = ["x"]
        elif spec.type == "[]int32":
            values[spec.name] = [0]
        elif spec.type == "struct":
            values[spec.name] = filled(top, getattr(top, spec.struct))
        elif spec.type == "[]struct":
            values[spec.name] = [filled(top, getattr(top, spec.struct))]
    return cls(**values)


class NoTopics:
    def get(self, name: str) -> None:
        return None

    def by_id(self, topic_id: Any) -> None:
        return None


def test_every_denial_encodes_at_every_served_version(tmp_path: Path) -> None:
    import asyncio
    from collections.abc import Awaitable

    from riverbed.broker.barrier import Barrier
    from riverbed.broker.config import BrokerConfig
    from riverbed.protocol.api import API_BY_KEY

    d = Deps(AclStore(tmp_path), Authorizer(AclStore(tmp_path)), NoTopics(), BrokerConfig())
    for key in authorization.GATES:
        spec = API_BY_KEY[key]

        def route(context: RequestContext, request: Any, cls: Any = spec.response_class) -> Any:
            return cls()

        guarded = authorization.authorize_routes(d, {key: route})[key]
        for version in range(spec.min_version, spec.max_version + 1):
            result = guarded(ctx(key, version, "User:alice"), filled(spec.request_class))
            if isinstance(result, Barrier):
                result = result.awaitable
            if isinstance(result, Awaitable):

                async def wait(awaitable: Awaitable[Any] = result) -> Any:
                    return await awaitable

                result = asyncio.run(wait())
            if result is None:
                continue  # Produce acks=0
            encoded = result.encode(version)
            assert spec.response_class.decode(encoded, version) is not None, (key, version)


def test_metadata_hides_and_refuses_auto_creation(tmp_path: Path) -> None:
    from riverbed.broker.config import BrokerConfig
    from riverbed.protocol.messages import MetadataRequest, MetadataResponse

    class Topics(NoTopics):
        def get(self, name: str) -> Any:
            return object() if name in ("seen", "hidden") else None

    store = AclStore(tmp_path)
    d = Deps(store, Authorizer(store, super_users=["User:admin"]), Topics(), BrokerConfig())
    create_acls.handle(
        d,
        ctx(30, 3, "User:admin"),
        CreateAclsRequest(creations=[creation(op=8, name="seen"), creation(op=8, name="new")]),
    )
    answered: list[list[str | None]] = []

    def route(context: RequestContext, request: Any) -> Any:
        names = ["seen", "hidden"] if request.topics is None else [t.name for t in request.topics]
        answered.append(names)
        return MetadataResponse(
            brokers=[],
            topics=[MetadataResponse.MetadataResponseTopic(name=n, partitions=[]) for n in names],
        )

    guarded = authorization.authorize_routes(d, {3: route})[3]
    everything = guarded(ctx(3, 12, "User:alice"), MetadataRequest(topics=None))
    assert [t.name for t in everything.topics] == ["seen"]
    named = guarded(
        ctx(3, 12, "User:alice"),
        MetadataRequest(
            topics=[
                MetadataRequest.MetadataRequestTopic(name=n) for n in ("seen", "hidden", "new")
            ],
            allow_auto_topic_creation=True,
        ),
    )
    assert answered[-1] == ["seen"]  # "new" would be auto-created: alice lacks CREATE
    assert [(t.name, t.error_code) for t in named.topics] == [
        ("seen", 0),
        ("hidden", ErrorCode.TOPIC_AUTHORIZATION_FAILED),
        ("new", ErrorCode.TOPIC_AUTHORIZATION_FAILED),
    ]


def test_init_producer_id_idempotent_and_transactional(tmp_path: Path) -> None:
    from riverbed.protocol.messages import InitProducerIdRequest

    store = AclStore(tmp_path)
    d = Deps(store, Authorizer(store, super_users=["User:admin"]))
    guarded = authorization.authorize_routes(d, {22: lambda context, request: "ran"})[22]
    idempotent = InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1)
    transactional = InitProducerIdRequest(transactional_id="tx-1", transaction_timeout_ms=1)
    alice = ctx(22, 5, "User:alice")
    assert guarded(alice, idempotent).error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    txn_denied = guarded(alice, transactional)
    assert txn_denied.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    create_acls.handle(
        d,
        ctx(30, 3, "User:admin"),
        CreateAclsRequest(
            creations=[
                creation(op=4, name="any-topic"),  # WRITE on some topic: idempotence allowed
                CreateAclsRequest.AclCreation(
                    resource_type=5,
                    resource_name="tx-",
                    resource_pattern_type=4,
                    principal="User:alice",
                    host="*",
                    operation=4,
                    permission_type=3,
                ),
            ]
        ),
    )
    assert guarded(alice, idempotent) == "ran"
    assert guarded(alice, transactional) == "ran"
