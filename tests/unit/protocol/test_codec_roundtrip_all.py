"""Every (message, version) round-trips: encode, decode, equal; decode, encode, same bytes."""

from __future__ import annotations

import pytest

from riverbed.protocol.messages import ALL_MESSAGES
from riverbed.protocol.messages.base import Message
from riverbed.protocol.messages.samples import random_message

CASES = [
    pytest.param(cls, v, id=f"{cls.NAME}-v{v}")
    for cls in ALL_MESSAGES
    for v in range(cls.MIN_VERSION, cls.MAX_VERSION + 1)
]


@pytest.mark.parametrize(("cls", "version"), CASES)
def test_round_trip(cls: type[Message], version: int) -> None:
    for seed in range(4):
        msg = random_message(cls, version, seed)
        data = msg.encode(version)
        decoded = cls.decode(data, version)
        assert decoded == msg, (seed, data)
        assert decoded.encode(version) == data
        # decode_from leaves the offset just after the message, inside a larger buffer
        framed = memoryview(b"\x07" + data + b"\x09")
        again, end = cls.decode_from(framed, 1, version)
        assert again == msg
        assert end == 1 + len(data)


def test_defaults_round_trip() -> None:
    for cls in ALL_MESSAGES:
        for v in range(cls.MIN_VERSION, cls.MAX_VERSION + 1):
            assert cls.decode(cls().encode(v), v) == cls()
