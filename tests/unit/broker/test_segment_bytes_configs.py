"""``segment.bytes`` floor and ``internal.segment.bytes`` (riverbed.broker.topic_configs);
the wire behaviour is checked against Kafka by tests/compat/test_segment_bytes_differential.py."""

from __future__ import annotations

import pytest

from riverbed.broker.topic_configs import check_requested, storage_props
from riverbed.errors import ConfigError


def test_internal_segment_bytes_is_the_storage_segment_size_whatever_the_order() -> None:
    for props in (
        {"internal.segment.bytes": "300", "segment.bytes": "2000000"},
        {"segment.bytes": "2000000", "internal.segment.bytes": "300"},
    ):
        assert storage_props(props) == {"segment.bytes": "300"}


def test_small_segment_bytes_already_stored_still_load() -> None:
    assert storage_props({"segment.bytes": "200"}) == {"segment.bytes": "200"}


def test_a_request_below_one_mebibyte_is_refused_in_kafkas_words() -> None:
    with pytest.raises(ConfigError) as refused:
        check_requested({"segment.bytes": "1048575"})
    assert str(refused.value) == (
        "Invalid value 1048575 for configuration segment.bytes: Value must be at least 1048576"
    )
    check_requested({"segment.bytes": "1048576", "internal.segment.bytes": "14"})
    check_requested({"segment.bytes": "big"})  # LogConfig names a value that is not a number


def test_the_broker_default_is_held_to_the_same_floor() -> None:
    from riverbed.broker.config import BrokerConfig

    with pytest.raises(ConfigError, match=r"'log\.segment\.bytes': 200 is below the minimum"):
        BrokerConfig.from_props({"log.segment.bytes": "200"})
    assert BrokerConfig.from_props({"log.segment.bytes": "1048576"}).topic_defaults == {
        "segment.bytes": "1048576"
    }
