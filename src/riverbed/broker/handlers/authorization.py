"""ACL enforcement around the bound routes, with Kafka's per-API rules (``KafkaApis``).

:func:`authorize_routes` wraps every route listed in :data:`GATES` once, in
:func:`~riverbed.broker.handlers.bind_handlers`, so the API adapters stay as they are.
The wrapper reads ``deps.authorizer`` on each request: None (no ``authorizer.class.name``)
calls the route unchanged — one attribute test on the hot path.  With an authorizer a
*gate* either answers the whole request with Kafka's error (a group API without READ on
its group), or removes the items the principal may not touch from the request, calls the
route with the rest and adds those items back to its response with their error — as
``KafkaApis`` splits a request into authorized and unauthorized parts.

The rules (resource, operation -> error on denial):

=========================  ==========================================================
Produce                    transactional id WRITE (all partitions
                           TRANSACTIONAL_ID_AUTHORIZATION_FAILED); topic WRITE
Fetch                      topic READ
ListOffsets                topic DESCRIBE
Metadata                   topic DESCRIBE (unauthorized topics left out of an
                           all-topics answer); auto-creation needs CREATE on the
                           cluster or the topic
OffsetCommit               group READ, topic READ
OffsetFetch                group DESCRIBE, topic DESCRIBE (left out of all-topics)
FindCoordinator            group DESCRIBE / transactional id DESCRIBE
Join/Sync/Heartbeat/Leave  group READ;  ConsumerGroupHeartbeat: + topic DESCRIBE
DescribeGroups             group DESCRIBE;  ListGroups: cluster DESCRIBE or filtered
DeleteGroups, OffsetDelete group DELETE
CreateTopics               cluster CREATE or topic CREATE
DeleteTopics, DeleteRecords topic DELETE;  CreatePartitions: topic ALTER
Alter/ListPartitionReass.  cluster ALTER / DESCRIBE (every partition and the top level
                           CLUSTER_AUTHORIZATION_FAILED / the top level)
DescribeConfigs            topic / cluster DESCRIBE_CONFIGS;  (Incremental)AlterConfigs:
                           ALTER_CONFIGS
InitProducerId             transactional id WRITE; idempotent: cluster
                           IDEMPOTENT_WRITE or WRITE on some topic
EndTxn, AddOffsetsToTxn    transactional id WRITE (AddOffsetsToTxn: + group READ)
AddPartitionsToTxn         v0-3: transactional id WRITE, topic WRITE (the others
                           OPERATION_NOT_ATTEMPTED); v4+: cluster CLUSTER_ACTION
TxnOffsetCommit            transactional id WRITE, group READ, topic READ
DescribeTransactions       transactional id DESCRIBE; ListTransactions: filtered by it
DescribeProducers          topic READ;  ConsumerGroupDescribe: group DESCRIBE
DescribeCluster            cluster DESCRIBE;  SCRAM credentials: cluster
                           ALTER / DESCRIBE;  client quotas: cluster DESCRIBE_CONFIGS /
                           ALTER_CONFIGS
Share group APIs           group READ (DESCRIBE, DELETE), topic READ: the table in
                           :mod:`~riverbed.broker.handlers.share_authorization`
=========================  ==========================================================

The ACL APIs check their own (CreateAcls/DeleteAcls cluster ALTER, DescribeAcls cluster
DESCRIBE).  Authorized-operations bitfields a client asks for (Metadata topics and v8-10
cluster, DescribeCluster, DescribeGroups, ConsumerGroupDescribe) are the principal's: each
operation Kafka supports on the resource, asked of the authorizer
(:mod:`~riverbed.broker.handlers.authorized_operations`); a cluster the principal may not
DESCRIBE answers 0 in Metadata, as Kafka; denied topics and groups keep -2^31.  Topic ids
an older table does not know pass through (the route answers UNKNOWN_TOPIC_ID).
Event-loop only, like the routes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Protocol

from riverbed.broker.barrier import Barrier
from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.authorized_operations import authorized_operations
from riverbed.broker.handlers.deps import TopicNames
from riverbed.broker.handlers.share_authorization import SHARE_GATES
from riverbed.broker.security.authorizer import (
    CLUSTER_NAME,
    AclOperation,
    Authorizer,
    ResourceType,
)
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import (
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnResponse,
    AlterClientQuotasResponse,
    AlterConfigsResponse,
    AlterPartitionReassignmentsResponse,
    AlterUserScramCredentialsResponse,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatResponse,
    CreatePartitionsResponse,
    CreateTopicsResponse,
    DeleteGroupsResponse,
    DeleteRecordsResponse,
    DeleteTopicsResponse,
    DescribeClientQuotasResponse,
    DescribeClusterResponse,
    DescribeConfigsResponse,
    DescribeGroupsResponse,
    DescribeProducersResponse,
    DescribeTransactionsResponse,
    DescribeUserScramCredentialsResponse,
    EndTxnResponse,
    FetchResponse,
    FindCoordinatorResponse,
    HeartbeatResponse,
    IncrementalAlterConfigsResponse,
    InitProducerIdResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    ListOffsetsResponse,
    ListPartitionReassignmentsResponse,
    MetadataResponse,
    OffsetCommitResponse,
    OffsetDeleteResponse,
    OffsetFetchResponse,
    ProduceResponse,
    SyncGroupResponse,
    TxnOffsetCommitResponse,
)

Route = Any  # Callable[[RequestContext, Any], Any | Awaitable[Any]]; see handlers.Route
Op = AclOperation
TOPIC_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
GROUP_DENIED = ErrorCode.GROUP_AUTHORIZATION_FAILED
CLUSTER_DENIED = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
TXN_DENIED = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
_TOPIC_IDS = {0: 13, 1: 13, 8: 10, 9: 10, 20: 6}  # API key -> first version naming topics by id


class AutoCreateSetting(Protocol):
    @property
    def auto_create_topics_enable(self) -> bool: ...


class AuthorizationDeps(Protocol):
    @property
    def authorizer(self) -> Authorizer | None: ...

    @property
    def topics(self) -> TopicNames: ...

    @property
    def config(self) -> AutoCreateSetting: ...


class Check:
    """One request's questions to the authorizer (principal and host from ``ctx``)."""

    __slots__ = ("_authorizer", "ctx", "deps")

    def __init__(self, authorizer: Authorizer, ctx: RequestContext, deps: AuthorizationDeps):
        self._authorizer = authorizer
        self.ctx = ctx
        self.deps = deps

    def __call__(self, op: AclOperation, rtype: ResourceType, name: str) -> bool:
        return self._authorizer.authorize(
            self.ctx.principal, self.ctx.client_address, op, rtype, name
        )

    def topic(self, op: AclOperation, name: str) -> bool:
        return self(op, ResourceType.TOPIC, name)

    def group(self, op: AclOperation, name: str) -> bool:
        return self(op, ResourceType.GROUP, name)

    def cluster(self, op: AclOperation) -> bool:
        return self(op, ResourceType.CLUSTER, CLUSTER_NAME)

    def txn(self, op: AclOperation, name: str) -> bool:
        return self(op, ResourceType.TRANSACTIONAL_ID, name)

    def any_topic(self, op: AclOperation) -> bool:
        return self._authorizer.authorize_any(
            self.ctx.principal, self.ctx.client_address, op, ResourceType.TOPIC
        )

    def topic_name(self, name: str | None, topic_id: Any) -> str | None:
        """The topic's name (from its id at id-carrying versions); None: unknown id."""
        if self.ctx.api_version >= _TOPIC_IDS.get(self.ctx.header.api_key, 1 << 15):
            found = self.deps.topics.by_id(topic_id)
            return found.name if found is not None else None
        return name or ""

    def create(self, name: str) -> bool:
        return self.cluster(Op.CREATE) or self.topic(Op.CREATE, name)

    def operations(self, rtype: ResourceType, name: str) -> int:
        """The authorized-operations bitfield of one resource for this principal."""
        return authorized_operations(rtype, lambda op: self(op, rtype, name))


