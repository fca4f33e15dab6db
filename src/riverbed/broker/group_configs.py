"""GROUP resource configs beyond ``share.*`` (Kafka 4.4's ``GroupConfig``): the KIP-848
consumer group and streams group settings.

Names, defaults and validation follow Kafka 4.4 (measured against the reference broker:
tests/compat/test_group_configs_differential.py):

* ``consumer.session.timeout.ms`` in [``group.consumer.min.session.timeout.ms``,
  ``group.consumer.max.session.timeout.ms``] = [45000, 60000], default the broker's
  ``group.consumer.session.timeout.ms``; ``consumer.heartbeat.interval.ms`` in
  [``group.consumer.min.heartbeat.interval.ms``, ``...max...``] = [5000, 15000], default
  ``group.consumer.heartbeat.interval.ms``.  They take effect: the KIP-848 coordinator
  gives a member of that group this session timeout from its next heartbeat, and answers
  heartbeats with this interval (:meth:`riverbed.coordinator.context.CoordinatorContext.
  session_timeout_ms`).
* ``streams.session.timeout.ms`` [45000, 60000], ``streams.heartbeat.interval.ms``
  [5000, 15000], ``streams.num.standby.replicas`` [0, 2], ``streams.initial.rebalance.
  delay.ms`` >= 0: accepted, stored and described like Kafka, without effect (Riverbed has
  no KIP-1071 streams groups; docs/compatibility.md).

A value that is not an integer is INVALID_CONFIG "Invalid value V for configuration N:
Not a number of type INT"; out of range "N must be in the range A to B inclusive." (Kafka's
words).  The values live beside the share settings (``share_group_configs.json``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from riverbed.coordinator.config import GroupCoordinatorConfig
from riverbed.errors import ConfigError

_INT_MAX = 2**31 - 1


@dataclass(frozen=True)
class _IntKey:
    low: int
    high: int
    ranged: bool  # "must be in the range" (validateValues) vs ConfigDef's atLeast


def _keys() -> dict[str, _IntKey]:
    return {
        "consumer.session.timeout.ms": _IntKey(45_000, 60_000, True),
        "consumer.heartbeat.interval.ms": _IntKey(5_000, 15_000, True),
        "streams.session.timeout.ms": _IntKey(45_000, 60_000, True),
        "streams.heartbeat.interval.ms": _IntKey(5_000, 15_000, True),
        "streams.num.standby.replicas": _IntKey(0, 2, True),
        "streams.initial.rebalance.delay.ms": _IntKey(0, _INT_MAX, False),
    }


KEYS: dict[str, _IntKey] = _keys()
GROUP_CONFIG_KEYS: frozenset[str] = frozenset(KEYS)
"""The GROUP config names this module owns (the share ones are share_partitions')."""


def validate(name: str, value: str) -> str:
    """The value to store for ``name`` (a key of :data:`KEYS`); ConfigError otherwise."""
    key = KEYS[name]
    try:
        number = int(value.strip())
    except ValueError:
        raise ConfigError(
            f"Invalid value {value} for configuration {name}: Not a number of type INT"
        ) from None
    if not key.low <= number <= key.high:
        if key.ranged:
            raise ConfigError(f"{name} must be in the range {key.low} to {key.high} inclusive.")
        raise ConfigError(
            f"Invalid value {number} for configuration {name}: Value must be at least {key.low}"
        )
    return str(number)


def defaults(config: GroupCoordinatorConfig) -> dict[str, str]:
    """Each key's value when the group sets none (the broker's settings)."""
    return {
        "consumer.session.timeout.ms": str(config.consumer_group_session_timeout_ms),
        "consumer.heartbeat.interval.ms": str(config.consumer_group_heartbeat_interval_ms),
        "streams.session.timeout.ms": "45000",
        "streams.heartbeat.interval.ms": "5000",
        "streams.num.standby.replicas": "0",
        "streams.initial.rebalance.delay.ms": "3000",
    }


def override_ms(overrides: Mapping[str, str], name: str, default: int) -> int:
    """A stored per-group integer setting, or ``default`` (values were validated)."""
    value = overrides.get(name)
    return int(value) if value is not None else default
