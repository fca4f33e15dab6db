"""PostgreSQL values (their text output form) rendered as JSON, after Debezium's JSON
converter defaults.  Pure; no I/O.

The connector's sessions set ``DateStyle=ISO``, ``IntervalStyle=iso_8601``,
``TimeZone=UTC``, ``bytea_output=hex`` and ``extra_float_digits=3``, so snapshot rows
(``column::text``) and pgoutput's text tuples have one form.  Renderings (docs/cdc.md):

=====================  ==========================================  ========================
PostgreSQL             JSON                                        Debezium default
=====================  ==========================================  ========================
int2/int4/int8/oid     number                                      same
float4/float8          number; NaN/±Infinity as strings            same (strings)
boolean                true/false                                  same
numeric/money          string "12.50" (exact)                      decimal.handling.mode=
                                                                   string (not ``precise``)
text/varchar/char/...  string                                      same
date                   int days since 1970-01-01                   io.debezium.time.Date
time                   int µs since midnight                       io.debezium.time.MicroTime
time(0..3)             int ms since midnight                       io.debezium.time.Time
timestamp              int µs since the epoch                      MicroTimestamp
timestamp(0..3)        int ms since the epoch                      io.debezium.time.Timestamp
timestamptz            string ISO-8601 UTC "…T….ffffffZ"           ZonedTimestamp
timestamptz(p)         the fraction exactly p digits, none for 0   ZonedTimestamp
timetz                 string "HH:MM:SS[.f]Z" in UTC               ZonedTime
interval               int µs (a month = 30.4375 days)             MicroDuration
json/jsonb             string holding the JSON text                io.debezium.data.Json
uuid                   string                                      io.debezium.data.Uuid
bytea                  string, base64                              binary.handling.mode=bytes
arrays                 JSON array of the element's rendering       same
enums, others          string (the text form)                      same
=====================  ==========================================  ========================

``±infinity`` dates and timestamps are rendered as the strings ``"infinity"``/``"-infinity"``.

A column's declared precision (its ``typmod``: ``atttypmod``, or pgoutput's Relation
column) changes time, timestamp and timestamptz as in Debezium's default
``time.precision.mode=adaptive`` (measured against debezium-connector-postgres 3.6.1.Final
under Kafka Connect 4.4.0): an array column's typmod is its elements'.
"""

from __future__ import annotations

import base64
import datetime as dt
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from riverbed.cdc.envelope import Field

__all__ = ["ARRAY_ELEMENT", "TypeInfo", "connect_field", "render", "session_options"]

UNAVAILABLE = "__debezium_unavailable_value"
"""Debezium's placeholder for a TOASTed value an update did not send and we never saw."""

SESSION_SETTINGS = {
    "DateStyle": "ISO",
    "IntervalStyle": "iso_8601",
    "TimeZone": "UTC",
    "bytea_output": "hex",
    "extra_float_digits": "3",
    "lc_monetary": "C",
}


def session_options() -> str:
    """libpq ``options`` that give every session the text forms this module parses."""
    return " ".join(f"-c {name}={value}" for name, value in SESSION_SETTINGS.items())


# built-in array type oid -> element type oid (the catalog fills in others: TypeInfo)
ARRAY_ELEMENT = {
    1000: 16,
    1001: 17,
    1005: 21,
    1007: 23,
    1016: 20,
    1009: 25,
    1015: 1043,
    1014: 1042,
    1021: 700,
    1022: 701,
    1231: 1700,
    2951: 2950,
    199: 114,
    3807: 3802,
    1115: 1114,
    1185: 1184,
    1182: 1082,
    1183: 1083,
    1028: 26,
}

_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1)
_INFINITE = ("infinity", "-infinity")


class TypeInfo:
    """What the renderer knows of types beyond the built-ins: array oid -> element oid,
    and the delimiter of each element type (``,`` except ``box``'s ``;``)."""

    def __init__(self, array_element: Mapping[int, int] | None = None) -> None:
        self.array_element = {**ARRAY_ELEMENT, **(array_element or {})}


def _int(text: str) -> int:
    return int(text)


def _float(text: str) -> float | str:
    value = float(text)
    return text if math.isnan(value) or math.isinf(value) else value


def _bool(text: str) -> bool:
    return text in ("t", "true")


def _date(text: str) -> int | str:
    if text in _INFINITE:
        return text
    if text.endswith(" BC"):
        return text
    return (dt.date.fromisoformat(text) - _EPOCH_DATE).days


