"""riverbed.broker.group_configs against what Kafka 4.4 answered with broker settings set
(server.properties ``group.consumer.session.timeout.ms=50000``,
``group.consumer.max.session.timeout.ms=70000``, ``group.share.record.lock.duration.ms=
20000``; measured on the reference broker).  The defaults-only answers are checked on the
wire against Kafka by tests/compat/test_group_configs_differential.py."""

from __future__ import annotations

import pytest

from riverbed.broker import group_configs as gc
from riverbed.broker.config import BrokerConfig
from riverbed.errors import ConfigError

BROKER = {
    "group.consumer.session.timeout.ms": "50000",
    "group.consumer.max.session.timeout.ms": "70000",
    "group.share.record.lock.duration.ms": "20000",
}


def test_a_static_broker_setting_is_the_default_and_a_synonym() -> None:
    names = ["consumer.session.timeout.ms", "share.record.lock.duration.ms"]
    assert gc.describe({}, BROKER, names) == [
        gc.DescribedConfig(
            "consumer.session.timeout.ms",
            "50000",
            gc.STATIC_BROKER_CONFIG,
            gc.INT,
            (
                ("group.consumer.session.timeout.ms", "50000", gc.STATIC_BROKER_CONFIG),
                ("group.consumer.session.timeout.ms", "45000", gc.DEFAULT_CONFIG),
            ),
        ),
        gc.DescribedConfig(
            "share.record.lock.duration.ms",
            "20000",
            gc.STATIC_BROKER_CONFIG,
            gc.INT,
            (
                ("group.share.record.lock.duration.ms", "20000", gc.STATIC_BROKER_CONFIG),
                ("group.share.record.lock.duration.ms", "30000", gc.DEFAULT_CONFIG),
            ),
        ),
    ]
    own = {"consumer.session.timeout.ms": "65000"}
    [entry] = gc.describe(own, BROKER, ["consumer.session.timeout.ms"])
    assert (entry.value, entry.source) == ("65000", gc.GROUP_CONFIG)
    assert entry.synonyms[0] == ("consumer.session.timeout.ms", "65000", gc.GROUP_CONFIG)
    assert len(entry.synonyms) == 3


def test_the_broker_bounds_decide_the_range() -> None:
    assert gc.validate({"consumer.session.timeout.ms": "65000"}, BROKER) == {
        "consumer.session.timeout.ms": "65000"
    }
    with pytest.raises(ConfigError, match="in the range 45000 to 60000 inclusive"):
        gc.validate({"consumer.session.timeout.ms": "65000"}, {})


def test_a_session_timeout_must_exceed_the_heartbeat_interval() -> None:
    # unreachable with Kafka's default bounds; reachable once the broker widens them
    broker = {"group.share.max.heartbeat.interval.ms": "50000"}
    with pytest.raises(ConfigError, match=r"share\.session\.timeout\.ms must be greater than"):
        gc.validate({"share.heartbeat.interval.ms": "45000"}, broker)


def test_by_duration_is_parsed_like_java_and_refused() -> None:
    for good in ("by_duration:PT1H", "by_duration:P1DT2H", "by_duration:pt1.5s", "by_duration:P1D"):
        with pytest.raises(ConfigError, match="not supported by Riverbed"):
            gc.validate({"share.auto.offset.reset": good}, {})
    for bad in ("by_duration:-PT1H", "by_duration:PT", "by_duration:P", "by_duration: PT1H"):
        with pytest.raises(ConfigError, match="The value must be either 'earliest'"):
            gc.validate({"share.auto.offset.reset": bad}, {})


def test_the_broker_accepts_the_settings_it_reads() -> None:
    config = BrokerConfig.from_props(
        {"group.streams.max.standby.replicas": "3", "group.streams.assignors": "sticky"}
    )
    assert config.source["group.streams.max.standby.replicas"] == "3"
    assert gc.validate({"streams.num.standby.replicas": "3"}, config.source)
