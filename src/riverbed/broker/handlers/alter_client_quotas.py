"""AlterClientQuotas (key 49): set and remove quotas of user / client-id entities.

Each entry (an entity and its operations) succeeds or fails on its own, one result per
entry in request order.  Refused with INVALID_REQUEST, as Kafka does: an empty entity, an
entity type other than ``user`` / ``client-id`` (``ip`` connection-rate quotas are not
served) or named twice, a key other than ``producer_byte_rate`` / ``consumer_byte_rate``
/ ``request_percentage`` or named twice, a value that is not positive, a byte rate that is
not a whole number.  Removing a key that is not set is a no-op.  ``validate_only``
checks without storing.

The accepted entries are written to ``client_quotas.json`` (fsynced, one write) before
the answer, on the event loop: an administrative call, rare and small.  They apply to the
next Produce/Fetch of the clients concerned.
"""

from __future__ import annotations

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.describe_client_quotas import ClientQuotasDeps
from riverbed.broker.quota_store import QuotaChange
from riverbed.broker.quotas import ENTITY_TYPES, QUOTA_KEYS_BY_ENTITY, REQUEST_PERCENTAGE, Entity
from riverbed.errors import error_code_for
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import AlterClientQuotasRequest, AlterClientQuotasResponse

API_KEY = 49

_Entry = AlterClientQuotasResponse.EntryData
_EntityData = AlterClientQuotasResponse.EntityData


def handle(
    deps: ClientQuotasDeps, ctx: RequestContext, request: AlterClientQuotasRequest
) -> AlterClientQuotasResponse:
    results: list[tuple[int, str | None]] = []
    changes: list[QuotaChange] = []
    accepted: list[int] = []
    for entry in request.entries:
        entity, problem = _entity(entry)
        if problem is None:
            assert entity is not None
            ops, problem = _ops(entry)
        if problem is not None or entity is None:
            results.append((ErrorCode.INVALID_REQUEST, problem or "invalid entity"))
            continue
        changes += [(entity, key, value) for key, value in ops]
        accepted.append(len(results))
        results.append((ErrorCode.NONE, None))
    if changes and not request.validate_only:
        try:
            deps.client_quota_store.apply(changes)
        except OSError as exc:
            for index in accepted:
                results[index] = (error_code_for(exc), f"cannot store the quotas: {exc}")
    return AlterClientQuotasResponse(
        throttle_time_ms=0,
        entries=[
            _Entry(
                error_code=code,
                error_message=message,
                entity=[
                    _EntityData(entity_type=e.entity_type, entity_name=e.entity_name)
                    for e in entry.entity
                ],
            )
            for entry, (code, message) in zip(request.entries, results, strict=True)
        ],
    )


def _entity(entry: AlterClientQuotasRequest.EntryData) -> tuple[Entity | None, str | None]:
    if not entry.entity:
        return None, "the quota entity is empty"
    parts: dict[str, str | None] = {}
    for part in entry.entity:
        if part.entity_type not in ENTITY_TYPES:
            return None, f"entity type {part.entity_type!r} is not supported (user, client-id)"
        if part.entity_type in parts:
            return None, f"entity type {part.entity_type!r} appears twice"
        parts[part.entity_type] = part.entity_name
    return tuple(sorted(parts.items())), None


def _ops(
    entry: AlterClientQuotasRequest.EntryData,
) -> tuple[list[tuple[str, float | None]], str | None]:
    ops: list[tuple[str, float | None]] = []
    seen: set[str] = set()
    for op in entry.ops:
        if op.key not in QUOTA_KEYS_BY_ENTITY:
            return [], f"invalid quota key {op.key!r} for a user / client-id entity"
        if op.key in seen:
            return [], f"quota key {op.key!r} appears twice"
        seen.add(op.key)
        if op.remove:
            ops.append((op.key, None))
            continue
        value = float(op.value)
        if not value > 0 or value == float("inf"):
            return [], f"{op.key} must be a positive number, not {op.value}"
        if op.key != REQUEST_PERCENTAGE and not value.is_integer():
            return [], f"{op.key} must be a whole number of bytes per second, not {op.value}"
        ops.append((op.key, value))
    return ops, None
