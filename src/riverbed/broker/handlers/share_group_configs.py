"""GROUP resource configs (type 32) in IncrementalAlterConfigs, AlterConfigs and
DescribeConfigs, as Kafka 4.4 answers them (the keys, checks and words:
:mod:`riverbed.broker.group_configs`).

IncrementalAlterConfigs (key 44) and AlterConfigs (key 33, which replaces the group's
whole set: keys not given are deleted) resources of type GROUP are answered here, from
route wrappers (:func:`incremental_alter_configs`, :func:`alter_configs`), so the
topic-config adapter (:mod:`.alter_configs`) stays as it is; other resource types go to the
wrapped route and the answers are merged in request order.  Per resource, as Kafka does:
an empty group name is INVALID_REQUEST "Default group resources are not allowed.", a name
twice in one resource INVALID_REQUEST "Error due to duplicate config keys", SET without a
value INVALID_REQUEST "Null value not supported for : N", APPEND / SUBTRACT INVALID_CONFIG
("Can't APPEND to key N because its type is not LIST.", for every GROUP key), an unknown
operation UNKNOWN_SERVER_ERROR; then the group's configs after the change are validated
whole (:func:`riverbed.broker.group_configs.validate`) and nothing is changed on any error.
DELETE of a name the group does not set (even an unknown one) succeeds.

DescribeConfigs (key 32) of a GROUP resource lists every non-internal key (and the internal
ones the group set): the group's value (source GROUP_CONFIG, 8), else the broker's
setting of the synonym (STATIC_BROKER_CONFIG, 4), else Kafka's default (DEFAULT_CONFIG, 5),
with Kafka's synonyms when ``include_synonyms``.  An empty group name is INVALID_REQUEST
"Group name must not be empty".

Group configs are saved in the data dir (``share_group_configs.json``) before the answer
is sent, and read back at start.  Event-loop only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from riverbed.broker import group_configs
from riverbed.broker.barrier import Barrier
from riverbed.broker.context import RequestContext
from riverbed.errors import ConfigError
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import (
    AlterConfigsResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    IncrementalAlterConfigsResponse,
)

if TYPE_CHECKING:
    from riverbed.broker.config import BrokerConfig

Route = Any  # see riverbed.broker.handlers.Route
GROUP_RESOURCE = 32
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
Resp = IncrementalAlterConfigsResponse


class GroupConfigs(Protocol):
    def set_group_config(self, group_id: str, configs: Mapping[str, str | None]) -> None: ...

    def group_config(self, group_id: str) -> Mapping[str, str]: ...

    async def save_group_configs(self) -> None: ...


class ShareConfigHost(Protocol):
    @property
    def share_groups(self) -> GroupConfigs: ...


def _broker_settings(host: ShareConfigHost) -> Mapping[str, str]:
    """The broker's settings as given (Kafka's names): the synonyms and bounds."""
    config: BrokerConfig | None = getattr(host, "config", None)  # the Broker has one
    return config.source if config is not None else {}


def incremental_alter_configs(host: ShareConfigHost, route: Route) -> Route:
    """Wrap IncrementalAlterConfigs: GROUP resources answered here (SET / DELETE)."""
    return _alter_route(host, route, Resp, lambda _current, res: list(res.configs))


def alter_configs(host: ShareConfigHost, route: Route) -> Route:
    """Wrap AlterConfigs: a GROUP resource's configs become exactly the ones given (as
    Kafka 4.4: the others are deleted; the same checks and words)."""
    return _alter_route(host, route, AlterConfigsResponse, _replacing)


@dataclass(frozen=True, slots=True)
class _Op:
    name: str
    config_operation: int
    value: str | None


def _replacing(current: Mapping[str, str], res: Any) -> list[Any]:
    given = {c.name for c in res.configs}
    return [_Op(c.name, SET, c.value) for c in res.configs] + [
        _Op(name, DELETE, None) for name in current if name not in given
    ]


def _alter_route(
    host: ShareConfigHost,
    route: Route,
    response_cls: Any,
    ops_of: Callable[[Mapping[str, str], Any], list[Any]],
) -> Route:
    def handle(ctx: RequestContext, request: Any) -> Any:
        groups = [r for r in request.resources if r.resource_type == GROUP_RESOURCE]
        if not groups:
            return route(ctx, request)
        broker = _broker_settings(host)
        answers = {}
        for res in groups:
            current = host.share_groups.group_config(res.resource_name)
            code, message = _alter_group(
                host.share_groups,
                res.resource_name,
                ops_of(current, res),
                bool(request.validate_only),
                broker,
            )
            answers[id(res)] = response_cls.AlterConfigsResourceResponse(
                error_code=code,
                error_message=message,
                resource_type=res.resource_type,
                resource_name=res.resource_name,
            )
        order = list(request.resources)
        request.resources = [r for r in order if r.resource_type != GROUP_RESOURCE]
        other = route(ctx, request) if request.resources else None
        awaitable = other.awaitable if isinstance(other, Barrier) else other
        save = not request.validate_only

        async def later() -> Any:
            if save:  # durable before the answer, as Kafka's config records are
                await host.share_groups.save_group_configs()
            response = await awaitable if awaitable is not None else None
            rest = iter(response.responses if response is not None else [])
            return response_cls(
                throttle_time_ms=0 if response is None else response.throttle_time_ms,
                responses=[answers[id(r)] if id(r) in answers else next(rest) for r in order],
            )

        return Barrier(asyncio.ensure_future(later()))

    return handle


def _check_ops(group: str, ops: list[Any]) -> tuple[ErrorCode, str | None]:
    """The request-level checks Kafka makes before validating values."""
    if not group:
        return ErrorCode.INVALID_REQUEST, "Default group resources are not allowed."
    names = [op.name for op in ops]
    if len(set(names)) != len(names):
        return ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys"
    for op in ops:
        if op.config_operation in (APPEND, SUBTRACT):
            verb = "APPEND" if op.config_operation == APPEND else "SUBTRACT"
            return (
                ErrorCode.INVALID_CONFIG,
                f"Can't {verb} to key {op.name} because its type is not LIST.",
            )
        if op.config_operation not in (SET, DELETE):
            return ErrorCode.UNKNOWN_SERVER_ERROR, None
        if op.config_operation == SET and op.value is None:
            return ErrorCode.INVALID_REQUEST, f"Null value not supported for : {op.name}"
    return ErrorCode.NONE, None


def _alter_group(
    configs: GroupConfigs,
    group: str,
    ops: list[Any],
    validate_only: bool,
    broker: Mapping[str, str],
) -> tuple[ErrorCode, str | None]:
    code, message = _check_ops(group, ops)
    if code != ErrorCode.NONE:
        return code, message
    current = dict(configs.group_config(group))
    for op in ops:
        if op.config_operation == SET:
            current[op.name] = op.value
        else:
            current.pop(op.name, None)
    try:
        valid = group_configs.validate(current, broker)
        change: dict[str, str | None] = {
            op.name: valid[op.name] if op.config_operation == SET else None
            for op in ops
            if op.name in group_configs.GROUP_CONFIG_KEYS
        }
        if not validate_only:
            configs.set_group_config(group, change)
    except (ValueError, ConfigError) as exc:
        return ErrorCode.INVALID_CONFIG, str(exc)
    return ErrorCode.NONE, None


def describe_configs(host: ShareConfigHost, route: Route) -> Route:
    def handle(ctx: RequestContext, request: DescribeConfigsRequest) -> Any:
        if not any(r.resource_type == GROUP_RESOURCE for r in request.resources):
            return route(ctx, request)
        order = list(request.resources)
        mine = {
            id(r): _describe_group(
                host.share_groups, r, _broker_settings(host), bool(request.include_synonyms)
            )
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


def _describe_group(
    configs: GroupConfigs, res: Any, broker: Mapping[str, str], synonyms: bool
) -> DescribeConfigsResponse.DescribeConfigsResult:
    Result = DescribeConfigsResponse.DescribeConfigsResult
    if not res.resource_name:
        return Result(
            error_code=ErrorCode.INVALID_REQUEST,
            error_message="Group name must not be empty",
            resource_type=res.resource_type,
            resource_name=res.resource_name,
            configs=[],
        )
    own = configs.group_config(res.resource_name)
    entries = [
        DescribeConfigsResponse.DescribeConfigsResourceResult(
            name=e.name,
            value=e.value,
            read_only=False,
            config_source=e.source,
            is_default=False,
            is_sensitive=False,
            synonyms=[
                DescribeConfigsResponse.DescribeConfigsSynonym(name=n, value=v, source=s)
                for n, v, s in e.synonyms
            ]
            if synonyms
            else [],
            config_type=e.config_type,
            documentation=None,
        )
        for e in group_configs.describe(own, broker, res.configuration_keys)
    ]
    return Result(
        error_code=ErrorCode.NONE,
        error_message="",
        resource_type=res.resource_type,
        resource_name=res.resource_name,
        configs=entries,
    )
