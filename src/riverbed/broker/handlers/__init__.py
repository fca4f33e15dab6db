"""One adapter module per Kafka API: decode -> call the topic/log layer -> encode.

:data:`HANDLERS` maps each served API key to its handler, ``handle(deps, ctx, request)``:
``deps`` the narrow services it declares (a protocol of :mod:`.deps`), ``ctx`` the
:class:`~riverbed.broker.context.RequestContext` built by the connection; it returns a
response, None (no response) or an awaitable of either (see
:mod:`riverbed.broker.connection`).  :func:`bind_handlers` binds every handler to the
broker once, at construction, giving the connection's :data:`Route` table.
:data:`MIN_ACCEPTED_VERSIONS` lists APIs advertised from a lower version than they accept
(Produce: advertised from v0 for librdkafka, KAFKA-18659, but v0-2 are refused by closing
the connection, as Kafka 4 does).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    alter_client_quotas,
    alter_configs,
    alter_user_scram_credentials,
    api_versions,
    authorization,
    consumer_group_describe,
    consumer_group_heartbeat,
    create_acls,
    create_partitions,
    create_topics,
    delete_acls,
    delete_groups,
    delete_records,
    delete_topics,
    describe_acls,
    describe_client_quotas,
    describe_cluster,
    describe_configs,
    describe_groups,
    describe_producers,
    describe_transactions,
    describe_user_scram_credentials,
    end_txn,
    fetch,
    find_coordinator,
    heartbeat,
    init_producer_id,
    join_group,
    leave_group,
    list_groups,
    list_offsets,
    list_transactions,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    partition_reassignments,
    produce,
    sasl_authenticate,
    sasl_handshake,
    share_acknowledge,
    share_fetch,
    share_group_admin,
    share_group_describe,
    share_group_heartbeat,
    share_group_offsets,
    sync_group,
    throttling,
    txn_offset_commit,
)

if TYPE_CHECKING:
    from riverbed.broker.server import Broker

HandlerFn = Callable[[Any, RequestContext, Any], Any | Awaitable[Any]]
"""A handler before binding: ``(deps, ctx, request)``."""
Route = Callable[[RequestContext, Any], Any | Awaitable[Any]]
"""A handler bound to its dependencies: ``(ctx, request)``."""

GROUP_HANDLERS: Mapping[int, HandlerFn] = MappingProxyType(
    {
        find_coordinator.API_KEY: find_coordinator.handle,
        join_group.API_KEY: join_group.handle,
        sync_group.API_KEY: sync_group.handle,
        heartbeat.API_KEY: heartbeat.handle,
        leave_group.API_KEY: leave_group.handle,
        offset_commit.API_KEY: offset_commit.handle,
        offset_fetch.API_KEY: offset_fetch.handle,
        offset_delete.API_KEY: offset_delete.handle,
        list_groups.API_KEY: list_groups.handle,
        describe_groups.API_KEY: describe_groups.handle,
        delete_groups.API_KEY: delete_groups.handle,
        consumer_group_heartbeat.API_KEY: consumer_group_heartbeat.handle,
        consumer_group_describe.API_KEY: consumer_group_describe.handle,
    }
)
# -- end consumer groups --

HANDLERS: Mapping[int, HandlerFn] = MappingProxyType(
    {
        **GROUP_HANDLERS,
        produce.API_KEY: produce.handle,
        fetch.API_KEY: fetch.handle,
        list_offsets.API_KEY: list_offsets.handle,
        metadata.API_KEY: metadata.handle,
        api_versions.API_KEY: api_versions.handle,
        create_topics.API_KEY: create_topics.handle,
        delete_topics.API_KEY: delete_topics.handle,
        delete_records.API_KEY: delete_records.handle,
        init_producer_id.API_KEY: init_producer_id.handle,
        describe_configs.API_KEY: describe_configs.handle,
        alter_configs.ALTER_CONFIGS_KEY: alter_configs.handle_alter,
        alter_configs.INCREMENTAL_ALTER_CONFIGS_KEY: alter_configs.handle_incremental,
        create_partitions.API_KEY: create_partitions.handle,
        partition_reassignments.ALTER_KEY: partition_reassignments.handle_alter,
        partition_reassignments.LIST_KEY: partition_reassignments.handle_list,
        describe_cluster.API_KEY: describe_cluster.handle,
        # -- security (riverbed.broker.security); on SASL listeners the connection
        # answers SaslHandshake/SaslAuthenticate from its session instead --
        sasl_handshake.API_KEY: sasl_handshake.handle,
        sasl_authenticate.API_KEY: sasl_authenticate.handle,
        alter_user_scram_credentials.API_KEY: alter_user_scram_credentials.handle,
        describe_user_scram_credentials.API_KEY: describe_user_scram_credentials.handle,
        # -- client quotas (riverbed.broker.quotas; Produce/Fetch wrapped by .throttling) --
        describe_client_quotas.API_KEY: describe_client_quotas.handle,
        alter_client_quotas.API_KEY: alter_client_quotas.handle,
        # -- transactions (riverbed.broker.transactions) --
        add_offsets_to_txn.API_KEY: add_offsets_to_txn.handle,
        add_partitions_to_txn.API_KEY: add_partitions_to_txn.handle,
        describe_producers.API_KEY: describe_producers.handle,
        describe_transactions.API_KEY: describe_transactions.handle,
        end_txn.API_KEY: end_txn.handle,
        list_transactions.API_KEY: list_transactions.handle,
        txn_offset_commit.API_KEY: txn_offset_commit.handle,
        # -- ACLs (riverbed.broker.security.authorizer) --
        create_acls.API_KEY: create_acls.handle,
        describe_acls.API_KEY: describe_acls.handle,
        delete_acls.API_KEY: delete_acls.handle,
        # -- share groups (riverbed.broker.share_groups) --
        share_group_heartbeat.API_KEY: share_group_heartbeat.handle,
        share_group_describe.API_KEY: share_group_describe.handle,
        share_fetch.API_KEY: share_fetch.handle,
        share_acknowledge.API_KEY: share_acknowledge.handle,
        share_group_offsets.DESCRIBE_KEY: share_group_offsets.handle_describe,
        share_group_offsets.ALTER_KEY: share_group_offsets.handle_alter,
        share_group_offsets.DELETE_KEY: share_group_offsets.handle_delete,
    }
)

MIN_ACCEPTED_VERSIONS: Mapping[int, int] = MappingProxyType(
    {produce.API_KEY: produce.MIN_ACCEPTED_VERSION}
)


def bind_handlers(broker: Broker) -> dict[int, Route]:
    """Every handler bound to ``broker``, which satisfies each handler's deps protocol
    (mypy checks each binding: this is where the Broker meets the protocols).  The
    services behind the broker's properties exist once it has started; binding does not
    touch them."""
    routes: dict[int, Route] = {
        find_coordinator.API_KEY: partial(find_coordinator.handle, broker),
        join_group.API_KEY: partial(join_group.handle, broker),
        sync_group.API_KEY: partial(sync_group.handle, broker),
        heartbeat.API_KEY: partial(heartbeat.handle, broker),
        leave_group.API_KEY: partial(leave_group.handle, broker),
        offset_commit.API_KEY: partial(offset_commit.handle, broker),
        offset_fetch.API_KEY: partial(offset_fetch.handle, broker),
        offset_delete.API_KEY: partial(offset_delete.handle, broker),
        list_groups.API_KEY: partial(list_groups.handle, broker),
        describe_groups.API_KEY: partial(describe_groups.handle, broker),
        delete_groups.API_KEY: partial(delete_groups.handle, broker),
        consumer_group_heartbeat.API_KEY: partial(consumer_group_heartbeat.handle, broker),
        consumer_group_describe.API_KEY: partial(consumer_group_describe.handle, broker),
        produce.API_KEY: throttling.throttle_produce(broker, partial(produce.handle, broker)),
        fetch.API_KEY: throttling.throttle_fetch(broker, partial(fetch.handle, broker)),
        list_offsets.API_KEY: partial(list_offsets.handle, broker),
        metadata.API_KEY: partial(metadata.handle, broker),
        api_versions.API_KEY: partial(api_versions.handle, broker),
        create_topics.API_KEY: partial(create_topics.handle, broker),
        delete_topics.API_KEY: partial(delete_topics.handle, broker),
        delete_records.API_KEY: partial(delete_records.handle, broker),
        init_producer_id.API_KEY: partial(init_producer_id.handle, broker),
        describe_configs.API_KEY: partial(describe_configs.handle, broker),
        alter_configs.ALTER_CONFIGS_KEY: partial(alter_configs.handle_alter, broker),
        alter_configs.INCREMENTAL_ALTER_CONFIGS_KEY: partial(
            alter_configs.handle_incremental, broker
        ),
        create_partitions.API_KEY: partial(create_partitions.handle, broker),
        partition_reassignments.ALTER_KEY: partial(partition_reassignments.handle_alter, broker),
        partition_reassignments.LIST_KEY: partial(partition_reassignments.handle_list, broker),
        describe_cluster.API_KEY: partial(describe_cluster.handle, broker),
        sasl_handshake.API_KEY: partial(sasl_handshake.handle, broker),
        sasl_authenticate.API_KEY: partial(sasl_authenticate.handle, broker),
        alter_user_scram_credentials.API_KEY: partial(alter_user_scram_credentials.handle, broker),
        describe_user_scram_credentials.API_KEY: partial(
            describe_user_scram_credentials.handle, broker
        ),
        create_acls.API_KEY: partial(create_acls.handle, broker),
        describe_acls.API_KEY: partial(describe_acls.handle, broker),
        delete_acls.API_KEY: partial(delete_acls.handle, broker),
        describe_client_quotas.API_KEY: partial(describe_client_quotas.handle, broker),
        alter_client_quotas.API_KEY: partial(alter_client_quotas.handle, broker),
        add_offsets_to_txn.API_KEY: partial(add_offsets_to_txn.handle, broker),
        add_partitions_to_txn.API_KEY: partial(add_partitions_to_txn.handle, broker),
        describe_producers.API_KEY: partial(describe_producers.handle, broker),
        describe_transactions.API_KEY: partial(describe_transactions.handle, broker),
        end_txn.API_KEY: partial(end_txn.handle, broker),
        list_transactions.API_KEY: partial(list_transactions.handle, broker),
        txn_offset_commit.API_KEY: partial(txn_offset_commit.handle, broker),
        share_group_heartbeat.API_KEY: partial(share_group_heartbeat.handle, broker),
        share_group_describe.API_KEY: partial(share_group_describe.handle, broker),
        share_fetch.API_KEY: partial(share_fetch.handle, broker),
        share_acknowledge.API_KEY: partial(share_acknowledge.handle, broker),
        share_group_offsets.DESCRIBE_KEY: partial(share_group_offsets.handle_describe, broker),
        share_group_offsets.ALTER_KEY: partial(share_group_offsets.handle_alter, broker),
        share_group_offsets.DELETE_KEY: partial(share_group_offsets.handle_delete, broker),
    }
    share_group_admin.wrap_group_routes(broker, routes)  # share groups in the group APIs
    assert routes.keys() == HANDLERS.keys(), "bind_handlers is missing a served API"
    return authorization.authorize_routes(broker, routes)  # ACLs, when configured
