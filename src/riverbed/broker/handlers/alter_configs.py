"""AlterConfigs (key 33) and IncrementalAlterConfigs (key 44) for topics.

AlterConfigs replaces a topic's whole set of overrides; IncrementalAlterConfigs applies
SET (0), DELETE (1), APPEND (2) and SUBTRACT (3, list configs such as
``cleanup.policy``) to the current overrides.  Both validate first (INVALID_CONFIG naming
the key; ``segment.bytes`` below 1 MiB with Kafka 4.x's words, see
:func:`~riverbed.broker.topic_configs.check_requested`) and change nothing under
``validate_only``.  Broker resources are static
(flags / server.properties) and answer INVALID_REQUEST.

The change is a command on the topic manager's worker thread (``topics.json``, then each
topic's one ``topic.properties``, fsynced): the loop keeps serving meanwhile, requests
after this one on the connection wait for it (a :class:`Barrier`), and the new settings
are in force, for every client, before the response is sent.  Resources are altered one
after the other, in request order.
"""

from __future__ import annotations

from typing import Any

from riverbed.broker.barrier import Barrier
from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.deps import TopicAdminDeps
from riverbed.broker.handlers.describe_configs import BROKER, TOPIC
from riverbed.broker.topic_configs import check_requested
from riverbed.broker.topics import ConfigChange
from riverbed.errors import ConfigError, ProtocolError, RiverbedError, error_code_for
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)

ALTER_CONFIGS_KEY = 33
INCREMENTAL_ALTER_CONFIGS_KEY = 44
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
LIST_CONFIGS = frozenset({"cleanup.policy"})


async def _apply(
    deps: TopicAdminDeps,
    resource_type: int,
    name: str,
    change: ConfigChange,
    validate_only: bool,
) -> tuple[int, str | None]:
    try:
        if resource_type == BROKER:
            raise ProtocolError("broker configs are static; set them with --config at start")
        if resource_type != TOPIC:
            raise ProtocolError(f"unsupported config resource type {resource_type}")
        await deps.topics.alter_configs_async(name, change, validate_only=validate_only)
    except RiverbedError as exc:
        return error_code_for(exc), str(exc)
    return ErrorCode.NONE, None


def handle_alter(
    deps: TopicAdminDeps, ctx: RequestContext, request: AlterConfigsRequest
) -> Barrier:
    return Barrier(_alter(deps, request))


async def _alter(deps: TopicAdminDeps, request: AlterConfigsRequest) -> AlterConfigsResponse:
    responses = []
    for res in request.resources:
        new = {c.name: c.value for c in res.configs if c.value is not None}
        code, message = await _apply(
            deps,
            res.resource_type,
            res.resource_name,
            _replace(new),
            bool(request.validate_only),
        )
        responses.append(
            AlterConfigsResponse.AlterConfigsResourceResponse(
                error_code=code,
                error_message=message,
                resource_type=res.resource_type,
                resource_name=res.resource_name,
            )
        )
    return AlterConfigsResponse(throttle_time_ms=0, responses=responses)


def _replace(new: dict[str, str]) -> ConfigChange:
    def change(_current: dict[str, str]) -> dict[str, str]:
        check_requested(new)
        return new

    return change


def _incremental(ops: list[Any]) -> ConfigChange:
    def change(current: dict[str, str]) -> dict[str, str]:
        for op in ops:
            if op.config_operation == SET:
                if op.value is None:
                    raise ConfigError(f"setting {op.name!r}: SET needs a value")
                current[op.name] = op.value
            elif op.config_operation == DELETE:
                current.pop(op.name, None)
            elif op.config_operation in (APPEND, SUBTRACT):
                if op.name not in LIST_CONFIGS:
                    raise ConfigError(f"setting {op.name!r} is not a list; cannot APPEND/SUBTRACT")
                items = [x for x in current.get(op.name, "").split(",") if x]
                value = [x.strip() for x in (op.value or "").split(",") if x.strip()]
                if op.config_operation == APPEND:
                    items += [x for x in value if x not in items]
                else:
                    items = [x for x in items if x not in value]
                current[op.name] = ",".join(items)
            else:
                raise ConfigError(
                    f"setting {op.name!r}: unknown config operation {op.config_operation}"
                )
        check_requested({op.name: current[op.name] for op in ops if op.name in current})
        return current

    return change


def handle_incremental(
    deps: TopicAdminDeps, ctx: RequestContext, request: IncrementalAlterConfigsRequest
) -> Barrier:
    return Barrier(_incremental_alter(deps, request))


async def _incremental_alter(
    deps: TopicAdminDeps, request: IncrementalAlterConfigsRequest
) -> IncrementalAlterConfigsResponse:
    responses = []
    for res in request.resources:
        code, message = await _apply(
            deps,
            res.resource_type,
            res.resource_name,
            _incremental(list(res.configs)),
            bool(request.validate_only),
        )
        responses.append(
            IncrementalAlterConfigsResponse.AlterConfigsResourceResponse(
                error_code=code,
                error_message=message,
                resource_type=res.resource_type,
                resource_name=res.resource_name,
            )
        )
    return IncrementalAlterConfigsResponse(throttle_time_ms=0, responses=responses)
