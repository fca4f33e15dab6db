"""A listener as the broker serves it: its TLS context, its SASL settings and the
address it advertises.

Built once per listener at start (:func:`build_endpoints`: reading certificate files, so a
bad path or key is a one-line ConfigError before anything is bound); the bound port is
filled in once the socket is listening (``port 0`` picks one).  Shared by every
connection of that listener; event-loop only after start.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from riverbed.broker.security.listeners import Listener, SecurityProtocol
from riverbed.broker.security.sasl import SaslSettings, sasl_settings
from riverbed.broker.security.tls import server_context
from riverbed.errors import ConfigError


@dataclass(slots=True)
class ListenerEndpoint:
    """One served listener (mutable only to record the bound port at start)."""

    listener: Listener
    ssl_context: ssl.SSLContext | None
    sasl: SaslSettings | None
    bound_port: int = 0
    fallback_host: str | None = None  # advertised.host.name, for unadvertised listeners

    @property
    def name(self) -> str:
        return self.listener.name

    @property
    def protocol(self) -> SecurityProtocol:
        return self.listener.protocol

    @property
    def advertised_host(self) -> str:
        """``advertised.listeners``' host, else ``advertised.host.name``, else the bound
        host, else (bound to every interface) this machine's name, as Kafka does."""
        return (
            self.listener.advertised_host
            or self.fallback_host
            or self.listener.host
            or socket.getfqdn()
        )

    @property
    def advertised_port(self) -> int:
        return self.listener.advertised_port or self.bound_port or self.listener.port

    @property
    def advertised(self) -> tuple[str, int]:
        return self.advertised_host, self.advertised_port


def build_endpoints(
    props: Mapping[str, str], listeners: Sequence[Listener], fallback_host: str | None = None
) -> list[ListenerEndpoint]:
    """The runtime form of ``listeners`` (TLS contexts loaded, SASL settings parsed)."""
    out = []
    for listener in listeners:
        try:
            tls = listener.protocol.uses_tls
            context = server_context(props, listener.name) if tls else None
            sasl = sasl_settings(props, listener.name) if listener.protocol.uses_sasl else None
        except ConfigError as exc:
            where = f"listener {listener.name} ({listener.protocol.value})"
            raise ConfigError(f"{where}: {exc}") from None
        out.append(ListenerEndpoint(listener, context, sasl, fallback_host=fallback_host))
    return out
