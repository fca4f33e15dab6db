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

Memory limits (see ``docs/broker.md``, "Limits"):

* request bytes: each frame reserves its size from the broker's
  :class:`~riverbed.broker.limits.MemoryPool` (``queued.max.request.bytes``) once its
  size prefix is read, *before* its body is buffered; a frame that does not fit stops
  this connection reading until bytes are released.  The reservation is released when
  the frame's handler has finished (its response is known), or when the connection
  closes;
* response bytes: a Fetch is dispatched only while this connection's unwritten response
  bytes — the transport's write buffer plus, for every Fetch not yet handed to the
  transport, the most it may return (its limits, capped by the broker's
  ``fetch.max.bytes``) — are below ``riverbed.max.queued.response.bytes.per.connection``.
  Frames behind a held Fetch wait with it (responses stay in order) and reading stops.
  So a client that never reads its responses holds at most the budget plus one fetch
  response, and its requests stay in the kernel's socket buffer;
* at most ``max_in_flight`` requests are dispatched and unanswered at once.

Idle time: :attr:`KafkaConnection.last_active` is the monotonic time of the last
complete request received or response written; the broker closes connections with
nothing in flight that stay idle past ``connections.max.idle.ms``.  Bytes of an
unfinished frame do not count as activity, so a client trickling a frame holds its
reservation at most that long.

Throttling (KIP-219): after writing a response whose ``throttle_time_ms`` is positive (a
Produce or Fetch over its client quota, :mod:`riverbed.broker.handlers.throttling`), the
connection is muted for that long: it stops reading and dispatches nothing more, then
resumes; a later throttle extends the mute, never shortens it.

Metrics (when the broker has them, :mod:`riverbed.broker.metrics`): each request handed
to a handler is timed from dispatch until its response is known, and each connection
counted per listener while open.

Reading (issue 18.1): the connection is an :class:`asyncio.BufferedProtocol`.  Reads land
in a scratch buffer (one per thread) and are copied out once, as ``data_received`` gets
them from a plain protocol; but a frame of :data:`_DIRECT_MIN` bytes or more (a Produce of
record batches) whose size prefix has arrived is received *in place*: the transport reads
the rest of its body straight into a ``bytearray`` of the frame's size, which becomes the
frame (no per-read ``bytes`` and no join of the pieces).  The frame's pool reservation is
taken before that buffer exists, as for every frame.

After a frame received in place, the connection asks the transport for its next 4 bytes
only (the next size prefix), not a scratch buffer's worth: a producer's next request is
most likely large too, and so its body is never read into the scratch buffer, copied out
as ``bytes`` and copied again into its frame (a quarter of a 1 MiB frame went that way
when the scratch buffer was 256 KiB).  A small frame ends that until the next large one;
it costs one more ``recv`` per large frame.

Those buffers are reused (each loop thread keeps the last :data:`_POOL_FRAMES` of them,
each at most :data:`_POOL_FRAME_MAX` bytes): a new in-place frame takes a kept buffer at
least its size that nothing references any more (no memoryview of it is alive: no
decoded request, pending response or held frame still points into it; CPython's reference
count says so exactly), else a new one; the frame is then the buffer's first ``size``
bytes.  A fresh ``bytearray(size)`` is zero-filled by Python, a write of every byte
before the socket's data overwrites it: reuse saves that pass (issue 18.1).  Every byte
of a frame is received before it is dispatched, so no byte of an earlier frame is ever
seen.  The kept buffers are idle memory outside ``queued.max.request.bytes``, like the
free heap the allocator keeps (:mod:`riverbed.allocator`): at most
``_POOL_FRAMES * _POOL_FRAME_MAX`` (16 MiB) per loop thread.