def _time_us(text: str) -> int:
    hours, minutes, seconds = text.split(":")
    whole, _, fraction = seconds.partition(".")
    micros = int((fraction + "000000")[:6]) if fraction else 0
    return ((int(hours) * 60 + int(minutes)) * 60 + int(whole)) * 1_000_000 + micros


def _timestamp(text: str) -> int | str:
    if text in _INFINITE or text.endswith(" BC"):
        return text
    delta = dt.datetime.fromisoformat(text) - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _iso_utc(moment: dt.datetime) -> str:
    # Debezium's ZonedTimestamp pads the fraction to the column's precision, 6 digits for
    # a plain timestamptz (measured against debezium-connector-postgres 3.6.1.Final).
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{moment.microsecond:06d}Z"


def _timestamptz(text: str) -> str:
    if text in _INFINITE or text.endswith(" BC"):
        return text
    moment = dt.datetime.fromisoformat(text).astimezone(dt.UTC)
    return _iso_utc(moment)


def _timestamptz_p(text: str, precision: int) -> str:
    """timestamptz(p): the fraction padded (or cut: PostgreSQL already rounded the value
    to p digits) to exactly p digits, no fraction for p = 0."""
    if text in _INFINITE or text.endswith(" BC"):
        return text
    moment = dt.datetime.fromisoformat(text).astimezone(dt.UTC)
    whole = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if precision == 0:
        return whole + "Z"
    return whole + f".{moment.microsecond:06d}"[: precision + 1] + "Z"


def _timestamp_p(text: str, precision: int) -> int | str:
    """timestamp(p): milliseconds for p <= 3 (Debezium's Timestamp), else microseconds."""
    micros = _timestamp(text)
    if isinstance(micros, str) or precision > 3:
        return micros
    return micros // 1000


def _time_p(text: str, precision: int) -> int:
    """time(p): milliseconds for p <= 3 (Debezium's Time), else microseconds."""
    micros = _time_us(text)
    return micros if precision > 3 else micros // 1000


_PRECISE: dict[int, Callable[[str, int], Any]] = {
    1184: _timestamptz_p,
    1114: _timestamp_p,
    1083: _time_p,
}


def _timetz(text: str) -> str:
    match = re.fullmatch(r"([\d:.]+)([+-]\d\d(?::?\d\d){0,2})", text)
    if match is None:
        return text
    offset_text = match.group(2)
    sign = -1 if offset_text[0] == "-" else 1
    parts = [int(p) for p in re.findall(r"\d\d", offset_text)] + [0, 0]
    offset_s = sign * (parts[0] * 3600 + parts[1] * 60 + parts[2])
    micros = (_time_us(match.group(1)) - offset_s * 1_000_000) % (86_400 * 1_000_000)
    seconds, micro = divmod(micros, 1_000_000)
    text_out = f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
    if micro:
        text_out += f".{micro:06d}".rstrip("0")
    return text_out + "Z"


_INTERVAL = re.compile(
    r"P(?:(-?\d+)Y)?(?:(-?\d+)M)?(?:(-?\d+)W)?(?:(-?\d+)D)?"
    r"(?:T(?:(-?\d+)H)?(?:(-?\d+)M)?(?:(-?[\d.]+)S)?)?"
)
_US_PER_DAY = 86_400 * 1_000_000
_US_PER_MONTH = int(30.4375 * _US_PER_DAY)


def _interval(text: str) -> int | str:
    match = _INTERVAL.fullmatch(text)
    if match is None:
        return text
    years, months, weeks, days, hours, minutes = (int(g or 0) for g in match.groups()[:6])
    seconds = match.group(7) or "0"
    negative = seconds.startswith("-")
    whole, _, fraction = seconds.lstrip("-").partition(".")
    sec_us = int(whole) * 1_000_000 + (int((fraction + "000000")[:6]) if fraction else 0)
    return (
        (years * 12 + months) * _US_PER_MONTH
        + (weeks * 7 + days) * _US_PER_DAY
        + (hours * 60 + minutes) * 60_000_000
        + (-sec_us if negative else sec_us)
    )


def _bytea(text: str) -> str:
    raw = bytes.fromhex(text[2:]) if text.startswith("\\x") else text.encode()
    return base64.b64encode(raw).decode("ascii")


def _money(text: str) -> str:
    """``money`` under ``lc_monetary=C`` (``-$1,234.56``) as Debezium's exact decimal string
    (``-1234.56``); parentheses (other locales' negatives) become a minus."""
    negative = text.startswith("-") or text.startswith("(")
    digits = "".join(c for c in text if c.isdigit() or c == ".")
    return "-" + digits if negative else digits