Gate = Callable[[Check, Any, Route], Any]


def authorize_routes(deps: AuthorizationDeps, routes: dict[int, Route]) -> dict[int, Route]:
    """``routes`` with every API of :data:`GATES` guarded (see the module doc)."""
    return {
        key: _guard(deps, GATES[key], route) if key in GATES else route
        for key, route in routes.items()
    }


def _guard(deps: AuthorizationDeps, gate: Gate, route: Route) -> Route:
    def guarded(ctx: RequestContext, request: Any) -> Any:
        authorizer = deps.authorizer
        if authorizer is None:
            return route(ctx, request)
        return gate(Check(authorizer, ctx, deps), request, route)

    return guarded


def _then(result: Any, finish: Callable[[Any], Any]) -> Any:
    """``finish`` applied to a route's answer, whether immediate, awaitable or a Barrier."""
    if isinstance(result, Barrier):
        return Barrier(_later(result.awaitable, finish))
    if isinstance(result, Awaitable):
        return _later(result, finish)
    return finish(result)


def _later(awaitable: Awaitable[Any], finish: Callable[[Any], Any]) -> asyncio.Future[Any]:
    async def wait() -> Any:
        return finish(await awaitable)

    return asyncio.ensure_future(wait())


def _split(items: Iterable[Any], allowed: Callable[[Any], bool]) -> tuple[list[Any], list[Any]]:
    ok: list[Any] = []
    denied: list[Any] = []
    for item in items:
        (ok if allowed(item) else denied).append(item)
    return ok, denied


