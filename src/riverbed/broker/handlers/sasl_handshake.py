"""SaslHandshake (key 17): choose a SASL mechanism.

On a SASL listener the connection answers this from its own
:class:`~riverbed.broker.security.sasl.SaslSession` (:func:`handle_session`); the
handler in the broker's table (:func:`handle`) only runs on PLAINTEXT and SSL
listeners, where Kafka answers ILLEGAL_SASL_STATE.  After a v0 handshake the connection
exchanges raw SASL tokens (see :mod:`riverbed.broker.security.sasl`).
"""

from __future__ import annotations

from typing import Any

from riverbed.broker.context import RequestContext
from riverbed.broker.security.sasl import HandshakeResult, SaslSession
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import SaslHandshakeRequest, SaslHandshakeResponse

API_KEY = 17


def handle(deps: Any, ctx: RequestContext, request: SaslHandshakeRequest) -> SaslHandshakeResponse:
    """A listener without SASL: Kafka's ILLEGAL_SASL_STATE, no mechanisms."""
    return SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])


def handle_session(
    session: SaslSession, ctx: RequestContext, request: SaslHandshakeRequest
) -> tuple[SaslHandshakeResponse, bool]:
    """The answer and whether the connection closes after it."""
    result: HandshakeResult = session.handshake(request.mechanism, ctx.api_version)
    response = SaslHandshakeResponse(error_code=result.error_code, mechanisms=result.mechanisms)
    return response, result.close
