"""SaslAuthenticate (key 36): one round of the SASL exchange, v0-2.

On a SASL listener the connection answers this from its
:class:`~riverbed.broker.security.sasl.SaslSession` (:func:`handle_session`); v1+
answers carry ``session_lifetime_ms`` (KIP-368, ``connections.max.reauth.ms``).  A
failure is SASL_AUTHENTICATION_FAILED with Kafka's message, then the connection closes.
The table handler (:func:`handle`) runs only on PLAINTEXT and SSL listeners: Kafka's
ILLEGAL_SASL_STATE.
"""

from __future__ import annotations

from typing import Any

from riverbed.broker.context import RequestContext
from riverbed.broker.security.sasl import SaslSession
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import SaslAuthenticateRequest, SaslAuthenticateResponse

API_KEY = 36


def handle(
    deps: Any, ctx: RequestContext, request: SaslAuthenticateRequest
) -> SaslAuthenticateResponse:
    return SaslAuthenticateResponse(
        error_code=ErrorCode.ILLEGAL_SASL_STATE,
        error_message="SaslAuthenticate request received on a listener without SASL",
        auth_bytes=b"",
        session_lifetime_ms=0,
    )


def handle_session(
    session: SaslSession, ctx: RequestContext, request: SaslAuthenticateRequest
) -> tuple[SaslAuthenticateResponse, bool]:
    """The answer and whether the connection closes after it."""
    result = session.authenticate(bytes(request.auth_bytes), ctx.api_version)
    response = SaslAuthenticateResponse(
        error_code=result.error_code,
        error_message=result.error_message,
        auth_bytes=result.auth_bytes,
        session_lifetime_ms=result.session_lifetime_ms,
    )
    return response, result.close
