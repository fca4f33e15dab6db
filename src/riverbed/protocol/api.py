"""The API registry: which request/response classes belong to which API key.

:data:`API_BY_KEY` maps each Kafka API key to an :class:`ApiSpec` built from the generated
classes.  The version range here is what the *codec* speaks (the schema's range, extended
downward where :mod:`riverbed.protocol.codegen.overrides` says so); the broker chooses and
advertises its own, narrower ranges.

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


@dataclass(frozen=True, slots=True)
class ApiSpec:
    """One Kafka API: its key, name, classes and the versions the codec speaks."""

    key: int
    name: str  # "Produce", "Fetch", ...
    request_class: type[Message]
    response_class: type[Message]
    min_version: int
    max_version: int
    flexible_min_version: int | None

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
        specs[key] = ApiSpec(
            key=key,
            name=req.NAME.removesuffix("Request"),
            request_class=req,
            response_class=resp,
            min_version=max(req.MIN_VERSION, resp.MIN_VERSION),
            max_version=min(req.MAX_VERSION, resp.MAX_VERSION),
            flexible_min_version=req.FLEXIBLE_MIN_VERSION,
        )
    return specs


API_BY_KEY: dict[int, ApiSpec] = _build()
"""API key -> :class:`ApiSpec`, for every request/response pair in the schemas."""

API_BY_NAME: dict[str, ApiSpec] = {spec.name: spec for spec in API_BY_KEY.values()}
"""``"Produce"`` -> :class:`ApiSpec`."""
