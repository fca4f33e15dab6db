"""Broker settings: Kafka names, synonyms, server.properties parsing, one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from riverbed.broker.config import BrokerConfig, load_properties, parse_key_value, parse_properties
from riverbed.errors import ConfigError


def test_defaults_are_kafkas() -> None:
    config = BrokerConfig.from_props({})
    assert config.node_id == 1
    assert config.num_partitions == 1
    assert config.auto_create_topics_enable is True
    assert config.socket_request_max_bytes == 100 * 1024 * 1024
    assert config.message_max_bytes == 1_048_588


def test_broker_keys_and_topic_synonyms() -> None:
    config = BrokerConfig.from_props(
        {
            "num.partitions": "3",
            "auto.create.topics.enable": "false",
            "log.retention.hours": "2",
            "log.segment.bytes": "1048576",
            "cleanup.policy": "compact",
            "message.max.bytes": "5000",
            "zookeeper.connect": "ignored:2181",
        }
    )
    assert config.num_partitions == 3
    assert config.auto_create_topics_enable is False
    assert config.message_max_bytes == 5000
    assert dict(config.topic_defaults) == {
        "retention.ms": str(2 * 3_600_000),
        "segment.bytes": "1048576",
        "cleanup.policy": "compact",
        "max.message.bytes": "5000",
    }


def test_retention_ms_wins_over_hours() -> None:
    config = BrokerConfig.from_props({"log.retention.hours": "1", "log.retention.ms": "5"})
    assert config.topic_defaults["retention.ms"] == "5"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("num.partitions", "zero"),
        ("num.partitions", "0"),
        ("auto.create.topics.enable", "yes"),
        ("socket.request.max.bytes", "-1"),
        ("log.retention.check.interval.ms", "0"),
        ("log.retention.check.interval.ms", "soon"),
        ("no.such.setting", "1"),
    ],
)
def test_bad_settings_name_the_key(key: str, value: str) -> None:
    with pytest.raises(ConfigError) as info:
        BrokerConfig.from_props({key: value})
    message = str(info.value)
    assert key in message and "\n" not in message


def test_properties_file_format(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text(
        "# comment\n! also a comment\n\n"
        "num.partitions=4\n"
        "log.retention.ms : 1000\n"
        "advertised.host.name   example\n"
        "long.value=a\\\n    b\n"
        "escaped\\=key=x\\ty\n"
    )
    props = load_properties(path)
    assert props == {
        "num.partitions": "4",
        "log.retention.ms": "1000",
        "advertised.host.name": "example",
        "long.value": "ab",
        "escaped=key": "x\ty",
    }


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_properties(tmp_path / "missing.properties")


def test_key_value_flags() -> None:
    assert parse_key_value("retention.ms=10") == ("retention.ms", "10")
    with pytest.raises(ConfigError, match="key=value"):
        parse_key_value("retention.ms")


_keys = st.from_regex(r"[a-z][a-z0-9.]{0,20}", fullmatch=True)
_values = st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), max_size=20).map(
    lambda v: v.lstrip("=: ")
)


@given(st.dictionaries(_keys, _values, max_size=10))
def test_properties_round_trip(props: dict[str, str]) -> None:
    def escape(v: str) -> str:
        return v.replace("\\", "\\\\")

    text = "".join(f"{k}={escape(v)}\n" for k, v in props.items())
    assert parse_properties(text) == props