def _extend(attr: str, extra: list[Any]) -> Callable[[Any], Any]:
    def finish(response: Any) -> Any:
        if response is not None and extra:
            getattr(response, attr).extend(extra)
        return response

    return finish


# -- produce, fetch, offsets, metadata --------------------------------------------------
def _produce(c: Check, request: Any, route: Route) -> Any:
    txn = request.transactional_id
    code = TOPIC_DENIED
    ok: list[Any]
    denied: list[Any]
    if txn is not None and not c.txn(Op.WRITE, txn):
        ok, denied, code = [], list(request.topic_data), TXN_DENIED
    else:
        ok, denied = _split(
            request.topic_data, lambda t: _allowed_topic(c, Op.WRITE, t.name, t.topic_id)
        )
    extra = [
        ProduceResponse.TopicProduceResponse(
            name=t.name,
            topic_id=t.topic_id,
            partition_responses=[
                ProduceResponse.PartitionProduceResponse(
                    index=p.index,
                    error_code=code,
                    base_offset=-1,
                    log_append_time_ms=-1,
                    log_start_offset=-1,
                    record_errors=[],
                    error_message=None,
                )
                for p in t.partition_data
            ],
        )
        for t in denied
    ]
    if code is TXN_DENIED:
        return None if request.acks == 0 else ProduceResponse(responses=extra, throttle_time_ms=0)
    request.topic_data = ok
    return _then(route(c.ctx, request), _extend("responses", extra))


def _allowed_topic(c: Check, op: AclOperation, name: str | None, topic_id: Any) -> bool:
    resolved = c.topic_name(name, topic_id)
    return resolved is None or c.topic(op, resolved)


def _fetch(c: Check, request: Any, route: Route) -> Any:
    ok, denied = _split(request.topics, lambda t: _allowed_topic(c, Op.READ, t.topic, t.topic_id))
    request.topics = ok
    extra = [
        FetchResponse.FetchableTopicResponse(
            topic=t.topic,
            topic_id=t.topic_id,
            partitions=[
                FetchResponse.PartitionData(
                    partition_index=p.partition,
                    error_code=TOPIC_DENIED,
                    high_watermark=-1,
                    last_stable_offset=-1,
                    log_start_offset=-1,
                    aborted_transactions=None,
                    records=None,
                )
                for p in t.partitions
            ],
        )
        for t in denied
    ]
    return _then(route(c.ctx, request), _extend("responses", extra))


def _list_offsets(c: Check, request: Any, route: Route) -> Any:
    ok, denied = _split(request.topics, lambda t: c.topic(Op.DESCRIBE, t.name))
    request.topics = ok
    extra = [
        ListOffsetsResponse.ListOffsetsTopicResponse(
            name=t.name,
            partitions=[
                ListOffsetsResponse.ListOffsetsPartitionResponse(
                    partition_index=p.partition_index,
                    error_code=TOPIC_DENIED,
                    old_style_offsets=[],
                    timestamp=-1,
                    offset=-1,
                    leader_epoch=-1,
                )
                for p in t.partitions
            ],
        )
        for t in denied
    ]
    return _then(route(c.ctx, request), _extend("topics", extra))


def _metadata(c: Check, request: Any, route: Route) -> Any:
    if request.topics is None or (c.ctx.api_version == 0 and not request.topics):

        def visible(response: Any) -> Any:
            response.topics = [t for t in response.topics if c.topic(Op.DESCRIBE, t.name)]
            return _metadata_operations(c, request, response)

        return _then(route(c.ctx, request), visible)
    auto_create = request.allow_auto_topic_creation and c.deps.config.auto_create_topics_enable
    allowed: set[str] = set()
    denied: list[str] = []
    for topic in request.topics:
        name = topic.name
        if name is None:
            found = c.deps.topics.by_id(topic.topic_id)
            if found is None:
                continue
            name = found.name
        creates = auto_create and c.deps.topics.get(name) is None
        if c.topic(Op.DESCRIBE, name) and (not creates or c.create(name)):
            allowed.add(name)
        else:
            denied.append(name)

    def merge(response: Any) -> Any:
        response.topics = [t for t in response.topics if t.name in allowed or t.name is None]
        _metadata_operations(c, request, response)
        response.topics.extend(
            MetadataResponse.MetadataResponseTopic(
                error_code=TOPIC_DENIED, name=name, is_internal=False, partitions=[]
            )
            for name in denied
        )
        return response

    request.topics = [t for t in request.topics if t.name is None or t.name in allowed]
    if not request.topics and c.ctx.api_version == 0:
        return merge(MetadataResponse(brokers=[], topics=[], cluster_id=None, controller_id=-1))
    return _then(route(c.ctx, request), merge)


