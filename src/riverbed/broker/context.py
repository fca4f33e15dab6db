"""Who sent a request: the per-request context the connection layer hands to a handler.

:class:`RequestContext` is built by :class:`~riverbed.broker.connection.KafkaConnection`
once per decoded frame, before the handler runs, from what only the connection knows —
the request header and the peer's address (and, once the security layer authenticates
connections, the principal).  Handlers read it instead of process-wide state, so a
handler called from a test needs no socket and no context variable.

Immutable (a frozen value): safe to keep in a handler's coroutine after the call returns.
"""

from __future__ import annotations

from dataclasses import dataclass

from riverbed.protocol.framing import RequestHeader

DEFAULT_CLIENT_HOST = "/127.0.0.1"
"""The host reported for a client whose address is unknown (we listen on loopback)."""

ANONYMOUS = "User:ANONYMOUS"
"""Kafka's principal for an unauthenticated (PLAINTEXT) connection."""


@dataclass(frozen=True, slots=True)
class RequestContext:
    """One request's header and the connection facts a handler may need.

    ``client_address``: the peer's IP address as the socket reports it, None when unknown
    (a test, a Unix socket).  ``principal``: the authenticated identity
    (:mod:`riverbed.broker.security`): ``User:ANONYMOUS`` on PLAINTEXT and on SSL without
    a client certificate, the certificate's subject (``User:CN=...``) with one,
    ``User:<name>`` after SASL — what an authorizer checks.  ``endpoint``: the advertised
    ``(host, port)`` of the listener the request arrived on (Metadata, FindCoordinator and
    DescribeCluster answer with it), None for the broker's default address.
    ``connection_id``: unique among the broker's connections (0: none, a test); share
    sessions remember it and close with the connection, as Kafka's do.
    """

    header: RequestHeader
    client_address: str | None = None
    principal: str = ANONYMOUS
    endpoint: tuple[str, int] | None = None
    connection_id: int = 0

    @property
    def api_version(self) -> int:
        return self.header.api_version

    @property
    def client_id(self) -> str:
        """The header's client id, ``""`` when the client sent none."""
        return self.header.client_id or ""

    @property
    def client_host(self) -> str:
        """The client's host as Kafka reports it (``InetAddress.toString``: ``/<ip>``)."""
        address = self.client_address
        return f"/{address}" if address else DEFAULT_CLIENT_HOST
