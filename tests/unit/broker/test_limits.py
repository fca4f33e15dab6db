"""The request memory pool's admission rules, the connection quotas, and their settings."""

from __future__ import annotations

import logging

import pytest

from riverbed.broker.config import BrokerConfig
from riverbed.broker.limits import ConnectionQuotas, MemoryPool
from riverbed.errors import ConfigError

MIB = 1 << 20


def test_large_frames_leave_a_quarter_for_small_ones() -> None:
    pool = MemoryPool(8 * MIB)  # large: over 2 MiB; they fill the pool to 6 MiB at most
    assert pool.try_reserve(3 * MIB)
    assert not pool.try_reserve(4 * MIB)  # 7 MiB > 6 MiB
    assert pool.try_reserve(3 * MIB)  # 6 MiB
    assert pool.try_reserve(2 * MIB)  # small: fills the pool
    assert not pool.try_reserve(1)  # pool full, and small frames already hold 2 MiB
    pool.release(3 * MIB)
    assert not pool.try_reserve(3 * MIB)  # 8 MiB with it
    assert pool.try_reserve(MIB)  # small
    assert pool.used == 6 * MIB and pool.large_used == 3 * MIB


def test_small_frames_use_the_pool_and_then_their_quarter() -> None:
    pool = MemoryPool(8 * MIB)
    for _ in range(8):
        assert pool.try_reserve(MIB)
    assert not pool.try_reserve(1)  # full, and small frames hold more than a quarter
    assert not pool.try_reserve(3 * MIB)  # large: not alone (the pool is over a quarter)
    for _ in range(7):
        pool.release(MIB)
    assert pool.try_reserve(7 * MIB)  # large, alone, over three quarters
    assert pool.used == 8 * MIB and pool.large_used == 7 * MIB


def test_small_frames_keep_their_quarter_when_large_ones_fill_the_pool() -> None:
    pool = MemoryPool(8 * MIB)
    assert pool.try_reserve(8 * MIB)  # one large frame, alone, takes the whole pool
    assert pool.try_reserve(2 * MIB)  # small frames still get 2 MiB beyond it
    assert not pool.try_reserve(1)


def test_an_oversized_frame_is_admitted_alone() -> None:
    pool = MemoryPool(8 * MIB)
    assert pool.try_reserve(100 * MIB)  # bigger than the pool: admitted as the only large
    assert not pool.try_reserve(3 * MIB)
    assert pool.try_reserve(MIB)  # small frames still get their quarter
    pool.release(100 * MIB)
    pool.release(MIB)
    assert pool.used == 0 and pool.large_used == 0


def test_unlimited_pool() -> None:
    pool = MemoryPool(-1)
    assert all(pool.try_reserve(100 * MIB) for _ in range(10))
    pool.release(1000 * MIB)
    assert pool.used == 0


def test_release_wakes_every_waiter_once() -> None:
    pool = MemoryPool(4 * MIB)
    woken: list[str] = []
    pool.wait("a", lambda: woken.append("a"))
    pool.wait("b", lambda: woken.append("b"))
    pool.wait("c", lambda: woken.append("c"))
    pool.cancel("c")
    assert pool.try_reserve(MIB)
    pool.release(MIB)
    assert woken == ["a", "b"] and pool.waiting == 0
    pool.release(0)
    assert woken == ["a", "b"]


def test_connection_quotas(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="riverbed.broker.limits")
    quotas = ConnectionQuotas(max_connections=3, max_per_ip=2)
    assert quotas.try_open("10.0.0.1") and quotas.try_open("10.0.0.1")
    assert not quotas.try_open("10.0.0.1")
    assert quotas.try_open("10.0.0.2")
    assert not quotas.try_open("10.0.0.3")  # the total
    assert not quotas.try_open("10.0.0.3")
    # One line for the first refusal; the next ones within 10 s are only counted.
    assert len(caplog.records) == 1
    assert "max.connections.per.ip (2)" in caplog.text
    quotas.closed("10.0.0.1")
    assert quotas.try_open("10.0.0.3")
    assert quotas.total == 3


def test_limit_settings_parse_with_kafka_names() -> None:
    config = BrokerConfig.from_props(
        {
            "queued.max.request.bytes": "-1",
            "fetch.max.bytes": "1048576",
            "riverbed.max.queued.response.bytes.per.connection": "65536",
            "max.connections": "100",
            "max.connections.per.ip": "10",
            "connections.max.idle.ms": "-1",
        }
    )
    assert config.queued_max_request_bytes == -1
    assert config.fetch_max_bytes == MIB
    assert config.max_queued_response_bytes == 65536
    assert (config.max_connections, config.max_connections_per_ip) == (100, 10)
    assert config.connections_max_idle_ms == -1
    defaults = BrokerConfig()
    assert defaults.fetch_max_bytes == 57_671_680  # Kafka's 55 MiB
    assert defaults.connections_max_idle_ms == 600_000
    with pytest.raises(ConfigError, match=r"max\.connections"):
        BrokerConfig.from_props({"max.connections": "0"})


@pytest.mark.parametrize(
    ("props", "refused"),
    [
        ({"advertised.listeners": "SASL_PLAINTEXT://h:9092"}, "not in listeners"),
        ({"listeners": "X://:1", "listener.security.protocol.map": "X:TLS"}, "'TLS'"),
        ({"listeners": "UNMAPPED://:1"}, "no security protocol"),
        ({"listeners": "localhost:9092"}, "NAME://HOST:PORT"),
        ({"listeners": "SASL_SSL://:1", "sasl.enabled.mechanisms": "GSSAPI"}, "GSSAPI"),
    ],
)
def test_bad_listeners_are_refused(props: dict[str, str], refused: str) -> None:
    with pytest.raises(ConfigError, match=refused):
        BrokerConfig.from_props(props)


def test_plaintext_and_controller_listeners_load() -> None:
    BrokerConfig.from_props(
        {
            "listeners": "PLAINTEXT://:9092,CONTROLLER://:9093",
            "advertised.listeners": "PLAINTEXT://localhost:9092",
            "controller.listener.names": "CONTROLLER",
        }
    )
