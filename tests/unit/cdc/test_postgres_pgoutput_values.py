"""The pgoutput decoder on hand-built messages, and the Debezium-style value rendering of
PostgreSQL's text forms (docs/cdc.md, PostgreSQL section)."""

from __future__ import annotations

import struct

import pytest

from riverbed.cdc.postgres import pgoutput
from riverbed.cdc.postgres.values import parse_array, render


def _tuple(*values: str | None) -> bytes:
    out = struct.pack("!h", len(values))
    for value in values:
        if value is None:
            out += b"n"
        elif value == "<toast>":
            out += b"u"
        else:
            data = value.encode()
            out += b"t" + struct.pack("!i", len(data)) + data
    return out


def test_relation_begin_changes_commit() -> None:
    relation = (
        b"R"
        + struct.pack("!I", 16384)
        + b"public\0items\0"
        + b"d"
        + struct.pack("!h", 2)
        + b"\x01id\0"
        + struct.pack("!Ii", 23, -1)
        + b"\x00body\0"
        + struct.pack("!Ii", 25, -1)
    )
    decoded = pgoutput.decode(relation)
    assert decoded == pgoutput.Relation(
        16384,
        "public",
        "items",
        "d",
        (pgoutput.Column("id", 23, -1, True), pgoutput.Column("body", 25, -1, False)),
    )
    begin = pgoutput.decode(b"B" + struct.pack("!QqI", 0x1000, 1_000_000, 77))
    assert begin == pgoutput.Begin(0x1000, 946_684_800_000_000 + 1_000_000, 77)
    insert = pgoutput.decode(b"I" + struct.pack("!I", 16384) + b"N" + _tuple("1", None))
    assert insert == pgoutput.Insert(16384, ("1", None))
    update = pgoutput.decode(
        b"U" + struct.pack("!I", 16384) + b"O" + _tuple("1", "old") + b"N" + _tuple("1", "<toast>")
    )
    assert update == pgoutput.Update(16384, ("1", "old"), False, ("1", pgoutput.UNCHANGED_TOAST))
    plain = pgoutput.decode(b"U" + struct.pack("!I", 16384) + b"N" + _tuple("1", "x"))
    assert plain == pgoutput.Update(16384, None, False, ("1", "x"))
    delete = pgoutput.decode(b"D" + struct.pack("!I", 16384) + b"K" + _tuple("1", None))
    assert delete == pgoutput.Delete(16384, ("1", None), True)
    truncate = pgoutput.decode(b"T" + struct.pack("!IBII", 2, 1, 5, 6))
    assert truncate == pgoutput.Truncate((5, 6), True, False)
    commit = pgoutput.decode(b"C" + struct.pack("!BQQq", 0, 0x1000, 0x1010, 0))
    assert commit == pgoutput.Commit(0x1000, 0x1010, 946_684_800_000_000)
    assert pgoutput.decode(b"O" + struct.pack("!Q", 1) + b"origin\0") is None


def test_truncated_message_is_a_pgoutput_error() -> None:
    with pytest.raises(pgoutput.PgOutputError):
        pgoutput.decode(b"I" + struct.pack("!I", 1) + b"N" + struct.pack("!h", 1) + b"t\0\0")


@pytest.mark.parametrize(
    ("oid", "text", "expected"),
    [
        (23, "7", 7),
        (20, "-9007199254740993", -9007199254740993),
        (16, "t", True),
        (701, "1.5", 1.5),
        (701, "NaN", "NaN"),
        (1700, "12.50", "12.50"),
        (25, "héllo", "héllo"),
        (1082, "1970-01-02", 1),
        (1083, "00:00:01.5", 1_500_000),
        (1114, "1970-01-01 00:00:01.000002", 1_000_002),
        (1184, "2024-05-01 14:00:00+02", "2024-05-01T12:00:00.000000Z"),
        (790, "$92,233,720,368,547,758.07", "92233720368547758.07"),
        (790, "-$0.01", "-0.01"),
        (1184, "2024-05-01 12:00:00.25+00", "2024-05-01T12:00:00.250000Z"),
        (1266, "10:00:00+02", "08:00:00Z"),
        (1186, "PT1M30S", 90_000_000),
        (1186, "P1D", 86_400_000_000),
        (114, '{"a": [1]}', '{"a": [1]}'),
        (2950, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
        (17, "\\x00ff", "AP8="),
        (1007, "{1,NULL,3}", [1, None, 3]),
        (1009, '{"a b","c\\"d",NULL}', ["a b", 'c"d', None]),
        (1007, "{{1,2},{3,4}}", [[1, 2], [3, 4]]),
        (1114, "infinity", "infinity"),
        (23, None, None),
        (99999, "mood", "mood"),
    ],
)
def test_rendering(oid: int, text: str | None, expected: object) -> None:
    assert render(oid, text) == expected


def test_array_literal_with_bounds_and_empty() -> None:
    assert parse_array("{}") == []
    assert parse_array("[0:1]={a,b}") == ["a", "b"]
