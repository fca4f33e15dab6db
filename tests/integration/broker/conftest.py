"""Fixtures for broker integration tests: an embedded broker and a raw wire client.

With ``--import-mode=importlib`` test modules cannot import helpers by name, so the wire
client is handed out by fixtures: ``wire`` (connected to ``broker``) and ``connect``
(``connect(bootstrap) -> Wire``, closed at teardown).
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from riverbed.protocol.framing import RequestHeader, decode_response, encode_request
from riverbed.testing.embedded import EmbeddedBroker


class Wire:
    """A minimal blocking Kafka client speaking our generated codec over one socket."""

    def __init__(self, bootstrap: str, timeout_s: float = 10.0) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout_s)
        self._next = 1

    def send(self, api_key: int, version: int, request: Any) -> int:
        correlation_id = self._next
        self._next += 1
        header = RequestHeader(api_key, version, correlation_id, "wire-test")
        self.sock.sendall(encode_request(header, request))
        return correlation_id

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv_frame(self) -> bytes:
        size = struct.unpack(">i", self._exactly(4))[0]
        return self._exactly(size)

    def recv(self, api_key: int, version: int) -> tuple[int, Any]:
        return decode_response(self.recv_frame(), api_key, version)

    def call(self, api_key: int, version: int, request: Any) -> Any:
        cid = self.send(api_key, version, request)
        got, response = self.recv(api_key, version)
        assert got == cid
        return response

    def is_closed_by_peer(self) -> bool:
        """True once the broker has closed this socket (waits up to the socket timeout)."""
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True

    def _exactly(self, n: int) -> bytes:
        chunks = []
        while n:
            chunk = self.sock.recv(n)
            if not chunk:
                raise ConnectionError("closed by broker")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        self.sock.close()


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
