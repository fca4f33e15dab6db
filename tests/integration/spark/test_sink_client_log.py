"""The sink's producers log through Python logging, not stderr: a producer kept idle in a
Python worker between tasks (riverbed.spark.sink._ProducerPool) otherwise wrote every
failed reconnect to the worker's stderr once the cluster went away (seen as librdkafka
lines on ``riverbed demo``'s stderr, whose broker stops before Spark's workers exit).
A real broker, no Spark: the producer is the one a task gets."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from riverbed.spark import offset_lookup, sink
from riverbed.spark.offset_lookup import OffsetLookup
from riverbed.testing.embedded import EmbeddedBroker
from riverbed.testing.waiting import wait_until


def test_a_kept_producer_logs_the_lost_cluster_to_logging_not_stderr(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    broker = EmbeddedBroker(tmp_path / "broker").start()
    config = {"bootstrap.servers": broker.bootstrap_servers, "acks": "all"}
    pool = sink._ProducerPool()
    try:
        producer = pool.take(config)
        producer.produce("t", b"v")
        assert producer.flush(30) == 0
        pool.give_back(config, producer)  # idle now, its connections open
    finally:
        broker.stop()
    caplog.set_level(logging.DEBUG, logger=sink.CLIENT_LOG.name)

    def reconnect_logged() -> bool:
        producer.poll(0.1)  # librdkafka's log lines reach the logger when polled
        return any("Connect to" in r.getMessage() for r in caplog.records)

    wait_until(reconnect_logged, 60, "librdkafka to log a failed reconnect")
    # Only this producer's lines count: a client another test left behind in this process
    # may write its own reconnect lines to fd 2 meanwhile (seen in CI), naming its own
    # cluster's address, never this broker's.
    err = capfd.readouterr().err
    assert broker.bootstrap_servers not in err, err[-2000:]


def test_an_offset_lookup_logs_the_lost_cluster_to_logging_not_stderr(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """The driver's ListOffsets client (kept by a stream reader) likewise: CI showed a
    client's reconnect lines on fd 2 long after its test's broker had stopped."""
    broker = EmbeddedBroker(tmp_path / "broker").start()
    try:
        lookup = OffsetLookup({"bootstrap.servers": broker.bootstrap_servers}, 30_000)
        assert isinstance(lookup.partition_counts(), dict)
    finally:
        broker.stop()
    caplog.set_level(logging.DEBUG, logger=offset_lookup.CLIENT_LOG.name)

    def reconnect_logged() -> bool:
        lookup._admin.poll(0.1)  # librdkafka's log lines reach the logger when polled
        return any("Connect to" in r.getMessage() for r in caplog.records)

    wait_until(reconnect_logged, 60, "librdkafka to log a failed reconnect")
    err = capfd.readouterr().err
    assert broker.bootstrap_servers not in err, err[-2000:]
    lookup.close()
