"""Broker-wide resource limits: the request memory pool and the connection quotas.

:class:`MemoryPool` is Kafka's ``queued.max.request.bytes``: every request frame reserves
its size from the pool as soon as its 4-byte size prefix has arrived, before its body is
buffered, and gives it back once its handler has finished with it.  A connection whose
next frame does not fit stops reading (``transport.pause_reading``) and waits; the bytes
it has not read stay in the kernel's socket buffer, not in the broker.  Admission rules:

* a frame larger than a quarter of the pool (a *large* frame) fits when the pool
  stays within three quarters full with it, or when no other large frame is held and
  at most a quarter of the pool is in use (so a frame bigger than the pool - allowed
  when ``socket.request.max.bytes`` is - is admitted alone instead of waiting forever);
* any other frame (a *small* one: produce batches, metadata, offset commits) fits when
  the pool has room for it, or when the small frames held, itself included, stay within
  a quarter of the pool.  Connections stuck half-way through big frames can therefore
  never take the bytes that ordinary requests need.

So the request bytes held are at most
``max(capacity, socket.request.max.bytes + capacity // 4)``.
Waiters are woken when bytes are released; each retries and waits again if its frame
still does not fit (a large frame can be overtaken by small ones, never the reverse).

:class:`ConnectionQuotas` is ``max.connections`` and ``max.connections.per.ip``: a
connection over either limit is closed as soon as it is accepted (Kafka does the same
for the per-IP limit), with a WARNING line at most every :data:`REFUSAL_LOG_INTERVAL_S`
seconds (the count of refusals in between is in the line).

Both are event-loop only (not thread-safe); nothing here survives a restart.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable

log = logging.getLogger(__name__)

REFUSAL_LOG_INTERVAL_S = 10.0


class MemoryPool:
    """A byte budget shared by every connection (see the module docstring).

    ``capacity <= 0`` means unlimited (Kafka's ``queued.max.request.bytes=-1``).
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.used = 0
        self.large_used = 0
        self._quarter = capacity // 4
        self._waiters: dict[object, Callable[[], None]] = {}

    def try_reserve(self, size: int) -> bool:
        """Take ``size`` bytes if they fit now; False (nothing taken) if not."""
        if self.capacity <= 0:
            self.used += size
            return True
        if size > self._quarter:
            alone = not self.large_used and self.used <= self._quarter
            if not alone and self.used + size > self.capacity - self._quarter:
                return False
            self.large_used += size
        elif (
            self.used + size > self.capacity and self.used - self.large_used + size > self._quarter
        ):
            return False
        self.used += size
        return True

    def release(self, size: int) -> None:
        """Give back bytes taken by :meth:`try_reserve`; wakes the waiters."""
        self.used -= size
        if self.capacity > 0 and size > self._quarter:
            self.large_used -= size
        assert self.used >= 0 and self.large_used >= 0, "released more than reserved"
        if self._waiters:
            waiters = list(self._waiters.values())
            self._waiters.clear()
            for wake in waiters:
                wake()  # retries; calls wait() again if its frame still does not fit

    def wait(self, key: object, wake: Callable[[], None]) -> None:
        """Call ``wake()`` once, at the next release (``key`` identifies the waiter)."""
        self._waiters[key] = wake

    def cancel(self, key: object) -> None:
        self._waiters.pop(key, None)

    @property
    def waiting(self) -> int:
        return len(self._waiters)


class ConnectionQuotas:
    """Open connections, in total and per client IP, against their limits."""

    def __init__(self, max_connections: int, max_per_ip: int) -> None:
        self.max_connections = max_connections
        self.max_per_ip = max_per_ip
        self.total = 0
        self._per_ip: Counter[str] = Counter()
        self._refused_since_log = 0
        self._last_log = float("-inf")

    def try_open(self, ip: str) -> bool:
        """Count a new connection from ``ip``; False (and a log line) if over a limit."""
        if self.total >= self.max_connections:
            self._refused(ip, f"max.connections ({self.max_connections})")
            return False
        if self._per_ip[ip] >= self.max_per_ip:
            self._refused(ip, f"max.connections.per.ip ({self.max_per_ip})")
            return False
        self.total += 1
        self._per_ip[ip] += 1
        return True

    def closed(self, ip: str) -> None:
        """A connection counted by :meth:`try_open` has closed."""
        self.total -= 1
        self._per_ip[ip] -= 1
        if self._per_ip[ip] <= 0:
            del self._per_ip[ip]

    def _refused(self, ip: str, limit: str) -> None:
        self._refused_since_log += 1
        now = time.monotonic()
        if now - self._last_log >= REFUSAL_LOG_INTERVAL_S:
            log.warning(
                "refused connection from %s: %s reached (%d refused since the last such line)",
                ip,
                limit,
                self._refused_since_log,
            )
            self._last_log = now
            self._refused_since_log = 0
