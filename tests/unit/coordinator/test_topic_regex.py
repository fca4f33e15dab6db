"""KIP-848 subscription regexes follow RE2 (Kafka's RE2/J): whole-name matches, and the
constructs RE2 lacks are refused with INVALID_REGULAR_EXPRESSION."""

from __future__ import annotations

import pytest

from riverbed.coordinator import topic_regex
from riverbed.coordinator.errors import GroupCoordinatorError
from riverbed.protocol.error_codes import ErrorCode


def test_whole_names_match() -> None:
    topics = ["orders", "orders-eu", "old-orders", "__consumer_offsets"]
    assert topic_regex.matching("orders.*", topics) == {"orders", "orders-eu"}
    assert topic_regex.matching("^orders$", topics) == {"orders"}
    assert topic_regex.matching("__.*", topics) == {"__consumer_offsets"}  # internal too
    assert topic_regex.matching("order", topics) == set()  # not a search


@pytest.mark.parametrize("pattern", ["(?=x)orders", r"(a)\1", "a++", "[", "(?<!x)y"])
def test_what_re2_lacks_is_an_invalid_regular_expression(pattern: str) -> None:
    with pytest.raises(GroupCoordinatorError) as caught:
        topic_regex.validate(pattern)
    assert caught.value.error_code == ErrorCode.INVALID_REGULAR_EXPRESSION
    assert pattern in str(caught.value)
