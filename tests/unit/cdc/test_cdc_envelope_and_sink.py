"""The shared CDC core without a broker: the Debezium envelope (keys, values, tombstones,
key changes, the schema part), SQLite row images, and the sink's in-order acknowledged
position."""

from __future__ import annotations

import json
import sqlite3
import threading
from typing import Any

import pytest

from riverbed.cdc.envelope import (
    ChangeEvent,
    Field,
    Source,
    TableSchema,
    encode_key,
    records_for,
    topic_name,
)
from riverbed.cdc.runner import run
from riverbed.cdc.sink import AckTracker, ChangeSink
from riverbed.cdc.sqlite import triggers
from riverbed.errors import CdcError

SOURCE = Source("sqlite", "riverbed", "app.db", "main", "users", 1000, extra={"seq": 5})


def _decode(records: list[tuple[bytes | None, bytes | None]]) -> list[tuple[Any, Any]]:
    return [
        (None if k is None else json.loads(k), None if v is None else json.loads(v))
        for k, v in records
    ]


def test_delete_is_followed_by_a_tombstone() -> None:
    event = ChangeEvent("d", {"id": 7}, {"id": 7, "n": "a"}, None, SOURCE, 2000)
    (key, value), (tomb_key, tomb_value) = _decode(records_for(event))
    assert key == tomb_key == {"id": 7} and tomb_value is None
    assert list(value) == ["before", "after", "source", "op", "ts_ms"]
    assert value["op"] == "d" and value["after"] is None and value["ts_ms"] == 2000
    assert list(value["source"]) == [
        "version",
        "connector",
        "name",
        "ts_ms",
        "snapshot",
        "db",
        "sequence",
        "schema",
        "table",
        "seq",
    ]


def test_a_key_change_is_delete_tombstone_create() -> None:
    event = ChangeEvent("u", {"id": 8}, {"id": 7, "n": "a"}, {"id": 8, "n": "a"}, SOURCE, 1)
    decoded = _decode(records_for(event))
    assert [(k, None if v is None else v["op"]) for k, v in decoded] == [
        ({"id": 7}, "d"),
        ({"id": 7}, None),
        ({"id": 8}, "c"),
    ]
    assert decoded[2][1]["before"] is None


@pytest.mark.parametrize(
    "op, key, before, after",
    [
        ("c", {"id": 1}, {"id": 1}, {"id": 1}),
        ("d", {"id": 1}, None, None),
        ("r", None, None, {"id": 1}),
        ("x", {"id": 1}, None, {"id": 1}),
    ],
)
def test_invalid_events_are_refused(op: Any, key: Any, before: Any, after: Any) -> None:
    with pytest.raises(ValueError):
        ChangeEvent(op, key, before, after, SOURCE, 1)


def test_schema_part() -> None:
    schema = TableSchema(
        "riverbed.main.users",
        [Field("id", "int64", optional=False)],
        [Field("id", "int64", optional=False), Field("n", "string")],
        "riverbed.cdc.sqlite.Source",
    )
    key = json.loads(encode_key({"id": 1}, schema) or b"")
    assert key == {
        "schema": {
            "type": "struct",
            "fields": [{"type": "int64", "optional": False, "field": "id"}],
            "optional": False,
            "name": "riverbed.main.users.Key",
        },
        "payload": {"id": 1},
    }
    event = ChangeEvent("c", {"id": 1}, None, {"id": 1, "n": "a"}, SOURCE, 1)
    value = json.loads(records_for(event, schema)[0][1] or b"")
    assert value["payload"]["after"] == {"id": 1, "n": "a"}
    assert [f["field"] for f in value["schema"]["fields"]] == [
        "before",
        "after",
        "source",
        "op",
        "ts_ms",
    ]
    assert topic_name("p", "main", "t") == "p.main.t"
    assert topic_name("p", "main", "order lines/é") == "p.main.order_lines__"


def test_row_images_render_sqlite_types() -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, r REAL, s TEXT, b BLOB, n)")
    conn.execute(
        "INSERT INTO t VALUES (9223372036854775807, 0.30000000000000004, '[1]', x'00ff', NULL)"
    )
    info = triggers.table_info(conn, "t")
    assert info is not None and info.key == ("id",)
    image = conn.execute(f"SELECT {triggers.row_json_sql(info, 't')} FROM t AS t").fetchone()[0]
    assert triggers.decode_row(image) == {
        "id": 9223372036854775807,
        "r": 0.30000000000000004,
        "s": "[1]",
        "b": "AP8=",
        "n": None,
    }


def test_wide_tables_split_their_images() -> None:
    conn = sqlite3.connect(":memory:")
    columns = ", ".join(f"c{i} INTEGER" for i in range(150))
    conn.execute(f"CREATE TABLE w (id INTEGER PRIMARY KEY, {columns})")
    conn.execute("INSERT INTO w (id, c149) VALUES (1, 149)")
    info = triggers.table_info(conn, "w")
    assert info is not None
    image = conn.execute(f"SELECT {triggers.row_json_sql(info, 't')} FROM w AS t").fetchone()[0]
    row = triggers.decode_row(image)
    assert row is not None and len(row) == 151 and row["c149"] == 149


def test_acknowledged_is_the_longest_acknowledged_prefix() -> None:
    tracker: AckTracker[int] = AckTracker()
    assert tracker.acknowledged() is None
    a, b, c = tracker.register(1, 10), tracker.register(2, 11), tracker.register(1, 12)
    tracker.register(0, 13)  # nothing to send (e.g. already acknowledged before a restart)
    tracker.ack(a)
    tracker.ack(c)
    tracker.ack(b)
    assert tracker.acknowledged() == 10  # 12 is acknowledged, but 11 only half
    tracker.ack(b)
    assert tracker.acknowledged() == 13 and tracker.pending() == 0


def test_sink_reports_acknowledged_positions() -> None:
    """Against librdkafka's in-process mock cluster (topics created on first use)."""
    sink: ChangeSink[int] = ChangeSink({"test.mock.num.brokers": 1})
    for position in range(20):
        sink.send("a" if position % 2 else "b", [(b"k", b"v"), (b"k", None)], position)
    assert sink.flush(30) == 19 and sink.in_flight() == 0


class FakeConnector:
    def __init__(self, stop: threading.Event, polls_before_stop: int, fail: bool = False) -> None:
        self.stop, self.left, self.fail = stop, polls_before_stop, fail
        self.closed_with: float | None = None

    def poll_once(self) -> bool:
        self.left -= 1
        if self.left == 0:
            if self.fail:
                raise CdcError("lost")
            self.stop.set()
        return self.left % 2 == 0

    def close(self, timeout_s: float) -> None:
        self.closed_with = timeout_s


def test_runner_polls_until_stopped_then_closes() -> None:
    stop = threading.Event()
    connector = FakeConnector(stop, 5)
    run(connector, stop=stop, idle_wait_s=0.001, close_timeout_s=7)
    assert connector.left == 0 and connector.closed_with == 7


def test_runner_closes_and_reraises_on_error() -> None:
    stop = threading.Event()
    connector = FakeConnector(stop, 3, fail=True)
    with pytest.raises(CdcError):
        run(connector, stop=stop, idle_wait_s=0.001)
    assert connector.closed_with is not None
