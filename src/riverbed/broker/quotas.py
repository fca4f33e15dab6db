"""Client quotas: Kafka's windowed rate sensors and throttle-time arithmetic (KIP-13/55/219).

Pure: no I/O, no event loop; time comes from an injected :class:`~riverbed.clock.Clock`
(``monotonic_ms``), so tests drive it with a :class:`~riverbed.clock.ManualClock`.

Rate (Kafka's ``Rate`` over a ``SampledStat``): ``quota.window.num`` samples (11) of
``quota.window.size.seconds`` each (1 s)::

    samples   [0----)[1----)[2----) ... [10---)      one sample per window, reused round-robin
    rate      = sum(values of live samples) / window_size
    window    = now - start of the oldest live sample, but at least (num - 1) windows

A sample older than ``num x size`` is reset when measured (purged).  Because the window is
at least ``num - 1`` windows long, a fresh client may send a burst of about
``quota x (num - 1) x size`` before it is throttled, as in Kafka.

Throttle time (Kafka's ``QuotaUtils.throttleTime``): once a record pushes the measured rate
above the bound, ``round((rate - bound) / bound x window_ms)`` — how long the client must
stay silent for the rate over the window to fall back to the bound.

Quota entities and precedence (KIP-55): a quota is looked up per key (``producer_byte_rate``,
``consumer_byte_rate``, ``request_percentage``), first match wins::

    /config/users/<user>/clients/<client-id>
    /config/users/<user>/clients/<default>
    /config/users/<user>
    /config/users/<default>/clients/<client-id>
    /config/users/<default>/clients/<default>
    /config/users/<default>
    /config/clients/<client-id>
    /config/clients/<default>

The matched entity decides who shares a sensor (Kafka's metric tags): a user-only quota is
shared by all of that user's client ids, a client-id-only quota by every user with that
client id, a (user, client-id) quota by that pair alone.  No quota: never throttled.

Not thread-safe: the broker's event loop is the only caller.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Final

from riverbed.clock import Clock
from riverbed.errors import ConfigError

PRODUCER_BYTE_RATE: Final = "producer_byte_rate"
CONSUMER_BYTE_RATE: Final = "consumer_byte_rate"
REQUEST_PERCENTAGE: Final = "request_percentage"
QUOTA_KEYS_BY_ENTITY: Final = frozenset(
    {PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, REQUEST_PERCENTAGE}
)
"""The quota keys a user / client-id entity may carry (Kafka also has
``controller_mutation_rate``; not served here)."""

USER: Final = "user"
CLIENT_ID: Final = "client-id"
ENTITY_TYPES: Final = (USER, CLIENT_ID)

QUOTA_WINDOW_NUM = "quota.window.num"
QUOTA_WINDOW_SIZE_SECONDS = "quota.window.size.seconds"
QUOTA_KEYS: frozenset[str] = frozenset({QUOTA_WINDOW_NUM, QUOTA_WINDOW_SIZE_SECONDS})
"""Broker settings parsed here (:func:`quota_config_from_props`)."""

MAX_THROTTLE_MS = 2**31 - 1
"""The largest ``throttle_time_ms`` a response can carry (int32)."""

SENSOR_EXPIRY_MS = 3_600_000
"""A sensor unused this long is dropped (Kafka's inactive quota sensor expiry: 1 hour)."""

Entity = tuple[tuple[str, str | None], ...]
"""A quota entity: ``(type, name)`` pairs sorted by type; name None is ``<default>``.
E.g. ``(("client-id", None), ("user", "alice"))`` is /config/users/alice/clients/<default>."""

Tags = tuple[str, str]
"""A sensor's (user, client-id) tags; ``""`` where the matched entity has no such part."""


def entity(user: str | bool | None = False, client_id: str | bool | None = False) -> Entity:
    """Build an :data:`Entity`: a name, None for ``<default>``, False to leave the type out."""
    parts: list[tuple[str, str | None]] = []
    if client_id is not False:
        parts.append((CLIENT_ID, None if client_id is None else str(client_id)))
    if user is not False:
        parts.append((USER, None if user is None else str(user)))
    return tuple(parts)


def precedence(user: str, client_id: str) -> Iterator[tuple[Entity, Tags]]:
    """The entities that may hold a quota for ``(user, client_id)``, most specific first,
    each with the sensor tags it implies (see the module docstring)."""
    yield entity(user, client_id), (user, client_id)
    yield entity(user, None), (user, client_id)
    yield entity(user), (user, "")
    yield entity(None, client_id), (user, client_id)
    yield entity(None, None), (user, client_id)
    yield entity(None), (user, "")
    yield entity(client_id=client_id), ("", client_id)
    yield entity(client_id=None), ("", client_id)


def resolve(
    quotas: Mapping[Entity, Mapping[str, float]], user: str, client_id: str, key: str
) -> tuple[float, Tags] | None:
    """The quota ``key`` that applies to ``(user, client_id)`` and its sensor tags."""
    for candidate, tags in precedence(user, client_id):
        values = quotas.get(candidate)
        if values is not None and key in values:
            return values[key], tags
    return None


@dataclass(frozen=True, slots=True)
class QuotaConfig:
    """``quota.window.num`` x ``quota.window.size.seconds`` (Kafka: 11 x 1 s)."""

    samples: int = 11
    window_ms: int = 1000


def quota_config_from_props(props: Mapping[str, object]) -> QuotaConfig:
    """Parse :data:`QUOTA_KEYS` from broker settings (others are ignored)."""
    values: dict[str, int] = {}
    for key, field in ((QUOTA_WINDOW_NUM, "samples"), (QUOTA_WINDOW_SIZE_SECONDS, "window_ms")):
        raw = props.get(key)
        if raw is None:
            continue
        try:
            number = int(str(raw).strip())
        except ValueError:
            raise ConfigError(f"{key} must be an integer, not {raw!r}") from None
        if number < 1:
            raise ConfigError(f"{key} must be >= 1, not {number}")
        values[field] = number * 1000 if field == "window_ms" else number
    return QuotaConfig(**values)


def throttle_time_ms(value: float, bound: float, window_ms: int) -> int:
    """Kafka's ``QuotaUtils.throttleTime``: ``round((value - bound) / bound x window_ms)``;
    0 when ``value`` is within ``bound``; at most :data:`MAX_THROTTLE_MS` (the field is an
    int32 on the wire)."""
    if value <= bound:
        return 0
    return min(round((value - bound) / bound * window_ms), MAX_THROTTLE_MS)


class _Sample:
    __slots__ = ("start_ms", "value")

    def __init__(self, start_ms: int) -> None:
        self.start_ms = start_ms
        self.value = 0.0


class Rate:
    """Kafka's ``Rate`` (per second) over a sampled windowed sum; see the module docstring."""

    def __init__(self, config: QuotaConfig, now_ms: int) -> None:
        self._config = config
        self._samples = [_Sample(now_ms)]
        self._current = 0
        self.last_record_ms = now_ms

    def record(self, value: float, now_ms: int) -> None:
        sample = self._samples[self._current]
        if now_ms - sample.start_ms >= self._config.window_ms:
            sample = self._advance(now_ms)
        sample.value += value
        self.last_record_ms = now_ms

    def _advance(self, now_ms: int) -> _Sample:
        self._current = (self._current + 1) % self._config.samples
        if self._current >= len(self._samples):
            sample = _Sample(now_ms)
            self._samples.append(sample)
            return sample
        sample = self._samples[self._current]
        sample.start_ms, sample.value = now_ms, 0.0
        return sample

    def _purge(self, now_ms: int) -> None:
        expire_age = self._config.samples * self._config.window_ms
        for sample in self._samples:
            if now_ms - sample.start_ms >= expire_age:
                sample.start_ms, sample.value = now_ms, 0.0

    def window_ms(self, now_ms: int) -> int:
        """Kafka's ``Rate.windowSize``: elapsed since the oldest sample, at least
        ``samples - 1`` windows, at least 1 ms."""
        self._purge(now_ms)
        window = self._config.window_ms
        elapsed = now_ms - min(s.start_ms for s in self._samples)
        full = elapsed // window
        if full < self._config.samples - 1:
            elapsed += (self._config.samples - 1 - full) * window
        return max(elapsed, 1)

    def measure(self, now_ms: int) -> float:
        """The rate in units per second at ``now_ms``."""
        window = self.window_ms(now_ms)
        return sum(s.value for s in self._samples) / (window / 1000)


QuotaLookup = Callable[[str, str, str], "tuple[float, Tags] | None"]
"""``(user, client_id, key) -> (bound, tags)`` or None: the quota source (the store)."""


class ClientQuotaManager:
    """Byte-rate sensors per quota key and sensor tags; answers throttle times.

    ``lookup`` is consulted on every call, so an altered quota applies to the next request
    (a sensor's history is kept as long as its tags stay the same, as in Kafka).
    """

    def __init__(self, lookup: QuotaLookup, clock: Clock, config: QuotaConfig) -> None:
        self._lookup = lookup
        self._clock = clock
        self.config = config
        self._sensors: dict[tuple[str, Tags], Rate] = {}
        self._last_expiry_ms = clock.monotonic_ms()

    def record(self, key: str, user: str, client_id: str, value: float) -> int:
        """Record ``value`` (bytes) against the quota ``key`` of ``(user, client_id)``;
        the throttle time in ms (0 when under its quota or without one)."""
        found = self._lookup(user, client_id, key)
        if found is None:
            return 0
        bound, tags = found
        now = self._clock.monotonic_ms()
        self._expire(now)
        rate = self._sensor(key, tags, now)
        rate.record(value, now)
        measured = rate.measure(now)
        if measured <= bound:
            return 0
        return throttle_time_ms(measured, bound, rate.window_ms(now))

    def unrecord(self, key: str, user: str, client_id: str, value: float) -> None:
        """Take back a recorded ``value`` (a throttled fetch returns no data, as in Kafka)."""
        found = self._lookup(user, client_id, key)
        if found is not None:
            now = self._clock.monotonic_ms()
            self._sensor(key, found[1], now).record(-value, now)

    def max_value_in_window(self, key: str, user: str, client_id: str) -> int | None:
        """The most one request may take without being throttled on an idle sensor
        (Kafka's ``getMaxValueInQuotaWindow``: bound x (samples - 1) x window); None
        without a quota.  Fetch caps its ``max_bytes`` to it."""
        found = self._lookup(user, client_id, key)
        if found is None:
            return None
        window_s = self.config.window_ms / 1000
        return max(1, int(found[0] * (self.config.samples - 1) * window_s))

    def _sensor(self, key: str, tags: Tags, now_ms: int) -> Rate:
        sensor = self._sensors.get((key, tags))
        if sensor is None:
            sensor = self._sensors[(key, tags)] = Rate(self.config, now_ms)
        return sensor

    def _expire(self, now_ms: int) -> None:
        if now_ms - self._last_expiry_ms < 60_000:
            return
        self._last_expiry_ms = now_ms
        sensors = self._sensors
        stale = [k for k, r in sensors.items() if now_ms - r.last_record_ms > SENSOR_EXPIRY_MS]
        for name in stale:
            del self._sensors[name]
