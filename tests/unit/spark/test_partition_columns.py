"""The partition reader's batch-at-a-time column building and range cutting, without a broker.

``Message`` objects are built directly (confluent-kafka allows it), so each rule of the
per-message loop the vectorised code replaced is pinned: rows stop at the range end and at
the first error, timestamps of kind 0 are null, mixed timestamp kinds map one by one,
headers convert, and no batch is larger than asked for.
"""

from __future__ import annotations

import datetime as dt
import gc

from confluent_kafka import KafkaError, Message

from riverbed.spark.partition_reader import (
    BULK_READ_DEFAULTS,
    _accept,
    _Columns,
    _cyclic_gc_paused,
    consumer_config,
)
from riverbed.spark.schema import arrow_schema


def record(offset: int, kind: int = 1, ts: int = 1_700_000_000_000, **kw: object) -> Message:
    return Message(
        topic="t",
        partition=3,
        offset=offset,
        key=kw.get("key", b"k%d" % offset),
        value=kw.get("value", b"v%d" % offset),
        timestamp=(kind, ts),
        headers=kw.get("headers"),
    )


def test_accept_keeps_records_below_the_range_end() -> None:
    messages = [record(o) for o in range(5, 10)]
    kept, position, error = _accept(messages, until=8, position=5)
    assert [m.offset() for m in kept] == [5, 6, 7]
    assert position == 8
    assert error is None


def test_accept_moves_past_gaps_to_the_last_offset_plus_one() -> None:
    messages = [record(o) for o in (5, 7, 11)]
    kept, position, error = _accept(messages, until=100, position=5)
    assert len(kept) == 3
    assert position == 12
    assert error is None


def test_accept_stops_at_the_first_error() -> None:
    failure = Message(topic="t", partition=3, error=KafkaError(KafkaError.OFFSET_OUT_OF_RANGE))
    messages = [record(5), record(6), failure, record(7)]
    kept, position, error = _accept(messages, until=100, position=5)
    assert [m.offset() for m in kept] == [5, 6]
    assert position == 7
    assert error is not None and error.code() == KafkaError.OFFSET_OUT_OF_RANGE


def test_accept_of_only_an_error_keeps_the_position() -> None:
    failure = Message(topic="t", partition=3, error=KafkaError(KafkaError.OFFSET_OUT_OF_RANGE))
    assert _accept([failure], until=100, position=42)[:2] == ([], 42)


def test_columns_match_the_schema_and_the_per_record_rules() -> None:
    columns = _Columns(include_headers=True)
    columns.extend(
        [
            record(0, kind=1, ts=1_000, headers=[("h", b"x"), ("h", None)]),
            record(1, kind=2, ts=2_000, key=None),
            record(2, kind=0, ts=0, value=None),
        ]
    )
    batch = columns.batch("t", 3, limit=10)
    assert batch.schema.equals(arrow_schema(True))
    rows = batch.to_pylist()
    assert [r["offset"] for r in rows] == [0, 1, 2]
    assert [r["timestampType"] for r in rows] == [0, 1, -1]
    assert rows[0]["timestamp"] == dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=dt.UTC)
    assert rows[1]["timestamp"] == dt.datetime(1970, 1, 1, 0, 0, 2, tzinfo=dt.UTC)
    assert rows[2]["timestamp"] is None
    assert rows[1]["key"] is None and rows[2]["value"] is None
    assert rows[0]["headers"] == [{"key": "h", "value": b"x"}, {"key": "h", "value": None}]
    assert rows[1]["headers"] is None
    assert {r["topic"] for r in rows} == {"t"} and {r["partition"] for r in rows} == {3}
    assert len(columns) == 0


def test_columns_of_one_timestamp_kind_and_the_batch_limit() -> None:
    columns = _Columns(include_headers=False)
    columns.extend([record(o, kind=1, ts=5) for o in range(7)])
    first = columns.batch("t", 3, limit=4)
    assert first.num_rows == 4 and len(columns) == 3
    assert first.schema.equals(arrow_schema(False))
    assert set(first.column("timestampType").to_pylist()) == {0}
    assert first.column("timestamp").cast("int64").to_pylist() == [5_000] * 4
    rest = columns.batch("t", 3, limit=4)
    assert rest.column("offset").to_pylist() == [4, 5, 6]


def test_columns_all_without_timestamps() -> None:
    columns = _Columns(include_headers=False)
    columns.extend([record(o, kind=0, ts=0) for o in range(3)])
    batch = columns.batch("t", 3, limit=10)
    assert batch.column("timestamp").null_count == 3
    assert set(batch.column("timestampType").to_pylist()) == {-1}


def test_consumer_config_bulk_defaults_yield_to_the_users_kafka_options() -> None:
    config = consumer_config({"bootstrap.servers": "h:1"})
    assert config["fetch.queue.backoff.ms"] == BULK_READ_DEFAULTS["fetch.queue.backoff.ms"]
    assert config["enable.partition.eof"] is False
    config = consumer_config({"bootstrap.servers": "h:1", "fetch.queue.backoff.ms": "500"})
    assert config["fetch.queue.backoff.ms"] == "500"


def test_cyclic_gc_paused_restores_the_collectors_setting() -> None:
    assert gc.isenabled()
    with _cyclic_gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with _cyclic_gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # left off: it was off before
    finally:
        gc.enable()


def test_cyclic_gc_paused_turns_the_collector_back_on_after_an_error() -> None:
    try:
        with _cyclic_gc_paused():
            raise KeyError("boom")
    except KeyError:
        pass
    assert gc.isenabled()
