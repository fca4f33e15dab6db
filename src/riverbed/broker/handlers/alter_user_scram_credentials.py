"""AlterUserScramCredentials (key 51): add, replace and delete SCRAM credentials.

The client sends the salt and ``SaltedPassword = Hi(password, salt, iterations)``; the
store keeps only the derived StoredKey/ServerKey (:mod:`riverbed.broker.security.scram`).
Kafka's rules, per user (a user's changes apply all together or not at all; one result
per user, in request order): an empty name is UNACCEPTABLE_CREDENTIAL; an unknown
mechanism UNSUPPORTED_SASL_MECHANISM; iterations outside 4096..16384
UNACCEPTABLE_CREDENTIAL; one user altered twice in one request, whatever the mechanisms
(two upsertions, or a deletion and an upsertion), DUPLICATE_RESOURCE for that user and
none of its changes applied, as Kafka's KRaft controller (``ScramControlManager``) answers;
deleting a credential that does not exist RESOURCE_NOT_FOUND.

The accepted changes are written to ``scram_credentials.json`` (fsynced) before the
answer, on the event loop: an administrative call, rare and small.
"""

from __future__ import annotations

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
_ALTERED_TWICE = "A user credential cannot be altered twice in the same request"


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
    # Kafka's ScramControlManager.alterCredentials: deletions first, then upsertions; a
    # user's first error sticks, and a second alteration of a user whose first one is
    # still accepted (whatever the mechanism) turns the user into DUPLICATE_RESOURCE.
    altered: set[str] = set()

    def duplicate(user: str) -> bool:
        if user in altered:
            altered.discard(user)
            errors[user] = (ErrorCode.DUPLICATE_RESOURCE, _ALTERED_TWICE)
            return True
        return False

    def name_and_mechanism_error(name: str, mechanism_id: int) -> tuple[int, str] | None:
        if not name:
            return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
        if mechanism_id not in (1, 2):
            return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
        return None

    for d in deletions:
        if d.name in errors or duplicate(d.name):
            continue
        error = name_and_mechanism_error(d.name, d.mechanism)
        if error is None and store.get(d.name, ScramMechanism(d.mechanism)) is None:
            error = (
                ErrorCode.RESOURCE_NOT_FOUND,
                "Attempt to delete a user credential that does not exist",
            )
        if error is not None:
            errors[d.name] = error
        else:
            altered.add(d.name)
    for u in upsertions:
        if u.name in errors or duplicate(u.name):
            continue
        error = name_and_mechanism_error(u.name, u.mechanism)
        if error is not None:
            pass
        elif u.iterations < MIN_ITERATIONS:
            error = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
        elif u.iterations > MAX_ITERATIONS:
            error = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
        elif not u.salt or not u.salted_password:
            error = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Salt and salted password required")
        if error is not None:
            errors[u.name] = error
        else:
            altered.add(u.name)
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
