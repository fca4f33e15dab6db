"""Client quotas: Kafka's windowed Rate, throttle arithmetic, entity precedence, the store
and the DescribeClientQuotas / AlterClientQuotas handlers (riverbed.broker.quotas)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers import alter_client_quotas, describe_client_quotas
from riverbed.broker.quota_store import ClientQuotaStore
from riverbed.broker.quotas import (
    CONSUMER_BYTE_RATE,
    PRODUCER_BYTE_RATE,
    ClientQuotaManager,
    QuotaConfig,
    Rate,
    entity,
    quota_config_from_props,
    resolve,
    throttle_time_ms,
)
from riverbed.clock import ManualClock
from riverbed.errors import ConfigError
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.framing import RequestHeader
from riverbed.protocol.messages import AlterClientQuotasRequest, DescribeClientQuotasRequest

CONFIG = QuotaConfig(samples=11, window_ms=1000)


# -- Rate ---------------------------------------------------------------------------
def test_fresh_rate_uses_at_least_samples_minus_one_windows() -> None:
    # [0----)  one sample, 500 ms old: 0 full windows < 10, so 10 windows are added
    rate = Rate(CONFIG, 0)
    rate.record(10_500, 0)
    assert rate.window_ms(500) == 10_500
    assert rate.measure(500) == pytest.approx(1_000.0)
    assert rate.window_ms(0) == 10_000


def test_window_grows_with_elapsed_time_then_old_samples_expire() -> None:
    # [0)[1)[2)...[11)[12)  one record per second of 1000 units
    rate = Rate(CONFIG, 0)
    for second in range(13):
        rate.record(1000, second * 1000)
    # 11 samples live at 12.5 s; the oldest started at 2 s (samples 0, 1 reused)
    assert rate.window_ms(12_500) == 10_500
    assert rate.measure(12_500) == pytest.approx(11 * 1000 / 10.5)
    # long silence: every sample is older than 11 windows and is purged
    assert rate.measure(40_000) == 0.0


def test_throttle_time_matches_kafkas_formula() -> None:
    # QuotaUtils.throttleTime: round((value - bound) / bound * windowMs)
    assert throttle_time_ms(1_500.0, 1_000.0, 10_000) == 5_000
    assert throttle_time_ms(1_000.0, 1_000.0, 10_000) == 0
    assert throttle_time_ms(1_000.4, 1_000.0, 1_000) == 0  # rounds to 0
    assert throttle_time_ms(3_000.0, 1_000.0, 11_000) == 22_000
    assert throttle_time_ms(1e12, 1.0, 10_000) == 2**31 - 1  # an int32 on the wire


def test_manager_throttles_over_the_bound_with_the_window_used_by_the_rate() -> None:
    clock = ManualClock()
    quotas = {entity(client_id="slow"): {PRODUCER_BYTE_RATE: 1000.0}}
    manager = ClientQuotaManager(lambda u, c, k: resolve(quotas, u, c, k), clock, CONFIG)
    # 10 s window on a fresh sensor: 10,000 bytes is exactly the bound.
    assert manager.record(PRODUCER_BYTE_RATE, "ANONYMOUS", "slow", 10_000) == 0
    # 5,000 more: rate 1,500/s over 10 s -> (1500 - 1000) / 1000 * 10,000 = 5,000 ms.
    assert manager.record(PRODUCER_BYTE_RATE, "ANONYMOUS", "slow", 5_000) == 5_000
    # No quota: never recorded, never throttled.
    assert manager.record(PRODUCER_BYTE_RATE, "ANONYMOUS", "fast", 10**9) == 0
    assert manager.record(CONSUMER_BYTE_RATE, "ANONYMOUS", "slow", 10**9) == 0
    # As in Kafka, the window stays at its 10 s minimum for the first 10 s, so 5 s later
    # the client is still over (15,000 / 10 s); once the sample expires it is not.
    clock.advance(5_000)
    assert manager.record(PRODUCER_BYTE_RATE, "ANONYMOUS", "slow", 0) == 5_000
    clock.advance(10_000)
    assert manager.record(PRODUCER_BYTE_RATE, "ANONYMOUS", "slow", 0) == 0
    assert manager.max_value_in_window(PRODUCER_BYTE_RATE, "ANONYMOUS", "slow") == 10_000


def test_unrecord_takes_bytes_back() -> None:
    clock = ManualClock()
    quotas = {entity(client_id=None): {CONSUMER_BYTE_RATE: 100.0}}
    manager = ClientQuotaManager(lambda u, c, k: resolve(quotas, u, c, k), clock, CONFIG)
    assert manager.record(CONSUMER_BYTE_RATE, "u", "c", 2_000) > 0
    manager.unrecord(CONSUMER_BYTE_RATE, "u", "c", 2_000)
    assert manager.record(CONSUMER_BYTE_RATE, "u", "c", 1_000) == 0


def test_clients_sharing_a_user_quota_share_its_sensor() -> None:
    clock = ManualClock()
    quotas = {entity("alice"): {PRODUCER_BYTE_RATE: 100.0}}
    manager = ClientQuotaManager(lambda u, c, k: resolve(quotas, u, c, k), clock, CONFIG)
    assert manager.record(PRODUCER_BYTE_RATE, "alice", "a", 1_000) == 0
    assert manager.record(PRODUCER_BYTE_RATE, "alice", "b", 1_000) > 0  # same user: shared
    assert manager.record(PRODUCER_BYTE_RATE, "bob", "a", 1_000) == 0  # no quota for bob


# -- precedence ---------------------------------------------------------------------
LEVELS = [
    (entity("alice", "app"), ("alice", "app")),
    (entity("alice", None), ("alice", "app")),
    (entity("alice"), ("alice", "")),
    (entity(None, "app"), ("alice", "app")),
    (entity(None, None), ("alice", "app")),
    (entity(None), ("alice", "")),
    (entity(client_id="app"), ("", "app")),
    (entity(client_id=None), ("", "app")),
]


@pytest.mark.parametrize("level", range(len(LEVELS)))
def test_precedence_most_specific_entity_wins(level: int) -> None:
    # Every entity from `level` down holds a quota; the one at `level` must win.
    quotas = {e: {PRODUCER_BYTE_RATE: float(i + 1)} for i, (e, _) in enumerate(LEVELS)}
    for e, _ in LEVELS[:level]:
        del quotas[e]
    assert resolve(quotas, "alice", "app", PRODUCER_BYTE_RATE) == (
        float(level + 1),
        LEVELS[level][1],
    )


def test_precedence_is_per_key() -> None:
    quotas = {
        entity("alice", "app"): {CONSUMER_BYTE_RATE: 5.0},
        entity(client_id=None): {PRODUCER_BYTE_RATE: 7.0},
    }
    assert resolve(quotas, "alice", "app", PRODUCER_BYTE_RATE) == (7.0, ("", "app"))
    assert resolve(quotas, "alice", "app", CONSUMER_BYTE_RATE) == (5.0, ("alice", "app"))
    assert resolve(quotas, "bob", "app", CONSUMER_BYTE_RATE) is None


def test_window_settings_parse_like_kafka() -> None:
    assert quota_config_from_props({}) == QuotaConfig(11, 1000)
    assert quota_config_from_props(
        {"quota.window.num": "3", "quota.window.size.seconds": "2"}
    ) == QuotaConfig(3, 2000)
    with pytest.raises(ConfigError, match=r"quota.window.num must be >= 1"):
        quota_config_from_props({"quota.window.num": "0"})


# -- store and handlers -------------------------------------------------------------
class _Deps:
    def __init__(self, path: Path) -> None:
        self.client_quota_store = ClientQuotaStore(path)


def _ctx(api_key: int) -> RequestContext:
    return RequestContext(RequestHeader(api_key, 1, 1, "test"))


def _alter(
    deps: _Deps,
    entries: list[tuple[dict[str, str | None], list[tuple[str, float, bool]]]],
    validate_only: bool = False,
) -> list[tuple[int, str | None]]:
    R = AlterClientQuotasRequest
    request = R(
        entries=[
            R.EntryData(
                entity=[R.EntityData(entity_type=t, entity_name=n) for t, n in ent.items()],
                ops=[R.OpData(key=k, value=v, remove=rm) for k, v, rm in ops],
            )
            for ent, ops in entries
        ],
        validate_only=validate_only,
    )
    response = alter_client_quotas.handle(deps, _ctx(49), request)
    return [(e.error_code, e.error_message) for e in response.entries]


def _describe(
    deps: _Deps, components: list[tuple[str, int, str | None]], strict: bool = False
) -> Any:
    R = DescribeClientQuotasRequest
    request = R(
        components=[
            R.ComponentData(entity_type=t, match_type=m, match=n) for t, m, n in components
        ],
        strict=strict,
    )
    return describe_client_quotas.handle(deps, _ctx(48), request)


def _described(response: Any) -> dict[tuple[tuple[str, str | None], ...], dict[str, float]]:
    assert response.error_code == ErrorCode.NONE, response.error_message
    return {
        tuple(sorted((e.entity_type, e.entity_name) for e in entry.entity)): {
            v.key: v.value for v in entry.values
        }
        for entry in response.entries
    }


def test_alter_describe_round_trip_and_reload(tmp_path: Path) -> None:
    deps = _Deps(tmp_path)
    assert (
        _alter(
            deps,
            [
                ({"user": "alice", "client-id": None}, [(PRODUCER_BYTE_RATE, 1024.0, False)]),
                ({"client-id": "app"}, [(CONSUMER_BYTE_RATE, 2048.0, False)]),
                ({"user": None}, [("request_percentage", 12.5, False)]),
            ],
        )
        == [(0, None)] * 3
    )
    everything = _described(_describe(deps, []))
    assert everything == {
        (("client-id", None), ("user", "alice")): {PRODUCER_BYTE_RATE: 1024.0},
        (("client-id", "app"),): {CONSUMER_BYTE_RATE: 2048.0},
        (("user", None),): {"request_percentage": 12.5},
    }
    # exact user, any client-id; strict excludes entities with other types
    assert list(_described(_describe(deps, [("user", 0, "alice")]))) == [
        (("client-id", None), ("user", "alice"))
    ]
    assert _described(_describe(deps, [("user", 0, "alice")], strict=True)) == {}
    assert list(_described(_describe(deps, [("user", 1, None)]))) == [(("user", None),)]
    assert len(_described(_describe(deps, [("user", 2, None)]))) == 2
    # survives a reload from disk; removal drops an entity without quotas left
    reloaded = _Deps(tmp_path)
    assert _described(_describe(reloaded, [])) == everything
    assert _alter(reloaded, [({"client-id": "app"}, [(CONSUMER_BYTE_RATE, 0.0, True)])]) == [
        (0, None)
    ]
    assert (("client-id", "app"),) not in _described(_describe(_Deps(tmp_path), []))
    assert reloaded.client_quota_store.lookup("alice", "x", PRODUCER_BYTE_RATE) == (
        1024.0,
        ("alice", "x"),
    )


def test_alter_refuses_bad_entries_one_by_one(tmp_path: Path) -> None:
    deps = _Deps(tmp_path)
    results = _alter(
        deps,
        [
            ({"ip": "1.2.3.4"}, [(PRODUCER_BYTE_RATE, 1.0, False)]),
            ({"user": "a"}, [("bogus_rate", 1.0, False)]),
            ({"user": "a"}, [(PRODUCER_BYTE_RATE, -5.0, False)]),
            ({"user": "a"}, [(PRODUCER_BYTE_RATE, 10.5, False)]),
            ({}, [(PRODUCER_BYTE_RATE, 1.0, False)]),
            ({"user": "ok"}, [(PRODUCER_BYTE_RATE, 100.0, False)]),
        ],
    )
    assert [code for code, _ in results] == [ErrorCode.INVALID_REQUEST] * 5 + [ErrorCode.NONE]
    assert "ip" in (results[0][1] or "") and "bogus_rate" in (results[1][1] or "")
    assert _described(_describe(deps, [])) == {(("user", "ok"),): {PRODUCER_BYTE_RATE: 100.0}}


def test_validate_only_stores_nothing(tmp_path: Path) -> None:
    deps = _Deps(tmp_path)
    assert _alter(deps, [({"user": "a"}, [(PRODUCER_BYTE_RATE, 1.0, False)])], True) == [(0, None)]
    assert _described(_describe(deps, [])) == {}
    assert not (tmp_path / "client_quotas.json").exists()


def test_describe_refuses_a_bad_filter(tmp_path: Path) -> None:
    deps = _Deps(tmp_path)
    bad: list[list[tuple[str, int, str | None]]] = [
        [("user", 2, None), ("user", 2, None)],
        [("ip", 2, None)],
        [("user", 0, None)],
        [("user", 7, None)],
    ]
    for components in bad:
        response = _describe(deps, components)
        assert response.error_code == ErrorCode.INVALID_REQUEST
        assert response.entries is None
