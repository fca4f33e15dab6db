"""The exactly-once sink's pure parts: options, failure points, marker format (no broker)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest
from confluent_kafka import IsolationLevel

from riverbed.errors import ConfigError
from riverbed.spark.offset_lookup import isolation_level
from riverbed.spark.options import parse_sink_options
from riverbed.spark.sink import RiverbedBatchWriter
from riverbed.spark.transactional_failpoints import (
    FAILPOINT_ENV,
    FailPoint,
    failpoint,
    parse_failpoints,
)
from riverbed.spark.transactional_marker import BatchMarker, TaskIdentity, marker_offset

SERVERS = {"kafka.bootstrap.servers": "127.0.0.1:9"}


def test_default_is_at_least_once() -> None:
    options = parse_sink_options({**SERVERS, "topic": "out"})
    assert options.delivery_guarantee == "at_least_once"
    assert options.marker_topic is None


def test_spark_owned_options_are_accepted() -> None:
    """Spark hands a named query's ``queryName`` and the checkpoint to the sink."""
    options = parse_sink_options(
        {**SERVERS, "topic": "out", "queryName": "q", "checkpointLocation": "/tmp/c"}
    )
    assert options.delivery_guarantee == "at_least_once"


@pytest.mark.parametrize("value", ["exactly_once", "EXACTLY-ONCE", " exactly_once "])
def test_exactly_once_marker_topic_defaults_to_topic(value: str) -> None:
    options = parse_sink_options({**SERVERS, "topic": "out", "deliveryguarantee": value})
    assert options.delivery_guarantee == "exactly_once"
    assert options.marker_topic == "out"
    assert options.transactional_id_prefix == "riverbed-spark"


def test_exactly_once_with_topic_column_needs_a_marker_topic() -> None:
    with pytest.raises(ConfigError, match="markerTopic"):
        parse_sink_options({**SERVERS, "deliveryGuarantee": "exactly_once"})
    options = parse_sink_options(
        {
            **SERVERS,
            "deliveryGuarantee": "exactly_once",
            "markerTopic": "markers",
            "transactionalIdPrefix": "orders-etl",
        }
    )
    assert (options.marker_topic, options.transactional_id_prefix) == ("markers", "orders-etl")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"kafka.transactional.id": "x"}, "transactional.id"),
        ({"deliveryGuarantee": "at_most_once"}, "deliveryGuarantee"),
        ({"markerTopic": "m"}, "need deliveryGuarantee=exactly_once"),
        ({"transactionalIdPrefix": "p"}, "need deliveryGuarantee=exactly_once"),
        ({"deliveryGuarantee": "exactly_once", "transactionalIdPrefix": " "}, "empty"),
    ],
)
def test_bad_sink_options_are_refused(extra: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_sink_options({**SERVERS, "topic": "out", **extra})


def test_batch_writes_refuse_exactly_once() -> None:
    options = parse_sink_options({**SERVERS, "topic": "out", "deliveryGuarantee": "exactly_once"})
    with pytest.raises(ConfigError, match="writeStream only"):
        RiverbedBatchWriter(options)


def test_isolation_level_option() -> None:
    assert isolation_level({}) == IsolationLevel.READ_UNCOMMITTED
    assert isolation_level({"isolation.level": "read_committed"}) == IsolationLevel.READ_COMMITTED
    with pytest.raises(ConfigError, match=r"isolation\.level"):
        isolation_level({"isolation.level": "serializable"})


def test_failpoint_spec_parsing_and_matching() -> None:
    (a, b) = parse_failpoints("task.before_commit:batch=3:partition=1; driver.after_batch_commit")
    assert a == FailPoint("task.before_commit", 3, 1, "group")
    assert a.matches("task.before_commit", 3, 1)
    assert not a.matches("task.before_commit", 2, 1) and not a.matches("task.before_commit", 3, 0)
    assert b.matches("driver.after_batch_commit", 7, None)
    assert parse_failpoints("task.mid_produce:kill=self")[0].kill == "self"
    with pytest.raises(ConfigError, match="unknown failure point"):
        parse_failpoints("task.befor_commit")
    with pytest.raises(ConfigError, match="bad failure point field"):
        parse_failpoints("task.before_commit:bach=1")


def test_failpoint_is_inert_unless_armed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(FAILPOINT_ENV, raising=False)
    failpoint("task.before_commit", batch_id=1, partition=0)
    monkeypatch.setenv(FAILPOINT_ENV, "task.before_commit:batch=2")
    failpoint("task.before_commit", batch_id=1, partition=0)  # another batch: no crash


def test_an_armed_failpoint_kills_the_process_with_sigkill() -> None:
    code = (
        "from riverbed.spark.transactional_failpoints import failpoint\n"
        "failpoint('task.after_commit', batch_id=4, partition=2)\n"
        "print('survived')\n"
    )
    env = {FAILPOINT_ENV: "task.after_commit:batch=4:kill=self"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, timeout=120, check=False
    )
    assert done.returncode == -signal.SIGKILL and b"survived" not in done.stdout


def test_marker_offset_format() -> None:
    identity = TaskIdentity("q-1", batch_id=41, partition=2)
    assert identity.transactional_id("p") == "p-q-1-2" == identity.marker_group("p")
    offset = marker_offset(identity, "out", records=17)
    assert (offset.topic, offset.partition, offset.offset) == ("out", 0, 42)
    assert json.loads(offset.metadata) == {"query": "q-1", "batch": 41, "task": 2, "records": 17}
    marker = BatchMarker(next_batch_id=42, records=17)
    assert marker.covers(41) and marker.covers(0) and not marker.covers(42)
