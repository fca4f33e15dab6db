"""ApiVersions (key 18): the API ranges this broker serves.

Ranges come from the codec's :data:`~riverbed.protocol.api.API_BY_KEY` for every API the
broker has a handler for.  Produce is advertised from v0 although v0-2 are refused when
used (librdkafka needs the v0 floor, KAFKA-18659).  A client asking for an ApiVersions
version we lack (kafka-python 3 opens with v4 against older brokers) gets Kafka's
fallback: a v0 response with UNSUPPORTED_VERSION and our ranges, so it can retry with a
version we speak.  v3+ carry the features (KIP-584): ``transaction.version`` supported
0-2 and finalized at 2, as a Kafka 4 cluster's, so Kafka's Java client uses transaction
version 2 (KIP-890 part 2: implicit adds by Produce v12, an epoch bump per EndTxn v5).
"""

from __future__ import annotations

import dataclasses

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.deps import ApiVersionsDeps
from riverbed.coordinator.transactions import TV_2
from riverbed.errors import UnsupportedVersionError, error_code_for
from riverbed.protocol.api import API_BY_KEY
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.framing import RequestHeader
from riverbed.protocol.messages import ApiVersionsRequest, ApiVersionsResponse

API_KEY = 18
TRANSACTION_VERSION_FEATURE = "transaction.version"


def api_ranges(deps: ApiVersionsDeps) -> list[ApiVersionsResponse.ApiVersion]:
    out = []
    for key in deps.served_api_keys():
        spec = API_BY_KEY.get(key)
        if spec is None:
            continue
        out.append(
            ApiVersionsResponse.ApiVersion(
                api_key=key, min_version=spec.min_version, max_version=spec.max_version
            )
        )
    return out


def handle(
    deps: ApiVersionsDeps, ctx: RequestContext, request: ApiVersionsRequest
) -> ApiVersionsResponse:
    return ApiVersionsResponse(
        error_code=ErrorCode.NONE,
        api_keys=api_ranges(deps),
        throttle_time_ms=0,
        supported_features=[
            ApiVersionsResponse.SupportedFeatureKey(
                name=TRANSACTION_VERSION_FEATURE, min_version=0, max_version=TV_2
            )
        ],
        finalized_features_epoch=0,
        finalized_features=[
            ApiVersionsResponse.FinalizedFeatureKey(
                name=TRANSACTION_VERSION_FEATURE, max_version_level=TV_2, min_version_level=TV_2
            )
        ],
    )


def unsupported_version_response(
    deps: ApiVersionsDeps, header: RequestHeader
) -> tuple[RequestHeader, ApiVersionsResponse] | None:
    """Kafka's v0 fallback for an ApiVersions version we lack; None for other APIs.
    ``header`` is what could be parsed of the request (its body was not decoded)."""
    if header.api_key != API_KEY:
        return None
    code = error_code_for(UnsupportedVersionError(f"ApiVersions v{header.api_version}"))
    response = ApiVersionsResponse(error_code=code, api_keys=api_ranges(deps), throttle_time_ms=0)
    return dataclasses.replace(header, api_version=0), response
