"""Differential tests against kafka-python 3.0.12's schema-generated protocol classes.

For every message both codecs know and every version both speak: our encoding is decoded
by kafka-python, which must see the same field values and re-encode the very same bytes;
and kafka-python's encoding of its defaults is decoded by us and re-encoded identically.
"""

from __future__ import annotations

import importlib
import pkgutil
import uuid
from typing import Any

import pytest

from riverbed.protocol.messages import ALL_MESSAGES
from riverbed.protocol.messages.base import Message, Struct, in_range
from riverbed.protocol.messages.samples import random_message

kafka_protocol = pytest.importorskip("kafka.protocol")


def _kafka_python_classes() -> dict[str, Any]:
    from kafka.protocol.api_data import ApiData
    from kafka.protocol.api_message import ApiMessage

    for mod in pkgutil.walk_packages(kafka_protocol.__path__, "kafka.protocol."):
        if ".old" not in mod.name and "generate_stubs" not in mod.name:
            importlib.import_module(mod.name)
    found: dict[str, Any] = {}
    stack: list[type] = [ApiMessage, ApiData]
    while stack:
        base = stack.pop()
        for sub in base.__subclasses__():
            stack.append(sub)
            json = getattr(sub, "_json", None)
            if json and getattr(sub, "_class_version", None) is None:
                found.setdefault(json["name"], sub)
    return found


THEIRS = _kafka_python_classes()


def _their_versions(theirs: Any) -> tuple[int, int]:
    low, high = theirs._valid_versions  # kafka-python's (min, max) from the schema
    return (0 if theirs.min_version == 0 else low), high


CASES = [
    pytest.param(cls, v, id=f"{cls.NAME}-v{v}")
    for cls in ALL_MESSAGES
    if cls.NAME in THEIRS and cls.MESSAGE_TYPE in ("request", "response", "data")
    for v in range(cls.MIN_VERSION, cls.MAX_VERSION + 1)
    if _their_versions(THEIRS[cls.NAME])[0] <= v <= _their_versions(THEIRS[cls.NAME])[1]
]


def _strip_unknown_tags(obj: Any) -> None:
    if isinstance(obj, list):
        for item in obj:
            _strip_unknown_tags(item)
    elif isinstance(obj, Struct):
        obj._unknown_tagged_fields = None  # type: ignore[attr-defined]
        for spec in obj.FIELDS:
            _strip_unknown_tags(getattr(obj, spec.name))


def _as_dict(obj: Any, version: int) -> Any:
    if isinstance(obj, list):
        return [_as_dict(item, version) for item in obj]
    if isinstance(obj, Struct):
        return {
            spec.name: _as_dict(getattr(obj, spec.name), version)
            for spec in obj.FIELDS
            if in_range(version, spec.versions)
        }
    if isinstance(obj, memoryview):
        return bytes(obj)
    return obj


RENAMED_SINCE_4_3 = {"generation_id_or_member_epoch": "generation_id"}  # TxnOffsetCommit
"""Our field names (Kafka 4.4's schemas) -> kafka-python 3.0.12's (Kafka 4.3's)."""


def _normalise(value: Any) -> Any:
    """Undo kafka-python's presentation choices in ``to_dict`` (the bytes are still compared).

    It shows the zero UUID as None and turns ``*authorized_operations`` bit fields into
    sets under other names; both are dropped or mapped here, as are the fields Kafka 4.4
    renamed.
    """
    if isinstance(value, dict):
        return {
            RENAMED_SINCE_4_3.get(k, k): _normalise(v)
            for k, v in value.items()
            if "authorized_operations" not in k
        }
    if isinstance(value, list):
        return [_normalise(v) for v in value]
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, uuid.UUID) and value.int == 0:
        return None
    return value


def _their_decode(theirs: Any, data: bytes, version: int) -> Any:
    if theirs.type == "data":
        return theirs.decode(data, version=version, header=False)
    return theirs.decode(data, version=version)


def _their_encode(obj: Any, version: int) -> bytes:
    if obj.type == "data":
        return bytes(obj.encode(version=version, header=False))
    obj._header = None  # kafka-python 3.0.12 leaves it unset on decoded messages
    return bytes(obj.encode(version=version))


def test_the_apis_that_matter_are_covered() -> None:
    names = {case.values[0].NAME for case in CASES}  # type: ignore[union-attr]
    for api in ("Produce", "Fetch", "Metadata", "ApiVersions", "JoinGroup", "OffsetCommit"):
        assert f"{api}Request" in names and f"{api}Response" in names
    assert len(CASES) > 500


@pytest.mark.parametrize(("cls", "version"), CASES)
def test_ours_to_theirs_and_back(cls: type[Message], version: int) -> None:
    theirs = THEIRS[cls.NAME]
    for seed in range(3):
        msg = random_message(cls, version, seed)
        _strip_unknown_tags(msg)
        if cls.NAME == "ApiVersionsResponse":
            msg.error_code = 0  # type: ignore[attr-defined]  # else kafka-python reads it as v0
        data = msg.encode(version)
        decoded = _their_decode(theirs, data, version)
        assert _normalise(decoded.to_dict(json=False)) == _normalise(_as_dict(msg, version))
        again = _their_encode(decoded, version)
        assert again == data
        assert cls.decode(again, version) == msg


@pytest.mark.parametrize(("cls", "version"), CASES)
def test_theirs_defaults_decode_here(cls: type[Message], version: int) -> None:
    theirs = THEIRS[cls.NAME]
    data = _their_encode(theirs(version=version), version)
    ours = cls.decode(data, version)
    assert ours.encode(version) == data
