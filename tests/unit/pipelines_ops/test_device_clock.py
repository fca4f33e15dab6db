"""DeviceClock (riverbed.pipelines.clock_skew) without Spark: known answers."""

from __future__ import annotations

import random

import pytest

from riverbed.errors import ConfigError
from riverbed.pipelines.clock_skew import DeviceClock, offset_ms


def test_offset_is_receive_minus_send() -> None:
    # device 5 s behind the server, 40 ms on the wire
    assert offset_ms(send_ts=1_000, receive_ts=6_040) == 5_040
    # device 2 s ahead
    assert offset_ms(send_ts=10_000, receive_ts=8_010) == -1_990


def test_latest_and_median() -> None:
    latest, median = DeviceClock("latest"), DeviceClock("median", window=3)
    assert latest.offset_ms is None and latest.correct(7) == 7
    for send, receive in ((0, 100), (0, 110), (0, 900), (0, 105)):
        latest.observe(send, receive)
        median.observe(send, receive)
    assert latest.offset_ms == 105
    assert median.offset_ms == 110  # median of the last 3: 110, 900, 105
    assert median.correct(1_000) == 1_110
    assert DeviceClock("median", 3, median.state()).offset_ms == 110


@pytest.mark.parametrize("seed", range(5))
def test_median_within_network_delay(seed: int) -> None:
    rng = random.Random(seed)
    skew = rng.randint(-600_000, 600_000)
    clock = DeviceClock("median", window=15)
    for _ in range(50):
        send = rng.randint(0, 10**9)
        clock.observe(send, send + skew + rng.randint(0, 250))
    assert clock.offset_ms is not None
    assert 0 <= clock.offset_ms - skew <= 250


def test_bad_config() -> None:
    with pytest.raises(ConfigError):
        DeviceClock("mean")  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        DeviceClock(window=0)
