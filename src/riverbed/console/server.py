"""Serving the console with uvicorn: in the foreground (``riverbed console``) or on a
background thread (``riverbed broker --console HOST:PORT``, tests, screenshots).

:class:`ConsoleServer` runs one uvicorn server with its own asyncio event loop on a daemon
thread; :meth:`ConsoleServer.start` returns once the socket is bound (or raises
:class:`~riverbed.errors.ConfigError` when it could not bind), :meth:`ConsoleServer.stop`
asks uvicorn to exit and joins the thread.  The broker's own event loop is never shared:
a slow page cannot delay a Kafka request, and vice versa.  If the hosting process dies, the
thread dies with it; nothing is persisted.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from collections.abc import Generator, Mapping, Sequence
from typing import Any

import uvicorn

from riverbed.console.app import create_app
from riverbed.errors import ConfigError

log = logging.getLogger(__name__)


def parse_listen(text: str, option: str = "--listen") -> tuple[str, int]:
    """``HOST:PORT`` → ``(host, port)``; :class:`ConfigError` when malformed."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ConfigError(f"{option} expects HOST:PORT, got {text!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def bind(host: str, port: int, option: str = "--listen") -> socket.socket:
    """A listening-ready TCP socket bound to ``host:port`` (``SO_REUSEADDR``), handed to
    uvicorn; :class:`ConfigError` (one line) when the address cannot be bound."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(
            f"{option} {host}:{port}: cannot listen there ({exc.strerror or exc})"
        ) from None
    sock.set_inheritable(True)
    return sock


def _config(
    bootstrap: str,
    host: str,
    port: int,
    pipeline_urls: Sequence[str],
    sample_interval_s: float,
    timeout_s: float = 15.0,
    properties: Sequence[str] = (),
    query_names: Mapping[str, str] | None = None,
) -> uvicorn.Config:
    app = create_app(
        bootstrap,
        pipeline_urls,
        sample_interval_s=sample_interval_s,
        timeout_s=timeout_s,
        properties=properties,
        query_names=query_names,
    )
    return uvicorn.Config(
        app, host=host, port=port, log_level="warning", access_log=False, lifespan="on"
    )


class _Server(uvicorn.Server):
    """uvicorn's server, but a SIGINT/SIGTERM that stopped it is not re-raised afterwards
    (uvicorn re-raises it so the process dies by the signal): ``riverbed console`` exits 0
    after a clean stop, like ``riverbed broker``."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        with super().capture_signals():
            try:
                yield
            finally:
                captured = getattr(self, "_captured_signals", None)
                if isinstance(captured, list):
                    captured.clear()


def serve(
    bootstrap: str,
    host: str,
    port: int,
    pipeline_urls: Sequence[str] = (),
    sample_interval_s: float = 2.0,
    sock: socket.socket | None = None,
    properties: Sequence[str] = (),
) -> None:
    """Serve the console in the foreground until SIGINT/SIGTERM (uvicorn's handlers), on
    ``sock`` when given (from :func:`bind`), else on a socket bound to ``host:port``."""
    sock = sock or bind(host, port)
    config = _config(bootstrap, host, port, pipeline_urls, sample_interval_s, properties=properties)
    server = _Server(config)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()


class ConsoleServer:
    """The console on a background thread (see module doc).  Start and stop from one
    thread."""

    def __init__(
        self,
        bootstrap: str,
        host: str,
        port: int,
        pipeline_urls: Sequence[str] = (),
        sample_interval_s: float = 2.0,
        option: str = "--listen",
        timeout_s: float = 15.0,
        properties: Sequence[str] = (),
        query_names: Mapping[str, str] | None = None,
    ) -> None:
        self.bootstrap, self.host = bootstrap, host
        self._option = option
        self._sock: socket.socket | None = None
        self.port = port
        self._server = uvicorn.Server(
            _config(
                bootstrap,
                host,
                port,
                pipeline_urls,
                sample_interval_s,
                timeout_s,
                properties,
                query_names,
            )
        )
        self._thread = threading.Thread(target=self._run, name="riverbed-console", daemon=True)

    def _run(self) -> None:
        assert self._sock is not None
        self._server.run(sockets=[self._sock])

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self, timeout_s: float = 30.0) -> None:
        """Start serving; return once listening.  :class:`ConfigError` if it cannot bind."""
        self._sock = bind(self.host, self.port, self._option)
        self.port = int(self._sock.getsockname()[1])  # port 0: the one the system picked
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise ConfigError(f"the console at {self.url} did not start")
            time.sleep(0.02)  # polling for the bind; the condition is what we wait on
        log.info("console at %s", self.url)

    def stop(self, timeout_s: float = 10.0) -> None:
        """Ask uvicorn to exit and wait for the thread (at most ``timeout_s``)."""
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout_s)
        if self._sock is not None:
            self._sock.close()


def start_for_broker(listen: str, config: Any, host: str, port: int) -> ConsoleServer:
    """``riverbed broker --console HOST:PORT``: the console on its own port and thread,
    talking to this broker as any client would, through its first PLAINTEXT listener
    (``--listen`` when no ``listeners`` setting; ``0.0.0.0``/empty means 127.0.0.1).
    :class:`ConfigError` when there is no PLAINTEXT listener or ``listen`` is malformed."""
    target = (host, port)
    if config.listeners:
        plain = [
            lst
            for lst in config.listeners
            if getattr(lst.protocol, "value", lst.protocol) == "PLAINTEXT"
        ]
        if not plain:
            raise ConfigError("--console needs a PLAINTEXT listener to talk to the broker")
        target = (plain[0].host, plain[0].port)
    connect_host = "127.0.0.1" if target[0] in ("", "0.0.0.0", "::") else target[0]
    console_host, console_port = parse_listen(listen, "--console")
    server = ConsoleServer(
        f"{connect_host}:{target[1]}", console_host, console_port, option="--console"
    )
    server.start()
    return server
