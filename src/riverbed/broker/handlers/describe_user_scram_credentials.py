"""DescribeUserScramCredentials (key 50): which SCRAM mechanisms (and iteration counts)
each user has — never the salts or keys.

Kafka's rules: ``users`` null or empty describes every user; a user named twice gets
DUPLICATE_RESOURCE, an unknown one RESOURCE_NOT_FOUND (each in its own result; the
top-level error stays NONE).
"""

from __future__ import annotations

from collections import Counter
from typing import Protocol

from riverbed.broker.context import RequestContext
from riverbed.broker.security.scram_store import ScramCredentialStore
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import (
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
)

API_KEY = 50
_Result = DescribeUserScramCredentialsResponse.DescribeUserScramCredentialsResult
_Info = DescribeUserScramCredentialsResponse.CredentialInfo


class ScramCredentialsDeps(Protocol):
    @property
    def scram_credentials(self) -> ScramCredentialStore: ...


def handle(
    deps: ScramCredentialsDeps, ctx: RequestContext, request: DescribeUserScramCredentialsRequest
) -> DescribeUserScramCredentialsResponse:
    store = deps.scram_credentials
    names = [u.name for u in request.users or []] or store.users()
    counts = Counter(names)
    results: list[_Result] = []
    for name in dict.fromkeys(names):
        if counts[name] > 1:
            results.append(
                _Result(
                    user=name,
                    error_code=ErrorCode.DUPLICATE_RESOURCE,
                    error_message="Cannot describe SCRAM credentials for the same user twice in "
                    "a single request",
                    credential_infos=[],
                )
            )
            continue
        credentials = store.credentials(name)
        if not credentials:
            results.append(
                _Result(
                    user=name,
                    error_code=ErrorCode.RESOURCE_NOT_FOUND,
                    error_message="Attempt to describe a user credential that does not exist",
                    credential_infos=[],
                )
            )
            continue
        infos = [
            _Info(mechanism=int(m), iterations=c.iterations) for m, c in sorted(credentials.items())
        ]
        results.append(
            _Result(
                user=name, error_code=ErrorCode.NONE, error_message=None, credential_infos=infos
            )
        )
    return DescribeUserScramCredentialsResponse(
        throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None, results=results
    )
