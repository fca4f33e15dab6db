"""DescribeConfigs (key 32): topic and broker configs with Kafka's sources and synonyms.

Resource types: 2 (TOPIC; unknown topic is UNKNOWN_TOPIC_OR_PARTITION) and 4 (BROKER;
name ``""`` or this node's id).  ``configuration_keys`` null means all; synonyms only when
``include_synonyms``.  See :mod:`riverbed.broker.topic_configs` for the sources.
"""

from __future__ import annotations

from riverbed.broker.context import RequestContext
from riverbed.broker.topic_configs import (
    ConfigEntry,
    ConfigView,
    describe_broker_configs,
    describe_topic_configs,
)
from riverbed.errors import (
    ProtocolError,
    RiverbedError,
    UnknownTopicOrPartitionError,
    error_code_for,
)
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import DescribeConfigsRequest, DescribeConfigsResponse

API_KEY = 32
TOPIC = 2
BROKER = 4

Result = DescribeConfigsResponse.DescribeConfigsResult
Entry = DescribeConfigsResponse.DescribeConfigsResourceResult
Synonym = DescribeConfigsResponse.DescribeConfigsSynonym


def resolve(deps: ConfigView, resource_type: int, resource_name: str) -> list[ConfigEntry]:
    """The entries of a TOPIC or BROKER resource (raises per Kafka's error codes)."""
    if resource_type == TOPIC:
        topic = deps.topics.get(resource_name)
        if topic is None:
            raise UnknownTopicOrPartitionError(f"topic {resource_name!r} does not exist")
        return describe_topic_configs(deps, topic.configs)
    if resource_type == BROKER:
        if resource_name not in ("", str(deps.node_id)):
            raise ProtocolError(f"unexpected broker id {resource_name!r}, this is {deps.node_id}")
        return describe_broker_configs(deps)
    raise ProtocolError(f"unsupported config resource type {resource_type}")


def handle(
    deps: ConfigView, ctx: RequestContext, request: DescribeConfigsRequest
) -> DescribeConfigsResponse:
    results = []
    for res in request.resources:
        try:
            entries = resolve(deps, res.resource_type, res.resource_name)
        except RiverbedError as exc:
            results.append(
                Result(
                    error_code=error_code_for(exc),
                    error_message=str(exc),
                    resource_type=res.resource_type,
                    resource_name=res.resource_name,
                    configs=[],
                )
            )
            continue
        keys = set(res.configuration_keys) if res.configuration_keys is not None else None
        configs = [
            Entry(
                name=e.name,
                value=e.value,
                read_only=e.read_only,
                config_source=e.source,
                is_default=e.is_default,
                is_sensitive=False,
                synonyms=[Synonym(name=n, value=v, source=s) for n, v, s in e.synonyms]
                if request.include_synonyms
                else [],
                config_type=e.config_type,
                documentation=None,
            )
            for e in entries
            if keys is None or e.name in keys
        ]
        results.append(
            Result(
                error_code=ErrorCode.NONE,
                error_message=None,
                resource_type=res.resource_type,
                resource_name=res.resource_name,
                configs=configs,
            )
        )
    return DescribeConfigsResponse(throttle_time_ms=0, results=results)
