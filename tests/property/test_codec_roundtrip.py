"""Hypothesis: every generated message round-trips, values drawn from the schema metadata."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from riverbed.protocol.messages import ALL_MESSAGES
from riverbed.protocol.messages.samples import message_strategy

PAIRS = [(cls, v) for cls in ALL_MESSAGES for v in range(cls.MIN_VERSION, cls.MAX_VERSION + 1)]


@st.composite
def messages(draw: Any) -> tuple[Any, int, Any]:
    cls, version = draw(st.sampled_from(PAIRS))
    return cls, version, draw(message_strategy(cls, version))


@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(messages())
def test_encode_decode_round_trip(case: tuple[Any, int, Any]) -> None:
    cls, version, msg = case
    data = msg.encode(version)
    decoded = cls.decode(data, version)
    assert decoded == msg
    assert decoded.encode(version) == data