Event-loop only.  A crash (or close) drops pending responses; appends already made stay.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import struct
import sys
import threading
import time
from collections import deque
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from riverbed.broker.barrier import Barrier
from riverbed.broker.context import ANONYMOUS, RequestContext
from riverbed.broker.handlers import sasl_authenticate, sasl_handshake
from riverbed.broker.handlers.fetch import API_KEY as FETCH_KEY
from riverbed.broker.handlers.fetch import read_limit
from riverbed.broker.request_decoding import decode_request
from riverbed.broker.security.endpoint import ListenerEndpoint
from riverbed.broker.security.sasl import SASL_AUTHENTICATE_KEY, SASL_HANDSHAKE_KEY, SaslSession
from riverbed.broker.security.tls import certificate_principal
from riverbed.errors import DecodeError, UnsupportedVersionError
from riverbed.protocol.framing import RequestHeader, encode_response_parts
from riverbed.protocol.messages import FetchRequest

if TYPE_CHECKING:
    from riverbed.broker.server import Broker

log = logging.getLogger(__name__)

_SIZE = struct.Struct(">i")
_API_KEY = struct.Struct(">h")
_NO_RESPONSE = object()
# The transport's write-buffer high-water mark (asyncio's default), lowered to the
# response budget when that is smaller so pause_writing/resume_writing fire around it.
_WRITE_HIGH_WATER = 64 << 10
_CONNECTION_IDS = itertools.count(1)  # RequestContext.connection_id (share sessions)
# A frame at least this big is received in place (see "Reading" in the module docstring).
_DIRECT_MIN = 64 << 10
# Reads of smaller frames go through a scratch buffer of this size, one per thread (the
# transport fills it and calls buffer_updated at once, on the loop's thread).
_SCRATCH_SIZE = 256 << 10
_scratch = threading.local()
# In-place frame buffers kept for reuse, per thread (see "Reading" in the module docstring).
_POOL_FRAMES = 4
_POOL_FRAME_MAX = 4 << 20
# sys.getrefcount of a kept buffer nothing else references, in _take_frame: the pool's
# list, the local name and getrefcount's own argument.
_IDLE_REFS = 3


def _scratch_buffer() -> memoryview:
    view: memoryview | None = getattr(_scratch, "view", None)
    if view is None:
        view = _scratch.view = memoryview(bytearray(_SCRATCH_SIZE))
    return view


def _frame_pool() -> list[bytearray]:
    pool: list[bytearray] | None = getattr(_scratch, "frames", None)
    if pool is None:
        pool = _scratch.frames = []
    return pool


def _take_frame(size: int) -> memoryview:
    """A writable view of ``size`` bytes for an in-place frame: the start of a kept buffer
    nothing references any more, else of a new ``bytearray(size)``."""
    pool = _frame_pool()
    for i in range(len(pool)):
        buf = pool[i]
        if len(buf) >= size and sys.getrefcount(buf) == _IDLE_REFS:
            del pool[i]
            return memoryview(buf)[:size]
    return memoryview(bytearray(size))


def _keep_frame(buf: bytearray) -> None:
    """Offer a received frame's buffer for reuse (taken once its views are gone)."""
    if len(buf) <= _POOL_FRAME_MAX:
        pool = _frame_pool()
        pool.append(buf)
        if len(pool) > _POOL_FRAMES:
            del pool[0]


class _Pending:
    """A slot in the response queue: the header and, once known, the response.

    ``reserved``: request-pool bytes held until the handler finishes; ``bound``: for a
    Fetch, response bytes counted against the connection's budget until written.
    """

    __slots__ = ("bound", "header", "ready", "reserved", "response")

    def __init__(self, header: RequestHeader, reserved: int = 0, bound: int = 0) -> None:
        self.header = header
        self.response: Any = None
        self.ready = False
        self.reserved = reserved
        self.bound = bound


