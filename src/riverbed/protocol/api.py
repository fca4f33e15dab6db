"""The API registry: which request/response classes belong to which API key.

:data:`API_BY_KEY` maps each Kafka API key to an :class:`ApiSpec` built from the generated
classes.  ``codec_max_version`` is the highest version the *codec* speaks (Kafka 4.4's
schemas; the low end is extended downward where :mod:`riverbed.protocol.codegen.overrides`
says so); ``max_version`` is the highest one the broker serves and advertises, lower where
Kafka 4.4 added versions whose meaning our handlers do not implement
(:data:`SERVED_MAX_VERSIONS`).  A request above ``max_version`` is answered as Kafka answers
a version it lacks.

Header versions follow Kafka's ``ApiKeys`` rules: request header v2 and response header v1
for flexible versions, v1 and v0 otherwise, except that **ApiVersions responses always use
response header v0** (a client must be able to read the response even when the broker did
not understand the request's version).

Immutable after import; safe from any thread.
"""

from __future__ import annotations

from dataclasses import dataclass

from riverbed.protocol.messages import ALL_MESSAGES
from riverbed.protocol.messages.base import Message

API_VERSIONS_KEY = 18

SERVED_MAX_VERSIONS: dict[str, int] = {
    "ApiVersions": 4,  # v5: ClusterId/NodeId checks, REBOOTSTRAP_REQUIRED (KIP-1242)
    "ConsumerGroupDescribe": 0,  # v1: each member's MemberType (KIP-1099)
    "DeleteGroups": 2,  # v3: a per-group ErrorMessage
    "InitProducerId": 5,  # v6: KIP-939 two-phase commit (keep_prepared_txn)
    "TxnOffsetCommit": 5,  # v6: topics by id, generation or member epoch
}
"""API name -> highest version served, where Kafka 4.4's schema goes further."""


@dataclass(frozen=True, slots=True)
class ApiSpec:
    """One Kafka API: its key, name, classes and the versions the codec speaks."""

    key: int
    name: str  # "Produce", "Fetch", ...
    request_class: type[Message]
    response_class: type[Message]
    min_version: int
    max_version: int  # served and advertised
    flexible_min_version: int | None
    codec_max_version: int  # the request and response classes speak up to this one

    def is_flexible(self, version: int) -> bool:
        return self.flexible_min_version is not None and version >= self.flexible_min_version

    def supports(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version

    def request_header_version(self, version: int) -> int:
        return 2 if self.is_flexible(version) else 1

    def response_header_version(self, version: int) -> int:
        if self.key == API_VERSIONS_KEY:
            return 0
        return 1 if self.is_flexible(version) else 0


def _build() -> dict[int, ApiSpec]:
    requests: dict[int, type[Message]] = {}
    responses: dict[int, type[Message]] = {}
    for cls in ALL_MESSAGES:
        if cls.MESSAGE_TYPE == "request":
            requests[cls.API_KEY] = cls
        elif cls.MESSAGE_TYPE == "response":
            responses[cls.API_KEY] = cls
    specs: dict[int, ApiSpec] = {}
    for key in sorted(requests):
        req, resp = requests[key], responses[key]
        name = req.NAME.removesuffix("Request")
        codec_max = min(req.MAX_VERSION, resp.MAX_VERSION)
        specs[key] = ApiSpec(
            key=key,
            name=name,
            request_class=req,
            response_class=resp,
            min_version=max(req.MIN_VERSION, resp.MIN_VERSION),
            max_version=min(codec_max, SERVED_MAX_VERSIONS.get(name, codec_max)),
            flexible_min_version=req.FLEXIBLE_MIN_VERSION,
            codec_max_version=codec_max,
        )
    return specs


API_BY_KEY: dict[int, ApiSpec] = _build()
"""API key -> :class:`ApiSpec`, for every request/response pair in the schemas."""

API_BY_NAME: dict[str, ApiSpec] = {spec.name: spec for spec in API_BY_KEY.values()}
"""``"Produce"`` -> :class:`ApiSpec`."""
