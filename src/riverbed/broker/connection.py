"""One client connection: Kafka framing, pipelining, in-order responses, backpressure.

Wire format: every request and response is a frame ``int32 size`` + ``size`` bytes.  A
size above ``socket.request.max.bytes`` (or negative) is refused as soon as the 4-byte
prefix arrives, before the body is read: the connection is closed and logged, as Kafka does.
A frame that does not decode closes this connection only.

Pipelining: frames are decoded and handed to their handler *in arrival order, on the
event loop, synchronously*; a handler either returns its response (or None: no response,
e.g. Produce with acks=0) or an awaitable for it (fsync waits, long-poll fetches).  So
state changes (appends) happen in request order, while slow requests do not block the
requests behind them (except behind a :class:`~riverbed.broker.barrier.Barrier`: a
change made on a worker thread, such as creating a topic, holds back the frames after it
until it is done); responses are still written strictly in request order (a queue
whose head is flushed as soon as it is ready, consecutive ready responses coalesced in a
single write).  Responses are written as buffer lists (:func:`encode_response_parts`):
the record bytes a Fetch read from the log go to the socket without being copied into
the response (uvloop's ``writelines`` is one ``writev``).  At most ``max_in_flight``
requests are pending per connection; past that, and while the socket's write buffer is
above its high-water mark (a slow reader), the connection stops reading, which pushes
back on that client alone.

Event-loop only.  A crash (or close) drops pending responses; appends already made stay.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from collections import deque
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from riverbed.broker.barrier import Barrier
from riverbed.broker.handlers.group_common import CLIENT_ADDRESS
from riverbed.broker.request_decoding import decode_request
from riverbed.errors import DecodeError, UnsupportedVersionError
from riverbed.protocol.framing import RequestHeader, encode_response_parts

if TYPE_CHECKING:
    from riverbed.broker.server import Broker

log = logging.getLogger(__name__)

_SIZE = struct.Struct(">i")
_NO_RESPONSE = object()


class _Pending:
    """A slot in the response queue: the header and, once known, the response."""

    __slots__ = ("header", "ready", "response")

    def __init__(self, header: RequestHeader) -> None:
        self.header = header
        self.response: Any = None
        self.ready = False


class KafkaConnection(asyncio.Protocol):
    """asyncio protocol for one client socket (see the module docstring)."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        self._max_frame = broker.config.socket_request_max_bytes
        self._max_in_flight = broker.config.max_in_flight_requests_per_connection
        self._transport: asyncio.Transport | None = None
        self._chunks: list[bytes] = []
        self._buffered = 0
        self._need = 4
        self._pending: deque[_Pending] = deque()
        self._barrier: _Pending | None = None  # a Barrier's slot: later frames wait
        self._held: deque[memoryview] = deque()  # frames received behind the barrier
        self._tasks: set[asyncio.Future[Any]] = set()
        self._reading_paused = False
        self._writing_paused = False
        self._closing = False
        self.peer = "?"
        self.peer_ip = "127.0.0.1"

    # -- asyncio.Protocol ---------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]  # uvloop's is not a subclass
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        if isinstance(peer, tuple):
            self.peer_ip = str(peer[0])
        self._broker.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._closing = True
        self._broker.connections.discard(self)
        for task in list(self._tasks):
            task.cancel()
        self._pending.clear()

    def pause_writing(self) -> None:
        self._writing_paused = True
        self._update_reading()

    def resume_writing(self) -> None:
        self._writing_paused = False
        self._update_reading()

    def data_received(self, data: bytes) -> None:
        if self._closing:
            return
        if self._chunks:
            self._chunks.append(data)
            self._buffered += len(data)
            if self._buffered < self._need:
                return
            data = b"".join(self._chunks)
            self._chunks = []
            self._buffered = 0
        view = memoryview(data)
        end = len(data)
        pos = 0
        while not self._closing:
            if end - pos < 4:
                self._need = 4
                break
            (size,) = _SIZE.unpack_from(data, pos)
            if size < 0 or size > self._max_frame:
                log.warning(
                    "closing connection from %s: frame of %d bytes is over "
                    "socket.request.max.bytes (%d)",
                    self.peer,
                    size,
                    self._max_frame,
                )
                self.abort()
                return
            if end - pos - 4 < size:
                self._need = 4 + size
                break
            frame = view[pos + 4 : pos + 4 + size]
            if self._barrier is None:
                self._dispatch(frame)
            else:
                self._held.append(frame)
            pos += 4 + size
        if pos < end and not self._closing:
            rest = data[pos:]
            self._chunks = [rest]
            self._buffered = len(rest)

    # -- requests -----------------------------------------------------------------------
    def _dispatch(self, frame: memoryview) -> None:
        try:
            header, request = decode_request(frame)
        except UnsupportedVersionError as exc:
            parsed: RequestHeader | None = getattr(exc, "header", None)
            fallback = None
            if parsed is not None:
                fallback = self._broker.unsupported_version_response(parsed)
            if fallback is None:
                log.warning("closing connection from %s: %s", self.peer, exc)
                self.abort()
                return
            self._enqueue_ready(*fallback)
            return
        except DecodeError as exc:
            log.warning("closing connection from %s: malformed request: %s", self.peer, exc)
            self.abort()
            return
        handler = self._broker.handler_for(header.api_key)
        if handler is not None and header.api_version < self._broker.min_accepted_version(
            header.api_key
        ):
            log.warning(
                "closing connection from %s: api key %d v%d is not supported",
                self.peer,
                header.api_key,
                header.api_version,
            )
            self.abort()
            return
        if handler is None:
            log.warning(
                "closing connection from %s: api key %d is not served", self.peer, header.api_key
            )
            self.abort()
            return
        # Handlers that report the client's host (JoinGroup, ConsumerGroupHeartbeat) read
        # it from this context variable while they run; they run synchronously here.
        token = CLIENT_ADDRESS.set(self.peer_ip)
        try:
            result = handler(self._broker, header, request)
        except Exception:
            log.exception(
                "closing connection from %s: handler for api key %d failed",
                self.peer,
                header.api_key,
            )
            self.abort()
            return
        finally:
            CLIENT_ADDRESS.reset(token)
        barrier = False
        if isinstance(result, Barrier):
            barrier = True
            result = result.awaitable
        if isinstance(result, Awaitable):
            slot = _Pending(header)
            if barrier:
                self._barrier = slot
            self._pending.append(slot)
            task = asyncio.ensure_future(result)
            self._tasks.add(task)
            task.add_done_callback(lambda t, s=slot: self._on_done(t, s))  # type: ignore[misc]
            self._update_reading()
        else:
            self._enqueue_ready(header, result)

    def _enqueue_ready(self, header: RequestHeader, response: Any) -> None:
        if response is None and not self._pending:
            return  # no response (acks=0) and nothing ahead of it
        slot = _Pending(header)
        slot.response = _NO_RESPONSE if response is None else response
        slot.ready = True
        self._pending.append(slot)
        self._flush()

    def _on_done(self, task: asyncio.Future[Any], slot: _Pending) -> None:
        self._tasks.discard(task)
        if task.cancelled() or self._closing:
            return
        exc = task.exception()
        if exc is not None:
            log.error(
                "closing connection from %s: handler for api key %d failed",
                self.peer,
                slot.header.api_key,
                exc_info=exc,
            )
            self.abort()
            return
        response = task.result()
        slot.response = _NO_RESPONSE if response is None else response
        slot.ready = True
        self._flush()
        if slot is self._barrier:
            self._barrier = None
            while self._held and self._barrier is None and not self._closing:
                self._dispatch(self._held.popleft())
            self._update_reading()

    def _flush(self) -> None:
        out: list[bytearray | memoryview | bytes] = []
        pending = self._pending
        while pending and pending[0].ready:
            slot = pending.popleft()
            if slot.response is not _NO_RESPONSE:
                out += encode_response_parts(slot.header, slot.response)
        if out and self._transport is not None and not self._closing:
            if len(out) == 1:
                self._transport.write(out[0])
            else:
                self._transport.writelines(out)  # uvloop: one writev, nothing copied
        self._update_reading()

    def _update_reading(self) -> None:
        if self._transport is None or self._closing:
            return
        should_pause = (
            self._writing_paused or len(self._pending) + len(self._held) >= self._max_in_flight
        )
        if should_pause and not self._reading_paused:
            self._reading_paused = True
            self._transport.pause_reading()
        elif not should_pause and self._reading_paused:
            self._reading_paused = False
            self._transport.resume_reading()

    # -- shutdown -----------------------------------------------------------------------
    def in_flight_tasks(self) -> list[asyncio.Future[Any]]:
        return list(self._tasks)

    def stop_reading(self) -> None:
        """Take no new requests (shutdown); pending ones still get their responses."""
        if self._transport is not None and not self._reading_paused:
            self._reading_paused = True
            self._transport.pause_reading()
        self._max_in_flight = 0

    def close(self) -> None:
        """Close after the write buffer drains."""
        self._closing = True
        if self._transport is not None:
            self._transport.close()

    def abort(self) -> None:
        """Close now, dropping unsent responses (protocol errors)."""
        self._closing = True
        if self._transport is not None:
            self._transport.abort()
