"""DescribeClientQuotas (key 48): the stored quotas of the entities a filter matches.

Filter (Kafka's ``ClientQuotaFilter``): each component names an entity type (``user``,
``client-id``) and a match — 0 exact name, 1 the ``<default>`` entity, 2 any entity of
that type (default included).  An entity matches when every component matches it; with
``strict`` it must also have no other types.  No components and not strict: every entity.
A type named twice, an unknown type or match type, or an exact match without a name is
INVALID_REQUEST for the whole request, as in Kafka.  Answers from memory (the store).
"""

from __future__ import annotations

from typing import Protocol

from riverbed.broker.context import RequestContext
from riverbed.broker.quota_store import ClientQuotaStore
from riverbed.broker.quotas import ENTITY_TYPES, Entity
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import DescribeClientQuotasRequest, DescribeClientQuotasResponse

API_KEY = 48
MATCH_EXACT = 0
MATCH_DEFAULT = 1
MATCH_ANY = 2

_Entry = DescribeClientQuotasResponse.EntryData
_EntityData = DescribeClientQuotasResponse.EntityData
_Value = DescribeClientQuotasResponse.ValueData
_Filter = dict[str, tuple[int, str | None]]


class ClientQuotasDeps(Protocol):
    @property
    def client_quota_store(self) -> ClientQuotaStore: ...


def handle(
    deps: ClientQuotasDeps, ctx: RequestContext, request: DescribeClientQuotasRequest
) -> DescribeClientQuotasResponse:
    wanted: _Filter = {}
    for component in request.components:
        problem = _check(component, wanted)
        if problem is not None:
            return DescribeClientQuotasResponse(
                throttle_time_ms=0,
                error_code=ErrorCode.INVALID_REQUEST,
                error_message=problem,
                entries=None,
            )
        wanted[component.entity_type] = (component.match_type, component.match)
    stored = sorted(deps.client_quota_store.quotas.items(), key=lambda i: repr(i[0]))
    entries = [
        _Entry(
            entity=[_EntityData(entity_type=t, entity_name=n) for t, n in entity],
            values=[_Value(key=k, value=v) for k, v in sorted(values.items())],
        )
        for entity, values in stored
        if matches(entity, wanted, bool(request.strict))
    ]
    return DescribeClientQuotasResponse(
        throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None, entries=entries
    )


def _check(component: DescribeClientQuotasRequest.ComponentData, seen: _Filter) -> str | None:
    if component.entity_type not in ENTITY_TYPES:
        return f"entity type {component.entity_type!r} is not supported (user, client-id)"
    if component.entity_type in seen:
        return f"entity type {component.entity_type!r} appears twice in the filter"
    if component.match_type not in (MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY):
        return f"unknown match type {component.match_type}"
    if component.match_type == MATCH_EXACT and component.match is None:
        return f"an exact match on {component.entity_type!r} needs a name"
    return None


def matches(entity: Entity, wanted: _Filter, strict: bool) -> bool:
    """Whether ``entity`` passes the filter ``wanted`` (type -> (match type, match))."""
    names = dict(entity)
    if strict and set(names) != set(wanted):
        return False
    for entity_type, (match_type, match) in wanted.items():
        if entity_type not in names:
            return False
        name = names[entity_type]
        if match_type == MATCH_EXACT and name != match:
            return False
        if match_type == MATCH_DEFAULT and name is not None:
            return False
    return True
