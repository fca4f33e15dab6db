"""AlterUserScramCredentials (key 51): add, replace and delete SCRAM credentials.

The client sends the salt and ``SaltedPassword = Hi(password, salt, iterations)``; the
store keeps only the derived StoredKey/ServerKey (:mod:`riverbed.broker.security.scram`).
Kafka's rules, per user (a user's changes apply all together or not at all; one result
per user, in request order): an empty name is UNACCEPTABLE_CREDENTIAL; an unknown
mechanism UNSUPPORTED_SASL_MECHANISM; iterations outside 4096..16384
UNACCEPTABLE_CREDENTIAL; the same user and mechanism twice in one request
DUPLICATE_RESOURCE; deleting a credential that does not exist RESOURCE_NOT_FOUND.

The accepted changes are written to ``scram_credentials.json`` (fsynced) before the
answer, on the event loop: an administrative call, rare and small.
"""

from __future__ import annotations

from collections import Counter
from typing import Protocol

from riverbed.broker.context import RequestContext
from riverbed.broker.security.scram import (
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    ScramMechanism,
    credential_from_salted_password,
)
from riverbed.broker.security.scram_store import ScramCredentialStore, ScramCredentialUpsert
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
)

API_KEY = 51
_Result = AlterUserScramCredentialsResponse.AlterUserScramCredentialsResult


class ScramCredentialsDeps(Protocol):
    @property
    def scram_credentials(self) -> ScramCredentialStore: ...


def handle(
    deps: ScramCredentialsDeps, ctx: RequestContext, request: AlterUserScramCredentialsRequest
) -> AlterUserScramCredentialsResponse:
    store = deps.scram_credentials
    deletions = request.deletions or []
    upsertions = request.upsertions or []
    errors: dict[str, tuple[int, str | None]] = {}
    users = list(dict.fromkeys([d.name for d in deletions] + [u.name for u in upsertions]))

    def refuse(user: str, code: int, message: str) -> None:
        errors.setdefault(user, (code, message))

    items: list[tuple[str, int]] = [(d.name, d.mechanism) for d in deletions]
    items += [(u.name, u.mechanism) for u in upsertions]
    pairs = Counter(items)
    for name, mechanism_id in items:
        mechanism = ScramMechanism(mechanism_id) if mechanism_id in (1, 2) else None
        if not name:
            refuse(name, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
        elif mechanism is None:
            refuse(name, ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
        elif pairs[(name, mechanism_id)] > 1:
            refuse(
                name,
                ErrorCode.DUPLICATE_RESOURCE,
                "A user credential cannot be altered twice in the same request",
            )
    for d in deletions:
        if d.name not in errors and store.get(d.name, ScramMechanism(d.mechanism)) is None:
            refuse(
                d.name,
                ErrorCode.RESOURCE_NOT_FOUND,
                "Attempt to delete a user credential that does not exist",
            )
    for u in upsertions:
        if u.name in errors:
            continue
        if u.iterations < MIN_ITERATIONS:
            refuse(u.name, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
        elif u.iterations > MAX_ITERATIONS:
            refuse(u.name, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
        elif not u.salt or not u.salted_password:
            refuse(u.name, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Salt and salted password required")
    accepted_deletions = [
        (d.name, ScramMechanism(d.mechanism)) for d in deletions if d.name not in errors
    ]
    accepted_upsertions: list[ScramCredentialUpsert] = [
        (
            u.name,
            credential_from_salted_password(
                ScramMechanism(u.mechanism), bytes(u.salt), bytes(u.salted_password), u.iterations
            ),
        )
        for u in upsertions
        if u.name not in errors
    ]
    if accepted_deletions or accepted_upsertions:
        store.apply(accepted_deletions, accepted_upsertions)
    results = []
    for user in users:
        code, message = errors.get(user, (ErrorCode.NONE, None))
        results.append(_Result(user=user, error_code=code, error_message=message))
    return AlterUserScramCredentialsResponse(throttle_time_ms=0, results=results)
