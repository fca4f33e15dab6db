"""The cleaner's key -> latest offset map, bounded in memory (Kafka's ``SkimpyOffsetMap``).

Keys are stored as their 16-byte MD5 digest (as Kafka does), so the map's size does not
depend on key sizes; two keys colliding would make the cleaner drop the older one's
records, which MD5 makes negligible.  The map holds at most
``memory_bytes // ENTRY_BYTES`` entries, where :data:`ENTRY_BYTES` is what one entry
really costs in CPython (digest object, int, dict slot: ~137 bytes measured with
tracemalloc, rounded up), so ``log.cleaner.dedupe.buffer.size`` bounds real memory, not
a notional 24 bytes an entry as in Kafka.

Filling is batch-atomic: :meth:`put_batch` adds every key of one record batch or none,
so the offsets the map covers always end at a batch boundary (``latest_offset``).

Not thread-safe: used by one cleaner pass at a time.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

ENTRY_BYTES = 144
DEFAULT_DEDUPE_BUFFER_SIZE = 128 * 1024 * 1024  # Kafka's log.cleaner.dedupe.buffer.size


def _digest(key: bytes) -> bytes:
    return hashlib.md5(key, usedforsecurity=False).digest()


class OffsetMap:
    """Bounded map of key digest -> the largest offset seen for that key."""

    def __init__(self, memory_bytes: int = DEFAULT_DEDUPE_BUFFER_SIZE) -> None:
        self.capacity = max(memory_bytes // ENTRY_BYTES, 1)
        self._map: dict[bytes, int] = {}
        self.latest_offset = -1

    def __len__(self) -> int:
        return len(self._map)

    def put_batch(self, keyed: Iterable[tuple[bytes, int]], last_offset: int) -> bool:
        """Record ``(key, offset)`` pairs of one batch ending at ``last_offset``.

        Returns False, adding nothing, when the new keys would not fit.
        """
        digests = [(_digest(k), o) for k, o in keyed]
        new = {d for d, _o in digests if d not in self._map}
        if len(self._map) + len(new) > self.capacity:
            return False
        for d, o in digests:
            self._map[d] = o
        self.latest_offset = max(self.latest_offset, last_offset)
        return True

    def get(self, key: bytes) -> int:
        """The latest offset recorded for ``key``, or -1."""
        return self._map.get(_digest(key), -1)
