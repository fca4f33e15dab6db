"""A blocking Kafka wire client for tests: one socket, Riverbed's generated codec.

:meth:`WireClient.call` sends a request (:func:`riverbed.protocol.framing.encode_request`)
and reads its response before the next one, checking its correlation id;
:meth:`WireClient.send` (or :meth:`WireClient.send_many`) and :meth:`WireClient.recv`
pipeline: responses come back in the order sent.  Not thread-safe: one caller per client.
Raises ``ConnectionError`` when the broker closes the connection mid-response and
``TimeoutError`` (``socket.timeout``) after ``timeout_s`` without a byte.  Works against
any Kafka broker that speaks the request's version.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Sequence
from typing import Any

from riverbed.protocol.framing import RequestHeader, decode_response, encode_request
from riverbed.testing.lifecycle import ClosingContext


class WireClient(ClosingContext):
    """One blocking connection to ``bootstrap`` (``HOST:PORT``); ``with WireClient(...) as
    wire`` closes it on exit."""

    def __init__(
        self, bootstrap: str, timeout_s: float = 30.0, client_id: str = "riverbed-test"
    ) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout_s)
        self.client_id = client_id
        self.correlation = 0

    def call(self, api_key: int, version: int, request: Any) -> Any:
        """Send ``request`` as ``api_key`` v``version``; its decoded response (the next
        one on the connection: nothing else may be in flight)."""
        sent = self.send(api_key, version, request)
        got, response = self.recv(api_key, version)
        if got != sent:
            raise AssertionError(f"correlation id {got}, expected {sent}")
        return response

    def send(self, api_key: int, version: int, request: Any) -> int:
        """Send ``request`` as ``api_key`` v``version`` without waiting; its correlation id
        (1, 2, ... on this connection).  Pipelined requests are answered in order: read each
        with :meth:`recv`."""
        return self.send_many([(api_key, version, request)])[0]

    def send_many(self, requests: Sequence[tuple[int, int, Any]]) -> list[int]:
        """Send each ``(api_key, version, request)`` in one write, so the broker reads them
        back to back; their correlation ids, in order."""
        frames, ids = [], []
        for api_key, version, request in requests:
            self.correlation += 1
            header = RequestHeader(api_key, version, self.correlation, self.client_id)
            frames.append(encode_request(header, request))
            ids.append(self.correlation)
        self.sock.sendall(b"".join(frames))
        return ids

    def recv_frame(self) -> bytes:
        """The next response frame's bytes (without its 4-byte size)."""
        size = struct.unpack(">i", self._exactly(4))[0]
        return self._exactly(size)

    def recv(self, api_key: int, version: int) -> tuple[int, Any]:
        """The next response, decoded as ``api_key`` v``version``: (correlation id,
        response)."""
        return decode_response(self.recv_frame(), api_key, version)

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
