"""A blocking Kafka wire client for tests: one socket, Riverbed's generated codec.

Sends a request (:func:`riverbed.protocol.framing.encode_request`) and reads its response
before the next one, so correlation ids come back in order; checked on every call.  Not
thread-safe: one caller per client.  Raises ``ConnectionError`` when the broker closes
the connection mid-response and ``TimeoutError`` (``socket.timeout``) after ``timeout_s``
without a byte.  Works against any Kafka broker that speaks the request's version.
"""

from __future__ import annotations

import socket
import struct
from typing import Any

from riverbed.protocol.framing import RequestHeader, decode_response, encode_request


class WireClient:
    """One blocking connection to ``bootstrap`` (``HOST:PORT``)."""

    def __init__(
        self, bootstrap: str, timeout_s: float = 30.0, client_id: str = "riverbed-test"
    ) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout_s)
        self.client_id = client_id
        self.correlation = 0

    def call(self, api_key: int, version: int, request: Any) -> Any:
        """Send ``request`` as ``api_key`` v``version``; its decoded response."""
        self.correlation += 1
        header = RequestHeader(api_key, version, self.correlation, self.client_id)
        self.sock.sendall(encode_request(header, request))
        size = struct.unpack(">i", self._exactly(4))[0]
        got, response = decode_response(self._exactly(size), api_key, version)
        if got != self.correlation:
            raise AssertionError(f"correlation id {got}, expected {self.correlation}")
        return response

    def _exactly(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed by the broker")
            buf += chunk
        return bytes(buf)

    def close(self) -> None:
        self.sock.close()