class KafkaConnection(asyncio.BufferedProtocol):
    """asyncio protocol for one client socket (see the module docstring)."""

    def __init__(self, broker: Broker, endpoint: ListenerEndpoint | None = None) -> None:
        self._broker = broker
        self.connection_id = next(_CONNECTION_IDS)
        # Security (riverbed.broker.security): the listener this connection came on, its
        # SASL session on SASL listeners, and the principal an authorizer would check.
        self._endpoint = endpoint
        self._advertised = endpoint.advertised if endpoint is not None else None
        self.sasl: SaslSession | None = None
        self.principal = ANONYMOUS
        config = broker.config
        self._max_frame = config.socket_request_max_bytes
        self._max_in_flight = config.max_in_flight_requests_per_connection
        self._response_budget = config.max_queued_response_bytes
        self._fetch_max_bytes = config.fetch_max_bytes
        self._pool = broker.request_pool
        self._transport: asyncio.Transport | None = None
        self._chunks: list[bytes] = []
        self._buffered = 0
        self._need = 4
        self._head_reserved = 0  # pool bytes reserved for the frame being received
        # A large frame being received in place (a view of exactly its size, see
        # _take_frame), and how much of it has arrived.
        self._direct: memoryview | None = None
        self._direct_filled = 0
        # The last frame was received in place: read the next size prefix alone.
        self._prefix_only = False
        self._memory_wait = False  # waiting for the pool to admit the next frame
        self._pending: deque[_Pending] = deque()
        self._barrier: _Pending | None = None  # a Barrier's slot: later frames wait
        # Frames received but not dispatched yet (behind a barrier, the in-flight cap or
        # the response budget), with their pool reservations.
        self._held: deque[tuple[memoryview, int]] = deque()
        self._fetch_bound = 0  # sum of _Pending.bound over self._pending
        self._tasks: set[asyncio.Future[Any]] = set()
        self._reading_paused = False
        self._writing_paused = False
        self._muted: asyncio.TimerHandle | None = None  # throttled until this fires
        self._pumping = False
        self._closing = False
        self._counted = False  # counted in the broker's connection quotas
        self.last_active = time.monotonic()
        self.peer = "?"
        self.peer_ip = "127.0.0.1"

    # -- asyncio.Protocol ---------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]  # uvloop's is not a subclass
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        if isinstance(peer, tuple):
            self.peer_ip = str(peer[0])
        if not self._broker.quotas.try_open(self.peer_ip):
            self._closing = True
            transport.abort()  # type: ignore[attr-defined]
            return
        self._counted = True
        endpoint = self._endpoint
        if endpoint is not None and endpoint.ssl_context is not None:
            # asyncio calls connection_made after the TLS handshake: the cert is known.
            self.principal = certificate_principal(transport.get_extra_info("peercert"))
        if endpoint is not None and endpoint.sasl is not None:
            clock = self._broker.clock
            self.sasl = SaslSession(endpoint.sasl, self._broker.scram_credentials.get, clock.now_ms)
        high = min(_WRITE_HIGH_WATER, self._response_budget)
        transport.set_write_buffer_limits(high=high)  # type: ignore[attr-defined]
        self._broker.connections.add(self)
        if self._broker.metrics is not None:
            self._broker.metrics.connection_opened(self._listener_name())

    def connection_lost(self, exc: Exception | None) -> None:
        self._closing = True
        if self._counted:
            self._counted = False
            self._broker.quotas.closed(self.peer_ip)
            if self._broker.metrics is not None:
                self._broker.metrics.connection_closed(self._listener_name())
        self._broker.connections.discard(self)
        self._broker.connection_closed(self.connection_id)  # share sessions opened on it
        if self._muted is not None:
            self._muted.cancel()
        for task in list(self._tasks):
            task.cancel()
        self._pool.cancel(self)
        # One release per frame: the pool tells large frames from small ones by size.
        reservations = [self._head_reserved, *(s.reserved for s in self._pending)]
        reservations += [reserved for _, reserved in self._held]
        self._head_reserved = 0
        self._pending.clear()
        self._held.clear()
        self._chunks = []
        self._direct = None
        for reserved in reservations:
            if reserved:
                self._pool.release(reserved)

    def _listener_name(self) -> str:
        return self._endpoint.name if self._endpoint is not None else "PLAINTEXT"

    def pause_writing(self) -> None:
        self._writing_paused = True
        self._update_reading()

    def resume_writing(self) -> None:
        self._writing_paused = False
        self._pump()

    def get_buffer(self, sizehint: int) -> memoryview:
        direct = self._direct
        if direct is not None:
            return direct[self._direct_filled :]
        if self._prefix_only and not self._chunks:
            return _scratch_buffer()[:4]
        return _scratch_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        if self._direct is not None:
            self._direct_filled += nbytes
            if self._direct_filled >= len(self._direct):
                self._direct_done()
            return
        self.data_received(bytes(_scratch_buffer()[:nbytes]))

    def _start_direct(self, partial: memoryview, size: int) -> None:
        """Receive the rest of a ``size``-byte frame body in place (reserved already)."""
        frame = _take_frame(size)
        frame[: len(partial)] = partial
        self._direct = frame
        self._direct_filled = len(partial)

    def _direct_done(self) -> None:
        """The in-place frame is complete: hold it for dispatch, like any frame."""
        frame, self._direct = self._direct, None
        assert frame is not None
        reserved, self._head_reserved = self._head_reserved, 0
        self._need = 4
        self._prefix_only = True
        self._held.append((frame, reserved))
        _keep_frame(frame.obj)  # type: ignore[arg-type]  # always a bytearray's view
        self.last_active = time.monotonic()
        self._pump()

    def data_received(self, data: bytes) -> None:
        if self._closing:
            return
        direct = self._direct
        if direct is not None:  # bytes handed over directly (tests, non-buffered paths)
            filled = self._direct_filled
            take = min(len(data), len(direct) - filled)
            direct[filled : filled + take] = memoryview(data)[:take]
            self._direct_filled = filled + take
            if self._direct_filled < len(direct):
                return
            self._direct_done()
            data = data[take:]
            if not data or self._closing:
                return
        if self._chunks:
            self._chunks.append(data)
            self._buffered += len(data)
            if self._buffered < self._need:
                return
            data = b"".join(self._chunks)
            self._chunks = []
            self._buffered = 0
        self._parse(data)

    def _parse(self, data: bytes) -> None:
        """Cut ``data`` into frames, reserving each from the pool before it is buffered."""
        view = memoryview(data)
        end = len(data)
        pos = 0
        while not self._closing:
            if end - pos < 4:
                self._need = 4
                break
            (size,) = _SIZE.unpack_from(data, pos)
            if size < 0 or size > self._max_frame:
                self._refuse_size(size)
                return
            if not self._head_reserved:
                if not self._pool.try_reserve(size):
                    self._wait_for_memory()
                    break
                self._head_reserved = size
            if size < _DIRECT_MIN:
                self._prefix_only = False
            if end - pos - 4 < size:
                if size >= _DIRECT_MIN:
                    self._start_direct(view[pos + 4 : end], size)
                    pos = end
                    break
                self._need = 4 + size
                break
            reserved, self._head_reserved = self._head_reserved, 0
            self._held.append((view[pos + 4 : pos + 4 + size], reserved))
            self.last_active = time.monotonic()
            pos += 4 + size
        if pos < end and not self._closing:
            rest = data[pos:]
            self._chunks = [rest]
            self._buffered = len(rest)
        self._pump()

    def _refuse_size(self, size: int) -> None:
        if size < 0:
            log.warning(
                "closing connection from %s: negative frame size %d (not a Kafka client, "
                "or a corrupt stream)",
                self.peer,
                size,
            )
        else:
            log.warning(
                "closing connection from %s: frame of %d bytes is over "
                "socket.request.max.bytes (%d)",
                self.peer,
                size,
                self._max_frame,
            )
        self.abort()

    def _wait_for_memory(self) -> None:
        self._memory_wait = True
        loop = asyncio.get_running_loop()

        def wake() -> None:  # a release may come from deep in another handler: defer
            loop.call_soon(self._on_memory)

        self._pool.wait(self, wake)

    def _on_memory(self) -> None:
        """The pool released bytes: retry the frame that did not fit."""
        if self._closing or not self._memory_wait:
            return
        self._memory_wait = False
        data = b"".join(self._chunks)
        self._chunks = []
        self._buffered = 0
        self._parse(data)

    # -- requests -----------------------------------------------------------------------
    def _pump(self) -> None:
        """Dispatch held frames, in order, while nothing holds them back (not re-entrant:
        a response flushed by a dispatch lands here again and leaves the loop to us)."""
        if self._pumping:
            return
        self._pumping = True
        held = self._held
        try:
            while held and self._barrier is None and self._muted is None and not self._closing:
                if len(self._pending) >= self._max_in_flight:
                    break
                frame, reserved = held[0]
                if (
                    len(frame) >= 2
                    and _API_KEY.unpack_from(frame, 0)[0] == FETCH_KEY
                    and self._unwritten_response_bytes() >= self._response_budget
                ):
                    break
                held.popleft()
                self._dispatch(frame, reserved)
        finally:
            self._pumping = False
        self._update_reading()

    def _unwritten_response_bytes(self) -> int:
        transport = self._transport
        buffered = transport.get_write_buffer_size() if transport is not None else 0
        return buffered + self._fetch_bound

    def _dispatch(self, frame: memoryview, reserved: int) -> None:
        """Decode and run one frame; its pool reservation ends with its handler."""
        slot = self._run(frame, reserved)
        if slot is None and reserved:
            self._pool.release(reserved)

    def _run(self, frame: memoryview, reserved: int) -> _Pending | None:
        """The pending slot that now holds ``reserved``, or None (caller releases it)."""
        if self.sasl is not None and self.sasl.raw_tokens:
            self._raw_sasl_token(frame)
            return None
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
                return None
            self._enqueue_ready(*fallback)
            return None
        except DecodeError as exc:
            log.warning("closing connection from %s: malformed request: %s", self.peer, exc)
            self.abort()
            return None
        if self.sasl is not None and not self._sasl_admits(header, request):
            return None
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
            return None
        if handler is None:
            log.warning(
                "closing connection from %s: api key %d is not served", self.peer, header.api_key
            )
            self.abort()
            return None
        bound = 0
        if isinstance(request, FetchRequest):
            bound = min(read_limit(request), self._fetch_max_bytes)
        # What the handler may know of this connection (the client's host, reported by
        # JoinGroup and ConsumerGroupHeartbeat) travels in its request context.
        ctx = RequestContext(
            header, self.peer_ip, self.principal, self._advertised, self.connection_id
        )
        metrics = self._broker.metrics
        started = time.perf_counter()
        try:
            result = handler(ctx, request)
        except Exception:
            log.exception(
                "closing connection from %s: handler for api key %d failed",
                self.peer,
                header.api_key,
            )
            self.abort()
            return None
        barrier = False
        if isinstance(result, Barrier):
            barrier = True
            result = result.awaitable
        if isinstance(result, Awaitable):
            slot = _Pending(header, reserved, bound)
            self._fetch_bound += bound
            if barrier:
                self._barrier = slot
            self._pending.append(slot)
            task = asyncio.ensure_future(result)
            self._tasks.add(task)
            if metrics is None:
                task.add_done_callback(lambda t, s=slot: self._on_done(t, s))  # type: ignore[misc]
            else:  # one callback, not two: each costs microseconds
                task.add_done_callback(
                    lambda t, s=slot, r=request, st=started: self._on_done_measured(t, s, r, st)  # type: ignore[misc]
                )
            return slot
        if metrics is not None:
            metrics.request_done(header, request, result, started)
        self._enqueue_ready(header, result, bound)
        return None

    def _sasl_admits(self, header: RequestHeader, request: Any) -> bool:
        """On a SASL listener: False when the session answered the request itself
        (SaslHandshake, SaslAuthenticate) or refused it (closing the connection, as Kafka
        does for any other API before authentication or after the session expired)."""
        session = self.sasl
        assert session is not None
        refused = session.admits(header.api_key)
        if refused is not None:
            log.warning("closing connection from %s: %s", self.peer, refused)
            self.abort()
            return False
        if header.api_key not in (SASL_HANDSHAKE_KEY, SASL_AUTHENTICATE_KEY):
            return True
        ctx = RequestContext(header, self.peer_ip, self.principal, self._advertised)
        response: Any
        if header.api_key == SASL_HANDSHAKE_KEY:
            response, close = sasl_handshake.handle_session(session, ctx, request)
        else:
            response, close = sasl_authenticate.handle_session(session, ctx, request)
        if session.principal is not None:
            self.principal = session.principal
        self._enqueue_ready(header, response)
        if close:
            log.info(  # Kafka: "Failed authentication with /IP (reason)"
                "closing connection from %s: SASL %s failed (error %d: %s)",
                self.peer,
                "handshake" if header.api_key == SASL_HANDSHAKE_KEY else "authentication",
                response.error_code,
                getattr(response, "error_message", None)
                or f"mechanism {getattr(request, 'mechanism', '?')!r}",
            )
            self.close()
        return False

    def _raw_sasl_token(self, frame: memoryview) -> None:
        """After a v0 SaslHandshake: ``frame`` is a raw SASL token, answered with a raw
        size-prefixed token.  Every request before it was answered synchronously, so no
        response is pending ahead of this one; a failure closes without an answer."""
        session = self.sasl
        assert session is not None
        result = session.authenticate(bytes(frame), 0)
        if result.close or self._pending or self._transport is None:
            log.info(
                "closing connection from %s: SASL authentication failed (%s)",
                self.peer,
                result.error_message,
            )
            self.abort()
            return
        if session.principal is not None:
            self.principal = session.principal
        self.last_active = time.monotonic()
        self._transport.write(_SIZE.pack(len(result.auth_bytes)) + result.auth_bytes)

    def _enqueue_ready(self, header: RequestHeader, response: Any, bound: int = 0) -> None:
        if response is None and not self._pending:
            return  # no response (acks=0) and nothing ahead of it
        slot = _Pending(header, 0, bound)
        self._fetch_bound += bound
        slot.response = _NO_RESPONSE if response is None else response
        slot.ready = True
        self._pending.append(slot)
        self._flush()

    def _on_done_measured(
        self, task: asyncio.Future[Any], slot: _Pending, request: Any, started: float
    ) -> None:
        metrics = self._broker.metrics
        if metrics is not None:
            metrics.task_done(task, slot.header, request, started)
        self._on_done(task, slot)

    def _on_done(self, task: asyncio.Future[Any], slot: _Pending) -> None:
        self._tasks.discard(task)
        if task.cancelled() or self._closing:
            return
        if slot.reserved:
            reserved, slot.reserved = slot.reserved, 0
            self._pool.release(reserved)
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
        if slot is self._barrier:
            self._barrier = None
        self._flush()

    def _flush(self) -> None:
        out: list[bytearray | memoryview | bytes] = []
        pending = self._pending
        throttle_ms = 0
        while pending and pending[0].ready:
            slot = pending.popleft()
            self._fetch_bound -= slot.bound
            if slot.response is not _NO_RESPONSE:
                out += encode_response_parts(slot.header, slot.response)
                throttle_ms = max(throttle_ms, getattr(slot.response, "throttle_time_ms", 0))
        if out and self._transport is not None and not self._closing:
            self.last_active = time.monotonic()
            if len(out) == 1:
                self._transport.write(out[0])
            else:
                self._transport.writelines(out)  # uvloop: one writev, nothing copied
            if throttle_ms > 0:
                self._mute(throttle_ms)
        self._pump()

    def _mute(self, throttle_ms: int) -> None:
        """Read and dispatch nothing for ``throttle_ms`` (KIP-219 channel muting)."""
        loop = asyncio.get_running_loop()
        until = loop.time() + throttle_ms / 1000
        if self._muted is not None:
            if self._muted.when() >= until:
                return
            self._muted.cancel()
        self._muted = loop.call_at(until, self._unmute)

    def _unmute(self) -> None:
        self._muted = None
        if not self._closing:
            self._pump()

    def _update_reading(self) -> None:
        if self._transport is None or self._closing:
            return
        should_pause = (
            self._writing_paused
            or self._muted is not None
            or self._memory_wait
            or len(self._pending) + len(self._held) >= self._max_in_flight
            or (bool(self._held) and self._barrier is None)  # held back by the budget
        )
        if should_pause and not self._reading_paused:
            self._reading_paused = True
            self._transport.pause_reading()
        elif not should_pause and self._reading_paused:
            self._reading_paused = False
            self._transport.resume_reading()

    # -- idle time, shutdown ------------------------------------------------------------
    def idle(self) -> bool:
        """Nothing in flight, held or unwritten: the idle timeout may close it."""
        if self._pending or self._held or self._tasks:
            return False
        transport = self._transport
        return transport is None or transport.get_write_buffer_size() == 0

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
