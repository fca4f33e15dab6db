"""Fixtures for broker integration tests: an embedded broker and a raw wire client.

With ``--import-mode=importlib`` test modules cannot import helpers by name, so the wire
client is handed out by fixtures: ``wire`` (connected to ``broker``) and ``connect``
(``connect(bootstrap) -> Wire``, closed at teardown).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from riverbed.testing.embedded import EmbeddedBroker
from riverbed.testing.wire import WireClient


class Wire(WireClient):
    """:class:`riverbed.testing.wire.WireClient` (client id ``wire-test``, 10 s timeout)
    plus raw writes and a check that the broker closed the connection."""

    def __init__(self, bootstrap: str, timeout_s: float = 10.0) -> None:
        super().__init__(bootstrap, timeout_s, client_id="wire-test")

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def is_closed_by_peer(self) -> bool:
        """True once the broker has closed this socket (waits up to the socket timeout)."""
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(tmp_path / "data") as embedded:
        yield embedded


@pytest.fixture
def connect() -> Iterator[Callable[[str], Wire]]:
    opened: list[Wire] = []

    def open_wire(bootstrap: str) -> Wire:
        client = Wire(bootstrap)
        opened.append(client)
        return client

    yield open_wire
    for client in opened:
        client.close()


@pytest.fixture
def wire(broker: EmbeddedBroker, connect: Callable[[str], Wire]) -> Wire:
    return connect(broker.bootstrap_servers)
