"""Declared precisions of time, timestamp and timestamptz rendered as Debezium 3.6.1.Final
does under its default ``time.precision.mode=adaptive`` (docs/cdc.md).  The expected values
were measured with Debezium's PostgreSQL connector under Kafka Connect 4.4.0
(tests/integration/kafka_connect), for the stored values 03:04:05.123456 / .1 / .0001 / .0
rounded by PostgreSQL to each precision."""

from __future__ import annotations

import pytest

from riverbed.cdc.postgres.values import connect_field, render

TIMESTAMPTZ, TIMESTAMP, TIME = 1184, 1114, 1083
TIMESTAMPTZ_ARRAY, TIMESTAMP_ARRAY = 1185, 1115


@pytest.mark.parametrize(
    ("typmod", "text", "expected"),
    [
        (0, "2025-01-02 03:04:05+00", "2025-01-02T03:04:05Z"),
        (1, "2025-01-02 03:04:05.1+00", "2025-01-02T03:04:05.1Z"),
        (1, "2025-01-02 03:04:05+00", "2025-01-02T03:04:05.0Z"),
        (2, "2025-01-02 03:04:05.12+00", "2025-01-02T03:04:05.12Z"),
        (2, "2025-01-02 03:04:05.1+00", "2025-01-02T03:04:05.10Z"),
        (3, "2025-01-02 03:04:05+00", "2025-01-02T03:04:05.000Z"),
        (4, "2025-01-02 03:04:05.1235+00", "2025-01-02T03:04:05.1235Z"),
        (4, "2025-01-02 03:04:05.0001+00", "2025-01-02T03:04:05.0001Z"),
        (5, "2025-01-02 03:04:05.0001+00", "2025-01-02T03:04:05.00010Z"),
        (6, "2025-01-02 03:04:05.1+00", "2025-01-02T03:04:05.100000Z"),
        (-1, "2025-01-02 03:04:05+00", "2025-01-02T03:04:05.000000Z"),
        (2, "2025-01-02 05:04:05.1+02", "2025-01-02T03:04:05.10Z"),
        (3, "infinity", "infinity"),
    ],
)
def test_timestamptz_fraction_has_the_declared_digits(
    typmod: int, text: str, expected: str
) -> None:
    assert render(TIMESTAMPTZ, text, typmod=typmod) == expected


@pytest.mark.parametrize(
    ("typmod", "text", "expected"),
    [
        (0, "2025-01-02 03:04:05", 1735787045000),
        (2, "2025-01-02 03:04:05.12", 1735787045120),
        (3, "2025-01-02 03:04:05.123", 1735787045123),
        (4, "2025-01-02 03:04:05.1235", 1735787045123500),
        (6, "2025-01-02 03:04:05.123456", 1735787045123456),
        (-1, "2025-01-02 03:04:05.123456", 1735787045123456),
        (1, "1969-12-31 23:59:59.9", -100),
        (3, "-infinity", "-infinity"),
    ],
)
def test_timestamp_is_millis_up_to_precision_3(typmod: int, text: str, expected: object) -> None:
    assert render(TIMESTAMP, text, typmod=typmod) == expected


@pytest.mark.parametrize(
    ("typmod", "text", "expected"),
    [
        (0, "03:04:05", 11045000),
        (3, "03:04:05.123", 11045123),
        (4, "03:04:05.1235", 11045123500),
        (-1, "03:04:05.123456", 11045123456),
    ],
)
def test_time_is_millis_up_to_precision_3(typmod: int, text: str, expected: int) -> None:
    assert render(TIME, text, typmod=typmod) == expected


def test_arrays_take_their_elements_precision() -> None:
    assert render(TIMESTAMPTZ_ARRAY, '{"2025-01-02 03:04:05.1+00"}', typmod=3) == [
        "2025-01-02T03:04:05.100Z"
    ]
    assert render(TIMESTAMP_ARRAY, '{"2025-01-02 03:04:05.123"}', typmod=3) == [1735787045123]


def test_schema_names_follow_the_precision() -> None:
    assert connect_field("ts", TIMESTAMP, True, typmod=3).name == "io.debezium.time.Timestamp"
    assert connect_field("ts", TIMESTAMP, True, typmod=4).name == "io.debezium.time.MicroTimestamp"
    time_field = connect_field("t", TIME, True, typmod=0)
    assert (time_field.type, time_field.name) == ("int32", "io.debezium.time.Time")
    assert connect_field("t", TIME, True).name == "io.debezium.time.MicroTime"
