"""One adapter module per Kafka API: decode -> call the topic/log layer -> encode.

:data:`HANDLERS` maps each served API key to its handler, ``(broker, header, request)``
returning a response, None (no response) or an awaitable of either (see
:mod:`riverbed.broker.connection`).  :data:`MIN_ACCEPTED_VERSIONS` lists APIs advertised
from a lower version than they accept (Produce: advertised from v0 for librdkafka,
KAFKA-18659, but v0-2 are refused by closing the connection, as Kafka 4 does).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from types import MappingProxyType
from typing import Any

from riverbed.broker.handlers import (
    alter_configs,
    api_versions,
    consumer_group_describe,
    consumer_group_heartbeat,
    create_partitions,
    create_topics,
    delete_groups,
    delete_records,
    delete_topics,
    describe_cluster,
    describe_configs,
    describe_groups,
    fetch,
    find_coordinator,
    heartbeat,
    init_producer_id,
    join_group,
    leave_group,
    list_groups,
    list_offsets,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    produce,
    sync_group,
)

HandlerFn = Callable[[Any, Any, Any], Any | Awaitable[Any]]

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
        describe_cluster.API_KEY: describe_cluster.handle,
    }
)

MIN_ACCEPTED_VERSIONS: Mapping[int, int] = MappingProxyType(
    {produce.API_KEY: produce.MIN_ACCEPTED_VERSION}
)
