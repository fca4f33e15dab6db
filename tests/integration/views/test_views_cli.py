"""``riverbed views run`` against a real broker process: a Debezium changelog topic (two
partitions) into the three stores; SIGKILLed mid-stream and restarted, the views
converge to the expected table; a rebuild from offset 0 into fresh stores equals them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from riverbed.testing.broker_process import BrokerProcess, wait_until
from riverbed.views.analytics import AnalyticsView
from riverbed.views.cache import CacheView
from riverbed.views.search import SearchView

from .views_changelog import changelog

TOPIC = "cdc.main.users"
VIEWS_CLI = [sys.executable, "-c", "from riverbed.cli.main import main; main()", "views", "run"]


def _produce(bootstrap: str, records: list[tuple[bytes, bytes | None]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    for key, value in records:
        producer.produce(TOPIC, key=key, value=value)
    assert producer.flush(60) == 0


def _views_run(
    bootstrap: str, root: Path, redis_url: str, prefix: str, *extra: str
) -> subprocess.Popen[bytes]:
    args = [
        *VIEWS_CLI,
        "--bootstrap-server",
        bootstrap,
        "--topic",
        TOPIC,
        "--group",
        f"views-{prefix}",
        "--batch-size",
        "50",
        "--view",
        f"search:{root / 'search.db'}",
        "--view",
        f"{redis_url}#{prefix}",
        "--view",
        f"duckdb:{root / 'analytics.duckdb'}",
        *extra,
    ]
    with open(root / "views.log", "ab") as log:
        return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)


def _snapshots(root: Path, redis_url: str, prefix: str) -> list[dict[str, object]]:
    views = [
        SearchView(root / "search.db"),
        CacheView(redis_url, prefix),
        AnalyticsView(root / "analytics.duckdb"),
    ]
    try:
        return [dict(v.snapshot()) for v in views]
    finally:
        for v in views:
            v.close()


def test_sigkill_restart_and_rebuild_converge(
    broker: BrokerProcess, redis_url: str, tmp_path: Path
) -> None:
    records, expected = changelog(users=60, steps=3000, seed=3)
    bootstrap = broker.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, num_partitions=2)])[TOPIC].result(timeout=60)
    _produce(bootstrap, records[:1000])
    live = tmp_path / "live"
    live.mkdir()
    proc = _views_run(bootstrap, live, redis_url, "live")
    probe = CacheView(redis_url, "live")
    try:
        wait_until(
            lambda: sum(probe.high_water_offsets().values()) > 0 or proc.poll() is not None,
            120,
            "the views process to apply a first batch",
        )
        assert proc.poll() is None, (live / "views.log").read_text()
        _produce(bootstrap, records[1000:1500])  # still arriving when it dies
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        probe.close()
        if proc.poll() is None:
            proc.kill()
    _produce(bootstrap, records[1500:])
    restarted = _views_run(bootstrap, live, redis_url, "live", "--stop-at-end")
    assert restarted.wait(timeout=180) == 0, (live / "views.log").read_text()
    assert _snapshots(live, redis_url, "live") == [expected] * 3
    # the group's committed offsets are there for lag: at the end after --stop-at-end
    watcher = Consumer({"bootstrap.servers": bootstrap, "group.id": "views-live"})
    try:
        committed = watcher.committed(
            [TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)], timeout=30
        )
        ends = [watcher.get_watermark_offsets(tp, timeout=30)[1] for tp in committed]
        assert [tp.offset for tp in committed] == ends
    finally:
        watcher.close()

    fresh = tmp_path / "rebuild"
    fresh.mkdir()
    rebuild = _views_run(bootstrap, fresh, redis_url, "rebuild", "--stop-at-end")
    assert rebuild.wait(timeout=180) == 0, (fresh / "views.log").read_text()
    assert _snapshots(fresh, redis_url, "rebuild") == [expected] * 3


def test_errors_are_one_line(broker: BrokerProcess, tmp_path: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [*VIEWS_CLI, "--bootstrap-server", broker.bootstrap_servers, *args],
            capture_output=True,
            timeout=120,
        )

    bad_spec = run("--topic", TOPIC, "--view", "elastic:foo")
    assert bad_spec.returncode == 2
    assert bad_spec.stderr.decode().count("\n") == 1, bad_spec.stderr
    no_topic = run("--topic", "no-such-topic", "--view", f"search:{tmp_path / 's.db'}")
    assert no_topic.returncode == 1
    assert "no-such-topic" in no_topic.stderr.decode()
    assert "Traceback" not in no_topic.stderr.decode()
