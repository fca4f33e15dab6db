"""The cache view: Redis, one string per key, offsets in a hash.

Layout, under a key prefix ``P`` (default ``riverbed:view``)::

    P:row:<view key>     the row as canonical JSON (deleted on a delete / tombstone)
    P:offsets            hash  "<topic>/<partition>" -> high-water offset

:meth:`CacheView.apply` ``WATCH``es ``P:offsets``, reads it, then writes the rows and the
new offsets in one ``MULTI``/``EXEC``: Redis runs the transaction as a unit, so a client
SIGKILLed before ``EXEC`` leaves nothing and one killed after it leaves the batch and its
offsets.  Durability of the Redis server itself is its own (RDB/AOF settings): a Redis
that loses writes loses the offsets with them, so the view stays consistent and the
driver re-reads from the older offsets.  If another writer changes the offsets between
``WATCH`` and ``EXEC`` the batch is retried on the new offsets.  Not thread-safe.
"""

from __future__ import annotations

import json
from typing import Any

import redis

from riverbed.views.change import Change, ViewError, newest_per_key


class CacheView:
    """The latest row per key in Redis (see the module docstring)."""

    def __init__(self, url: str, prefix: str = "riverbed:view") -> None:
        self._client: redis.Redis = redis.Redis.from_url(url)
        self._prefix = prefix
        self._offsets_key = f"{prefix}:offsets"
        try:
            self._client.ping()
        except redis.RedisError as exc:
            raise ViewError(f"cache view {url}: {exc}") from None

    def high_water_offsets(self) -> dict[tuple[str, int], int]:
        raw: dict[bytes, bytes] = self._client.hgetall(self._offsets_key)  # type: ignore[assignment]
        return _parse_offsets(raw)

    def apply(self, changes: list[Change]) -> int:
        try:
            with self._client.pipeline(transaction=True) as pipe:
                while True:
                    try:
                        pipe.watch(self._offsets_key)  # type: ignore[no-untyped-call]
                        current = _parse_offsets(pipe.hgetall(self._offsets_key))  # type: ignore[arg-type]
                        latest, marks = newest_per_key(changes, current)
                        pipe.multi()
                        for key, change in latest.items():
                            name = f"{self._prefix}:row:{key}"
                            if change.row is None:
                                pipe.delete(name)
                            else:
                                pipe.set(name, json.dumps(change.row, sort_keys=True))
                        if marks:
                            pipe.hset(
                                self._offsets_key,
                                mapping={f"{t}/{p}": o for (t, p), o in marks.items()},
                            )
                        pipe.execute()
                        return len(latest)
                    except redis.WatchError:
                        continue
        except redis.RedisError as exc:
            raise ViewError(f"cache view: {exc}") from None

    def get(self, key: str) -> dict[str, Any] | None:
        """The cached row of a view key, or None."""
        raw = self._client.get(f"{self._prefix}:row:{key}")
        return None if raw is None else json.loads(raw)

    def snapshot(self) -> dict[str, dict[str, Any]]:
        marker = f"{self._prefix}:row:"
        out: dict[str, dict[str, Any]] = {}
        for name in self._client.scan_iter(match=f"{marker}*", count=1000):
            key = name.decode()[len(marker) :]
            row = self.get(key)
            if row is not None:
                out[key] = row
        return dict(sorted(out.items()))

    def close(self) -> None:
        self._client.close()


def _parse_offsets(raw: dict[bytes, bytes]) -> dict[tuple[str, int], int]:
    marks: dict[tuple[str, int], int] = {}
    for field, value in raw.items():
        topic, _, partition = field.decode().rpartition("/")
        marks[(topic, int(partition))] = int(value)
    return marks
