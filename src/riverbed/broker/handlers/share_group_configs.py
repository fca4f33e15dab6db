"""Share group configs (Kafka 4.2's GROUP resources) in IncrementalAlterConfigs and
DescribeConfigs.

IncrementalAlterConfigs (key 44) resources of type GROUP (32) are answered here, from a
route wrapper (:func:`incremental_alter_configs`), so the topic-config adapter
(:mod:`.alter_configs`) stays as it is: SET and DELETE of the share settings
(:data:`~riverbed.broker.share_partitions.GROUP_CONFIG_KEYS`, e.g.
``share.auto.offset.reset=earliest``, ``share.record.lock.duration.ms``) go to the share
group service, and so do the KIP-848 consumer and streams settings of
:mod:`riverbed.broker.group_configs` (validated there, with Kafka's ranges and words); an
unknown name ("Unknown group config name: N") or a bad value is INVALID_CONFIG, and so is
APPEND / SUBTRACT (no GROUP config is a list), as Kafka 4.4 answers.  Other resource
types go to the wrapped route and the answers are merged in request order.
DescribeConfigs (key 32) of a GROUP resource lists those settings: the group's own
value (source GROUP_CONFIG, 8) or the broker's default (DEFAULT_CONFIG, 5).

Group configs are saved in the data dir (``share_group_configs.json``) before the answer
is sent, and read back at start.  Event-loop only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Protocol

from riverbed.broker import group_configs
from riverbed.broker.barrier import Barrier
from riverbed.broker.context import RequestContext
from riverbed.broker.share_partitions import GROUP_CONFIG_KEYS
from riverbed.coordinator.config import GroupCoordinatorConfig
from riverbed.errors import ConfigError
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import (
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)

Route = Any  # see riverbed.broker.handlers.Route
GROUP_RESOURCE = 32
SET, DELETE = 0, 1
Resp = IncrementalAlterConfigsResponse


GROUP_CONFIG_SOURCE, DEFAULT_CONFIG_SOURCE = 8, 5
STRING, INT = 2, 3  # DescribeConfigs config_type


class GroupConfigs(Protocol):
    def set_group_config(self, group_id: str, configs: Mapping[str, str | None]) -> None: ...

    def group_config(self, group_id: str) -> Mapping[str, str]: ...

    def default_group_config(self) -> Mapping[str, str]: ...

    async def save_group_configs(self) -> None: ...


class ShareConfigHost(Protocol):
    @property
    def share_groups(self) -> GroupConfigs: ...


def incremental_alter_configs(host: ShareConfigHost, route: Route) -> Route:
    def handle(ctx: RequestContext, request: IncrementalAlterConfigsRequest) -> Any:
        groups = [r for r in request.resources if r.resource_type == GROUP_RESOURCE]
        if not groups:
            return route(ctx, request)
        answers = {
            id(r): _alter_group(host.share_groups, r, bool(request.validate_only)) for r in groups
        }
        order = list(request.resources)
        request.resources = [r for r in order if r.resource_type != GROUP_RESOURCE]
        other = route(ctx, request) if request.resources else None
        awaitable = other.awaitable if isinstance(other, Barrier) else other
        save = not request.validate_only

        async def later() -> Resp:
            if save:  # durable before the answer, as Kafka's config records are
                await host.share_groups.save_group_configs()
            response = await awaitable if awaitable is not None else None
            return _merge(order, answers, response)

        return Barrier(asyncio.ensure_future(later()))

    return handle


def _alter_group(
    configs: GroupConfigs, res: Any, validate_only: bool
) -> Resp.AlterConfigsResourceResponse:
    code, message = ErrorCode.NONE, None
    change: dict[str, str | None] = {}
    for op in res.configs:
        if op.name not in GROUP_CONFIG_KEYS and op.name not in group_configs.GROUP_CONFIG_KEYS:
            code, message = ErrorCode.INVALID_CONFIG, f"Unknown group config name: {op.name}"
            break
        if op.config_operation not in (SET, DELETE):
            # Kafka: no GROUP config is a LIST, so APPEND / SUBTRACT never apply
            verb = "APPEND" if op.config_operation == 2 else "SUBTRACT"
            code = ErrorCode.INVALID_CONFIG
            message = f"Can't {verb} to key {op.name} because its type is not LIST."
            break
        value = op.value if op.config_operation == SET else None
        if value is not None and op.name in group_configs.GROUP_CONFIG_KEYS:
            try:
                value = group_configs.validate(op.name, value)
            except ConfigError as exc:
                code, message = ErrorCode.INVALID_CONFIG, str(exc)
                break
        change[op.name] = value
    if code == ErrorCode.NONE and not validate_only:
        try:
            configs.set_group_config(res.resource_name, change)
        except (ValueError, ConfigError) as exc:
            code, message = ErrorCode.INVALID_CONFIG, str(exc)
    return Resp.AlterConfigsResourceResponse(
        error_code=code,
        error_message=message,
        resource_type=res.resource_type,
        resource_name=res.resource_name,
    )


def _merge(order: list[Any], answers: dict[int, Any], other: Resp | None) -> Resp:
    rest = iter(other.responses if other is not None else [])
    return Resp(
        throttle_time_ms=0 if other is None else other.throttle_time_ms,
        responses=[answers[id(r)] if id(r) in answers else next(rest) for r in order],
    )


def describe_configs(host: ShareConfigHost, route: Route) -> Route:
    def handle(ctx: RequestContext, request: DescribeConfigsRequest) -> Any:
        if not any(r.resource_type == GROUP_RESOURCE for r in request.resources):
            return route(ctx, request)
        order = list(request.resources)
        mine = {
            id(r): _describe_group(host.share_groups, r, _group_defaults(host))
            for r in order
            if r.resource_type == GROUP_RESOURCE
        }
        request.resources = [r for r in order if r.resource_type != GROUP_RESOURCE]
        other = route(ctx, request) if request.resources else None
        rest = iter(other.results if other is not None else [])
        return DescribeConfigsResponse(
            throttle_time_ms=0,
            results=[mine[id(r)] if id(r) in mine else next(rest) for r in order],
        )

    return handle


def _group_defaults(host: ShareConfigHost) -> Mapping[str, str]:
    """Defaults of the consumer/streams keys: the broker's coordinator settings."""
    groups = getattr(host, "_groups", None)  # the broker's GroupService, once started
    config = getattr(groups, "config", None)
    if not isinstance(config, GroupCoordinatorConfig):
        config = GroupCoordinatorConfig()
    return group_configs.defaults(config)


def _describe_group(
    configs: GroupConfigs, res: Any, group_defaults: Mapping[str, str]
) -> DescribeConfigsResponse.DescribeConfigsResult:
    own = configs.group_config(res.resource_name)
    defaults = {**configs.default_group_config(), **group_defaults}
    keys = res.configuration_keys
    entries = []
    for name in sorted(defaults):
        if keys is not None and name not in keys:
            continue
        mine = name in own
        value = own[name] if mine else defaults[name]
        entries.append(
            DescribeConfigsResponse.DescribeConfigsResourceResult(
                name=name,
                value=value,
                read_only=False,
                config_source=GROUP_CONFIG_SOURCE if mine else DEFAULT_CONFIG_SOURCE,
                is_default=not mine,
                is_sensitive=False,
                synonyms=[],
                config_type=INT if value.lstrip("-").isdigit() else STRING,
                documentation=None,
            )
        )
    return DescribeConfigsResponse.DescribeConfigsResult(
        error_code=ErrorCode.NONE,
        error_message=None,
        resource_type=res.resource_type,
        resource_name=res.resource_name,
        configs=entries,
    )
