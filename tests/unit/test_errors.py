"""The exception tree and its single mapping to Kafka wire error codes."""

from __future__ import annotations

import inspect

import riverbed.errors as errors
from riverbed.errors import RiverbedError, error_code_for
from riverbed.protocol.error_codes import ErrorCode


def _all_error_classes() -> list[type[RiverbedError]]:
    return [
        obj
        for obj in vars(errors).values()
        if inspect.isclass(obj) and issubclass(obj, RiverbedError)
    ]


def test_every_error_class_maps_to_a_real_kafka_code() -> None:
    for cls in _all_error_classes():
        assert isinstance(cls.error_code, ErrorCode), cls
        assert error_code_for(cls("x")) is cls.error_code


def test_every_error_class_is_documented_in_the_tree() -> None:
    doc = errors.__doc__ or ""
    for cls in _all_error_classes():
        assert cls.__name__ in doc, f"{cls.__name__} missing from the tree in errors.py"


def test_foreign_exceptions_map_to_unknown_server_error() -> None:
    assert error_code_for(ValueError("bug")) is ErrorCode.UNKNOWN_SERVER_ERROR


def test_kafka_values_of_key_codes() -> None:
    # Spot-check against Kafka's Errors enum: clients switch on these numbers.
    assert ErrorCode.OFFSET_OUT_OF_RANGE == 1
    assert ErrorCode.CORRUPT_MESSAGE == 2
    assert ErrorCode.UNKNOWN_TOPIC_OR_PARTITION == 3
    assert ErrorCode.MESSAGE_TOO_LARGE == 10
    assert ErrorCode.INVALID_TOPIC_EXCEPTION == 17
    assert ErrorCode.INVALID_REQUIRED_ACKS == 21
    assert ErrorCode.UNSUPPORTED_VERSION == 35
    assert ErrorCode.TOPIC_ALREADY_EXISTS == 36
    assert ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER == 45
    assert ErrorCode.UNKNOWN_TOPIC_ID == 100
