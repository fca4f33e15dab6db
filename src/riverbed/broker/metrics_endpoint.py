"""The broker's ``/metrics`` HTTP endpoint (Prometheus text format), from ``metrics.listen``.

``metrics.listen=HOST:PORT`` (the ``--metrics-listen`` flag of ``riverbed broker``) turns
metrics on: :class:`MetricsEndpoint` serves the broker's registry with prometheus-client's
own HTTP server, on a daemon thread of its own (each scrape handled on a short-lived
thread), so scrapes never run on the event loop.  Port 0 picks a free port
(:attr:`MetricsEndpoint.port`).  Unset: no endpoint and no instruments.

Binding happens at broker start, before the data dir is opened, so a port in use is a
one-line :class:`~riverbed.errors.ConfigError`; :meth:`MetricsEndpoint.close` (at broker
stop) blocks up to half a second (the server's poll interval): call it off the loop.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

from riverbed.errors import ConfigError

if TYPE_CHECKING:  # prometheus_client is imported only by a broker that serves metrics
    from wsgiref.simple_server import WSGIServer

    from prometheus_client import CollectorRegistry

log = logging.getLogger(__name__)

METRICS_LISTEN_KEY = "metrics.listen"
METRICS_KEYS: frozenset[str] = frozenset({METRICS_LISTEN_KEY})
"""Broker settings this module parses (BrokerConfig accepts them)."""


def parse_listen(text: str, what: str = METRICS_LISTEN_KEY) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:9404``; an empty host means every interface)."""
    host, sep, port_text = text.strip().rpartition(":")
    if not sep or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ConfigError(f"{what} expects HOST:PORT, got {text!r}")
    return host.strip("[]") or "0.0.0.0", int(port_text)


def metrics_listen(props: Mapping[str, str]) -> tuple[str, int] | None:
    """The ``metrics.listen`` address of a broker's settings, None when unset or empty."""
    text = props.get(METRICS_LISTEN_KEY, "").strip()
    return parse_listen(text) if text else None


class MetricsEndpoint:
    """An HTTP server answering every GET with ``registry`` in Prometheus text format."""

    def __init__(self, registry: CollectorRegistry, host: str, port: int) -> None:
        from prometheus_client import start_http_server

        try:
            server, thread = start_http_server(port, addr=host, registry=registry)
        except OSError as exc:
            raise ConfigError(
                f"cannot listen on {host}:{port} ({METRICS_LISTEN_KEY}): {exc.strerror}"
            ) from None
        self._server: WSGIServer | None = server
        self._thread: threading.Thread | None = thread
        self.host = host
        self.port = int(server.server_address[1])
        log.info("metrics at http://%s:%d/metrics", host, self.port)

    def close(self) -> None:
        """Stop serving and close the socket (blocks briefly; idempotent)."""
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