def _metadata_operations(c: Check, request: Any, response: Any) -> Any:
    """The principal's authorized operations on the topics described (before the denied
    ones are added) and, Metadata v8-10, on the cluster (0 without cluster DESCRIBE)."""
    if request.include_topic_authorized_operations:
        for topic in response.topics:
            if topic.name is not None:
                topic.topic_authorized_operations = c.operations(ResourceType.TOPIC, topic.name)
    if request.include_cluster_authorized_operations:
        response.cluster_authorized_operations = (
            c.operations(ResourceType.CLUSTER, CLUSTER_NAME) if c.cluster(Op.DESCRIBE) else 0
        )
    return response


def _group_operations(c: Check, asked: bool, attr: str) -> Callable[[Any], Any]:
    """Finish: the principal's operations on each group described without error."""

    def finish(response: Any) -> Any:
        if asked and response is not None:
            for group in getattr(response, attr):
                if group.error_code == ErrorCode.NONE:
                    group.authorized_operations = c.operations(ResourceType.GROUP, group.group_id)
        return response

    return finish


def _chain(*finishes: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def finish(response: Any) -> Any:
        for f in finishes:
            response = f(response)
        return response

    return finish


# -- topic administration ---------------------------------------------------------------
def _create_topics(c: Check, request: Any, route: Route) -> Any:
    ok, denied = _split(request.topics, lambda t: c.create(t.name))
    request.topics = ok
    extra = [
        CreateTopicsResponse.CreatableTopicResult(
            name=t.name,
            error_code=TOPIC_DENIED,
            error_message=None,
            num_partitions=-1,
            replication_factor=-1,
            configs=[],
        )
        for t in denied
    ]
    return _then(route(c.ctx, request), _extend("topics", extra))


def _delete_topics(c: Check, request: Any, route: Route) -> Any:
    if c.ctx.api_version < _TOPIC_IDS[20]:
        ok, denied = _split(request.topic_names, lambda n: c.topic(Op.DELETE, n))
        request.topic_names = ok
        extra = [
            DeleteTopicsResponse.DeletableTopicResult(
                name=n, error_code=TOPIC_DENIED, error_message=None
            )
            for n in denied
        ]
    else:
        ok, denied = _split(request.topics, lambda t: _allowed_by_name_or_id(c, Op.DELETE, t))
        request.topics = ok
        extra = [
            DeleteTopicsResponse.DeletableTopicResult(
                name=t.name,
                topic_id=t.topic_id,
                error_code=TOPIC_DENIED,
                error_message=None,
            )
            for t in denied
        ]
    return _then(route(c.ctx, request), _extend("responses", extra))


def _allowed_by_name_or_id(c: Check, op: AclOperation, topic: Any) -> bool:
    if topic.name is not None:
        return c.topic(op, topic.name)
    found = c.deps.topics.by_id(topic.topic_id)
    return found is None or c.topic(op, found.name)


def _delete_records(c: Check, request: Any, route: Route) -> Any:
    ok, denied = _split(request.topics, lambda t: c.topic(Op.DELETE, t.name))
    request.topics = ok
    extra = [
        DeleteRecordsResponse.DeleteRecordsTopicResult(
            name=t.name,
            partitions=[
                DeleteRecordsResponse.DeleteRecordsPartitionResult(
                    partition_index=p.partition_index,
                    low_watermark=-1,
                    error_code=TOPIC_DENIED,
                )
                for p in t.partitions
            ],
        )
        for t in denied
    ]
    return _then(route(c.ctx, request), _extend("topics", extra))


def _create_partitions(c: Check, request: Any, route: Route) -> Any:
    ok, denied = _split(request.topics, lambda t: c.topic(Op.ALTER, t.name))
    request.topics = ok
    extra = [
        CreatePartitionsResponse.CreatePartitionsTopicResult(
            name=t.name, error_code=TOPIC_DENIED, error_message=None
        )
        for t in denied
    ]
    return _then(route(c.ctx, request), _extend("results", extra))


_CONFIG_TOPIC = 2


def _config_denial(c: Check, op: AclOperation, resource: Any) -> ErrorCode | None:
    if resource.resource_type == _CONFIG_TOPIC:
        return None if c.topic(op, resource.resource_name) else TOPIC_DENIED
    return None if c.cluster(op) else CLUSTER_DENIED


def _describe_configs(c: Check, request: Any, route: Route) -> Any:
    codes = {id(r): _config_denial(c, Op.DESCRIBE_CONFIGS, r) for r in request.resources}
    denied: list[Any] = [r for r in request.resources if codes[id(r)] is not None]
    request.resources = [r for r in request.resources if codes[id(r)] is None]
    extra = [
        DescribeConfigsResponse.DescribeConfigsResult(
            error_code=codes[id(r)] or TOPIC_DENIED,
            error_message=None,
            resource_type=r.resource_type,
            resource_name=r.resource_name,
            configs=[],
        )
        for r in denied
    ]
    return _then(route(c.ctx, request), _extend("results", extra))


def _alter_configs_gate(result_cls: Any) -> Gate:
    def gate(c: Check, request: Any, route: Route) -> Any:
        codes = {id(r): _config_denial(c, Op.ALTER_CONFIGS, r) for r in request.resources}
        denied = [r for r in request.resources if codes[id(r)] is not None]
        request.resources = [r for r in request.resources if codes[id(r)] is None]
        extra = [
            result_cls(
                error_code=codes[id(r)] or TOPIC_DENIED,
                error_message=None,
                resource_type=r.resource_type,
                resource_name=r.resource_name,
            )
            for r in denied
        ]
        return _then(route(c.ctx, request), _extend("responses", extra))

    return gate


# -- consumer groups --------------------------------------------------------------------
def _group_gate(op: AclOperation, denial: Callable[[Any, int], Any]) -> Gate:
    """Answer ``denial(request, version)`` unless the request's ``group_id`` allows
    ``op``."""

    def gate(c: Check, request: Any, route: Route) -> Any:
        if not c.group(op, request.group_id):
            return denial(request, c.ctx.api_version)
        return route(c.ctx, request)

    return gate


def _offset_commit(c: Check, request: Any, route: Route) -> Any:
    group_ok = c.group(Op.READ, request.group_id)
    ok, denied = _split(
        request.topics, lambda t: group_ok and _allowed_topic(c, Op.READ, t.name, t.topic_id)
    )
    code = TOPIC_DENIED if group_ok else GROUP_DENIED
    extra = [
        OffsetCommitResponse.OffsetCommitResponseTopic(
            name=t.name,
            topic_id=t.topic_id,
            partitions=[
                OffsetCommitResponse.OffsetCommitResponsePartition(
                    partition_index=p.partition_index,
                    error_code=code,
                )
                for p in t.partitions
            ],
        )
        for t in denied
    ]
    if not group_ok:
        return OffsetCommitResponse(throttle_time_ms=0, topics=extra)
    request.topics = ok
    return _then(route(c.ctx, request), _extend("topics", extra))


def _offset_fetch(c: Check, request: Any, route: Route) -> Any:
    if c.ctx.api_version < 8:
        if not c.group(Op.DESCRIBE, request.group_id):
            return OffsetFetchResponse(throttle_time_ms=0, topics=[], error_code=GROUP_DENIED)
        return _then(route(c.ctx, request), _offset_fetch_finish(c, request))
    ok, denied = _split(request.groups, lambda g: c.group(Op.DESCRIBE, g.group_id))
    request.groups = ok
    named = {g.group_id: g.topics for g in ok}

    def finish(response: Any) -> Any:
        for group in response.groups:
            _hide_topics(c, group.topics, named.get(group.group_id))
        response.groups.extend(
            OffsetFetchResponse.OffsetFetchResponseGroup(
                group_id=g.group_id, topics=[], error_code=GROUP_DENIED
            )
            for g in denied
        )
        return response

    return _then(route(c.ctx, request), finish)


def _hide_topics(c: Check, topics: list[Any], requested: list[Any] | None) -> None:
    """OffsetFetch: an all-topics answer leaves unauthorized topics out; a named one
    answers them TOPIC_AUTHORIZATION_FAILED."""
    for topic in list(topics):
        name = topic.name or c.topic_name(None, getattr(topic, "topic_id", None))
        if name is None or c.topic(Op.DESCRIBE, name):
            continue  # an unknown topic id is the route's to answer
        if requested is None:
            topics.remove(topic)
            continue
        for partition in topic.partitions:
            partition.error_code = TOPIC_DENIED
            partition.committed_offset = -1


def _offset_fetch_finish(c: Check, request: Any) -> Callable[[Any], Any]:
    def finish(response: Any) -> Any:
        _hide_topics(c, response.topics, request.topics)
        return response

    return finish


def _describe_groups(c: Check, request: Any, route: Route) -> Any:
    ok, denied = _split(request.groups, lambda g: c.group(Op.DESCRIBE, g))
    request.groups = ok
    extra = [
        DescribeGroupsResponse.DescribedGroup(
            error_code=GROUP_DENIED,
            error_message=None,
            group_id=g,
            group_state="",
            protocol_type="",
            protocol_data="",
            members=[],
        )
        for g in denied
    ]
    operations = _group_operations(c, request.include_authorized_operations, "groups")
    return _then(route(c.ctx, request), _chain(operations, _extend("groups", extra)))


def _list_groups(c: Check, request: Any, route: Route) -> Any:
    if c.cluster(Op.DESCRIBE):
        return route(c.ctx, request)

    def visible(response: Any) -> Any:
        response.groups = [g for g in response.groups if c.group(Op.DESCRIBE, g.group_id)]
        return response

    return _then(route(c.ctx, request), visible)


def _delete_groups(c: Check, request: Any, route: Route) -> Any:
    ok, denied = _split(request.groups_names, lambda g: c.group(Op.DELETE, g))
    request.groups_names = ok
    extra = [
        DeleteGroupsResponse.DeletableGroupResult(
            group_id=g, error_code=GROUP_DENIED, error_message=None
        )
        for g in denied
    ]
    return _then(route(c.ctx, request), _extend("results", extra))


def _consumer_group_heartbeat(c: Check, request: Any, route: Route) -> Any:
    code: ErrorCode | None = None
    if not c.group(Op.READ, request.group_id):
        code = GROUP_DENIED
    elif any(not c.topic(Op.DESCRIBE, t) for t in request.subscribed_topic_names or ()):
        code = TOPIC_DENIED
    if code is None:
        return route(c.ctx, request)
    return ConsumerGroupHeartbeatResponse(
        throttle_time_ms=0,
        error_code=code,
        error_message=None,
        member_id=None,
        member_epoch=0,
        heartbeat_interval_ms=0,
        assignment=None,
    )


def _find_coordinator(c: Check, request: Any, route: Route) -> Any:
    def allowed(key: str) -> bool:
        if request.key_type == 1:
            return c.txn(Op.DESCRIBE, key)
        return c.group(Op.DESCRIBE, key)

    code = TXN_DENIED if request.key_type == 1 else GROUP_DENIED
    if c.ctx.api_version < 4:
        if allowed(request.key):
            return route(c.ctx, request)
        return FindCoordinatorResponse(
            throttle_time_ms=0, error_code=code, error_message=None, node_id=-1, host="", port=-1
        )
    ok, denied = _split(request.coordinator_keys, allowed)
    request.coordinator_keys = ok
    extra = [
        FindCoordinatorResponse.Coordinator(
            key=k, node_id=-1, host="", port=-1, error_code=code, error_message=None
        )
        for k in denied
    ]
    return _then(route(c.ctx, request), _extend("coordinators", extra))


# -- producers, transactions, cluster ----------------------------------------------------
def _init_producer_id(c: Check, request: Any, route: Route) -> Any:
    txn = request.transactional_id
    if txn is not None:
        code = None if c.txn(Op.WRITE, txn) else TXN_DENIED
    else:
        allowed = c.cluster(Op.IDEMPOTENT_WRITE) or c.any_topic(Op.WRITE)
        code = None if allowed else CLUSTER_DENIED
    if code is None:
        return route(c.ctx, request)
    return InitProducerIdResponse(
        throttle_time_ms=0, error_code=code, producer_id=-1, producer_epoch=-1
    )


def _end_txn(c: Check, request: Any, route: Route) -> Any:
    if c.txn(Op.WRITE, request.transactional_id):
        return route(c.ctx, request)
    return EndTxnResponse(throttle_time_ms=0, error_code=TXN_DENIED)


def _add_offsets_to_txn(c: Check, request: Any, route: Route) -> Any:
    if not c.txn(Op.WRITE, request.transactional_id):
        return AddOffsetsToTxnResponse(throttle_time_ms=0, error_code=TXN_DENIED)
    if not c.group(Op.READ, request.group_id):
        return AddOffsetsToTxnResponse(throttle_time_ms=0, error_code=GROUP_DENIED)
    return route(c.ctx, request)


def _add_partitions_to_txn(c: Check, request: Any, route: Route) -> Any:
    if c.ctx.api_version >= 4:  # broker-to-broker verification: CLUSTER_ACTION
        if c.cluster(Op.CLUSTER_ACTION):
            return route(c.ctx, request)
        return AddPartitionsToTxnResponse(
            throttle_time_ms=0, error_code=CLUSTER_DENIED, results_by_transaction=[]
        )
    topics = request.v3_and_below_topics
    if not c.txn(Op.WRITE, request.v3_and_below_transactional_id):
        codes = {t.name: TXN_DENIED for t in topics}
    else:
        codes = {t.name: TOPIC_DENIED for t in topics if not c.topic(Op.WRITE, t.name)}
        if not codes:
            return route(c.ctx, request)
    not_attempted = ErrorCode.OPERATION_NOT_ATTEMPTED
    return AddPartitionsToTxnResponse(
        throttle_time_ms=0,
        results_by_topic_v3_and_below=[
            AddPartitionsToTxnResponse.AddPartitionsToTxnTopicResult(
                name=t.name,
                results_by_partition=[
                    AddPartitionsToTxnResponse.AddPartitionsToTxnPartitionResult(
                        partition_index=p, partition_error_code=codes.get(t.name, not_attempted)
                    )
                    for p in t.partitions
                ],
            )
            for t in topics
        ],
    )


def _txn_offset_commit(c: Check, request: Any, route: Route) -> Any:
    code: ErrorCode | None = None
    if not c.txn(Op.WRITE, request.transactional_id):
        code = TXN_DENIED
    elif not c.group(Op.READ, request.group_id):
        code = GROUP_DENIED
    ok, denied = _split(request.topics, lambda t: code is None and c.topic(Op.READ, t.name))
    extra = [
        TxnOffsetCommitResponse.TxnOffsetCommitResponseTopic(
            name=t.name,
            partitions=[
                TxnOffsetCommitResponse.TxnOffsetCommitResponsePartition(
                    partition_index=p.partition_index, error_code=code or TOPIC_DENIED
                )
                for p in t.partitions
            ],
        )
        for t in denied
    ]
    if code is not None:
        return TxnOffsetCommitResponse(throttle_time_ms=0, topics=extra)
    request.topics = ok
    return _then(route(c.ctx, request), _extend("topics", extra))


def _describe_transactions(c: Check, request: Any, route: Route) -> Any:
    ok, denied = _split(request.transactional_ids, lambda x: c.txn(Op.DESCRIBE, x))
    request.transactional_ids = ok
    extra = [
        DescribeTransactionsResponse.TransactionState(
            error_code=TXN_DENIED,
            transactional_id=x,
            transaction_state="",
            transaction_timeout_ms=0,
            transaction_start_time_ms=-1,
            producer_id=-1,
            producer_epoch=-1,
            topics=[],
        )
        for x in denied
    ]
    return _then(route(c.ctx, request), _extend("transaction_states", extra))


def _list_transactions(c: Check, request: Any, route: Route) -> Any:
    def visible(response: Any) -> Any:
        response.transaction_states = [
            t for t in response.transaction_states if c.txn(Op.DESCRIBE, t.transactional_id)
        ]
        return response

    return _then(route(c.ctx, request), visible)


def _describe_producers(c: Check, request: Any, route: Route) -> Any:
    ok, denied = _split(request.topics, lambda t: c.topic(Op.READ, t.name))
    request.topics = ok
    extra = [
        DescribeProducersResponse.TopicResponse(
            name=t.name,
            partitions=[
                DescribeProducersResponse.PartitionResponse(
                    partition_index=p,
                    error_code=TOPIC_DENIED,
                    error_message=None,
                    active_producers=[],
                )
                for p in t.partition_indexes
            ],
        )
        for t in denied
    ]
    return _then(route(c.ctx, request), _extend("topics", extra))


def _consumer_group_describe(c: Check, request: Any, route: Route) -> Any:
    ok, denied = _split(request.group_ids, lambda g: c.group(Op.DESCRIBE, g))
    request.group_ids = ok
    extra = [
        ConsumerGroupDescribeResponse.DescribedGroup(
            error_code=GROUP_DENIED,
            error_message=None,
            group_id=g,
            group_state="",
            group_epoch=-1,
            assignment_epoch=-1,
            assignor_name="",
            members=[],
        )
        for g in denied
    ]
    operations = _group_operations(c, request.include_authorized_operations, "groups")
    return _then(route(c.ctx, request), _chain(operations, _extend("groups", extra)))


def _describe_client_quotas(c: Check, request: Any, route: Route) -> Any:
    if c.cluster(Op.DESCRIBE_CONFIGS):
        return route(c.ctx, request)
    return DescribeClientQuotasResponse(
        throttle_time_ms=0, error_code=CLUSTER_DENIED, error_message=None, entries=None
    )


def _alter_client_quotas(c: Check, request: Any, route: Route) -> Any:
    if c.cluster(Op.ALTER_CONFIGS):
        return route(c.ctx, request)
    entity = AlterClientQuotasResponse.EntityData
    return AlterClientQuotasResponse(
        throttle_time_ms=0,
        entries=[
            AlterClientQuotasResponse.EntryData(
                error_code=CLUSTER_DENIED,
                error_message=None,
                entity=[
                    entity(entity_type=e.entity_type, entity_name=e.entity_name)
                    for e in entry.entity
                ],
            )
            for entry in request.entries
        ],
    )


def _describe_cluster(c: Check, request: Any, route: Route) -> Any:
    if c.cluster(Op.DESCRIBE):
        if not request.include_cluster_authorized_operations:
            return route(c.ctx, request)

        def operations(response: Any) -> Any:
            response.cluster_authorized_operations = c.operations(
                ResourceType.CLUSTER, CLUSTER_NAME
            )
            return response

        return _then(route(c.ctx, request), operations)
    return DescribeClusterResponse(
        throttle_time_ms=0,
        error_code=CLUSTER_DENIED,
        error_message=None,
        cluster_id="",
        controller_id=-1,
        brokers=[],
    )


def _describe_scram(c: Check, request: Any, route: Route) -> Any:
    if c.cluster(Op.DESCRIBE):
        return route(c.ctx, request)
    return DescribeUserScramCredentialsResponse(
        throttle_time_ms=0, error_code=CLUSTER_DENIED, error_message=None, results=[]
    )


def _alter_scram(c: Check, request: Any, route: Route) -> Any:
    if c.cluster(Op.ALTER):
        return route(c.ctx, request)
    users = dict.fromkeys(
        [d.name for d in request.deletions] + [u.name for u in request.upsertions]
    )
    return AlterUserScramCredentialsResponse(
        throttle_time_ms=0,
        results=[
            AlterUserScramCredentialsResponse.AlterUserScramCredentialsResult(
                user=u, error_code=CLUSTER_DENIED, error_message=None
            )
            for u in users
        ],
    )


def _alter_reassignments(c: Check, request: Any, route: Route) -> Any:
    if c.cluster(Op.ALTER):
        return route(c.ctx, request)
    answer = AlterPartitionReassignmentsResponse
    return answer(
        throttle_time_ms=0,
        allow_replication_factor_change=request.allow_replication_factor_change,
        error_code=CLUSTER_DENIED,
        error_message=None,
        responses=[
            answer.ReassignableTopicResponse(
                name=t.name,
                partitions=[
                    answer.ReassignablePartitionResponse(
                        partition_index=p.partition_index,
                        error_code=CLUSTER_DENIED,
                        error_message=None,
                    )
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ],
    )


def _list_reassignments(c: Check, request: Any, route: Route) -> Any:
    if c.cluster(Op.DESCRIBE):
        return route(c.ctx, request)
    return ListPartitionReassignmentsResponse(
        throttle_time_ms=0, error_code=CLUSTER_DENIED, error_message=None, topics=[]
    )


GATES: dict[int, Gate] = {
    0: _produce,
    1: _fetch,
    2: _list_offsets,
    3: _metadata,
    8: _offset_commit,
    9: _offset_fetch,
    10: _find_coordinator,
    11: _group_gate(
        Op.READ,
        lambda r, v: JoinGroupResponse(
            throttle_time_ms=0,
            error_code=GROUP_DENIED,
            generation_id=-1,
            protocol_type=None,
            protocol_name=None if v >= 7 else "",
            leader="",
            skip_assignment=False,
            member_id=r.member_id,
            members=[],
        ),
    ),
    12: _group_gate(
        Op.READ, lambda r, v: HeartbeatResponse(throttle_time_ms=0, error_code=GROUP_DENIED)
    ),
    13: _group_gate(
        Op.READ,
        lambda r, v: LeaveGroupResponse(throttle_time_ms=0, error_code=GROUP_DENIED, members=[]),
    ),
    14: _group_gate(
        Op.READ,
        lambda r, v: SyncGroupResponse(
            throttle_time_ms=0,
            error_code=GROUP_DENIED,
            protocol_type=None,
            protocol_name=None,
            assignment=b"",
        ),
    ),
    15: _describe_groups,
    16: _list_groups,
    19: _create_topics,
    20: _delete_topics,
    21: _delete_records,
    22: _init_producer_id,
    24: _add_partitions_to_txn,
    25: _add_offsets_to_txn,
    26: _end_txn,
    28: _txn_offset_commit,
    32: _describe_configs,
    33: _alter_configs_gate(AlterConfigsResponse.AlterConfigsResourceResponse),
    37: _create_partitions,
    42: _delete_groups,
    44: _alter_configs_gate(IncrementalAlterConfigsResponse.AlterConfigsResourceResponse),
    45: _alter_reassignments,
    46: _list_reassignments,
    47: _group_gate(
        Op.DELETE,
        lambda r, v: OffsetDeleteResponse(error_code=GROUP_DENIED, throttle_time_ms=0, topics=[]),
    ),
    48: _describe_client_quotas,
    49: _alter_client_quotas,
    50: _describe_scram,
    51: _alter_scram,
    60: _describe_cluster,
    61: _describe_producers,
    65: _describe_transactions,
    66: _list_transactions,
    68: _consumer_group_heartbeat,
    69: _consumer_group_describe,
    **SHARE_GATES,  # share groups (riverbed.broker.handlers.share_authorization)
}
"""API key -> its gate."""