def _text(text: str) -> str:
    return text


_SCALAR: dict[int, Callable[[str], Any]] = {
    20: _int,
    21: _int,
    23: _int,
    26: _int,
    700: _float,
    701: _float,
    16: _bool,
    1082: _date,
    1083: _time_us,
    1114: _timestamp,
    1184: _timestamptz,
    1266: _timetz,
    1186: _interval,
    17: _bytea,
    790: _money,
}


def parse_array(text: str) -> list[Any]:
    """Split a PostgreSQL array literal (``{1,NULL,"a b"}``, nested) into lists of
    ``str | None`` (elements still in their text form)."""
    if text.startswith("["):  # explicit bounds: [0:1]={...}
        text = text[text.index("=") + 1 :]
    pos = 0

    def parse() -> list[Any]:
        nonlocal pos
        assert text[pos] == "{"
        pos += 1
        items: list[Any] = []
        if text[pos] == "}":
            pos += 1
            return items
        while True:
            if text[pos] == "{":
                items.append(parse())
            elif text[pos] == '"':
                pos += 1
                chars = []
                while text[pos] != '"':
                    if text[pos] == "\\":
                        pos += 1
                    chars.append(text[pos])
                    pos += 1
                pos += 1
                items.append("".join(chars))
            else:
                start = pos
                while text[pos] not in ",}":
                    pos += 1
                token = text[start:pos]
                items.append(None if token == "NULL" else token)
            if text[pos] == "}":
                pos += 1
                return items
            pos += 1  # ','

    return parse()


def render(type_oid: int, text: str | None, types: TypeInfo | None = None, typmod: int = -1) -> Any:
    """The JSON value of one column given its type oid, its text output form and its
    ``typmod`` (-1: none declared; an array's applies to its elements)."""
    if text is None:
        return None
    if typmod >= 0:
        precise = _PRECISE.get(type_oid)
        if precise is not None:
            return precise(text, typmod)
    scalar = _SCALAR.get(type_oid)
    if scalar is not None:
        return scalar(text)
    element = (types or _DEFAULT_TYPES).array_element.get(type_oid)
    if element is not None:
        return _render_nested(element, parse_array(text), types, typmod)
    return text


def _render_nested(
    element: int, items: list[Any], types: TypeInfo | None, typmod: int = -1
) -> list[Any]:
    return [
        _render_nested(element, item, types, typmod)
        if isinstance(item, list)
        else render(element, item, types, typmod)
        for item in items
    ]


_DEFAULT_TYPES = TypeInfo()


# type oid -> (Connect type, Debezium logical name) for schemas.enable output
_CONNECT: dict[int, tuple[str, str | None]] = {
    16: ("boolean", None),
    21: ("int16", None),
    23: ("int32", None),
    20: ("int64", None),
    26: ("int64", None),
    700: ("float32", None),
    701: ("float64", None),
    17: ("bytes", None),
    1082: ("int32", "io.debezium.time.Date"),
    1083: ("int64", "io.debezium.time.MicroTime"),
    1114: ("int64", "io.debezium.time.MicroTimestamp"),
    1184: ("string", "io.debezium.time.ZonedTimestamp"),
    1266: ("string", "io.debezium.time.ZonedTime"),
    1186: ("int64", "io.debezium.time.MicroDuration"),
    114: ("string", "io.debezium.data.Json"),
    3802: ("string", "io.debezium.data.Json"),
    2950: ("string", "io.debezium.data.Uuid"),
}


def connect_field(
    name: str, type_oid: int, optional: bool, types: TypeInfo | None = None, typmod: int = -1
) -> Field:
    """Kafka Connect's schema of one column as :func:`render` renders it."""
    element = (types or _DEFAULT_TYPES).array_element.get(type_oid)
    if element is not None:
        return Field(
            name,
            "array",
            optional=optional,
            items=connect_field("", element, True, types, typmod),
        )
    if 0 <= typmod <= 3 and type_oid == 1114:
        return Field(name, "int64", optional=optional, name="io.debezium.time.Timestamp")
    if 0 <= typmod <= 3 and type_oid == 1083:
        return Field(name, "int32", optional=optional, name="io.debezium.time.Time")
    connect_type, logical = _CONNECT.get(type_oid, ("string", None))
    return Field(name, connect_type, optional=optional, name=logical)
