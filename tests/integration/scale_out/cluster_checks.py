"""Small waits and look-ups on a Kafka cluster shared by the scale-out tests."""

from __future__ import annotations

import collections
import json
import re
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from riverbed.testing import waiting


def wait_until(predicate, timeout_s: float, what: str, interval_s: float = 0.2):  # type: ignore[no-untyped-def]
    """:func:`riverbed.testing.waiting.wait_until`, polling every 0.2 s by default."""
    return waiting.wait_until(predicate, timeout_s, what, interval_s)


def high_watermark(bootstrap: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "scale-out-probe"})
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        return sum(
            consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in partitions
        )
    finally:
        consumer.close()


def leader(bootstrap: str, topic: str, partition: int) -> int:
    metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10)
    return int(metadata.topics[topic].partitions[partition].leader)


def number(pattern: str, text: str) -> int:
    match = re.search(pattern, text)
    assert match, f"{pattern!r} not in:\n{text}"
    return int(match.group(1).replace(",", ""))


Windows = dict[str, collections.Counter[tuple[str, int, int]]]


def read_topic(bootstrap: str, topic: str, timeout_s: float = 120) -> list[bytes | None]:
    """Every record value of ``topic`` up to its high watermarks (read_committed)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"scale-out-read-{uuid.uuid4()}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
        }
    )
    try:
        partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
            for p in partitions
        }
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        values: list[bytes | None] = []
        done = dict.fromkeys(partitions, False)

        def step() -> bool:
            for message in consumer.consume(1000, 0.5):
                if message.error() is None and message.offset() < ends[message.partition()]:
                    values.append(message.value())
            for tp in consumer.position([TopicPartition(topic, p) for p in partitions]):
                done[tp.partition] = tp.offset >= ends[tp.partition] or ends[tp.partition] == 0
            return all(done.values())

        wait_until(step, timeout_s, f"reading {topic} to its end", 0)
        return values
    finally:
        consumer.close()


def window_counts_model(values: list[bytes | None], window_ms: int, slide_ms: int) -> Windows:
    """The page-views batch job in plain Python: per user, tumbling windows of
    ``window_ms`` and hopping ones of ``window_ms`` every ``slide_ms`` (epoch-aligned, a
    window holds ``start <= t < end``, as Spark's ``window``), counting the values whose
    JSON has a ``user_id`` and an ``event_time``."""
    out: Windows = {"tumbling": collections.Counter(), "hopping": collections.Counter()}
    for raw in values:
        try:
            view = json.loads(raw) if raw is not None else None
        except ValueError:
            continue
        if not isinstance(view, dict) or view.get("user_id") is None:
            continue
        t = view.get("event_time")
        if not isinstance(t, int):
            continue
        user = str(view["user_id"])
        start = t - t % window_ms
        out["tumbling"][(user, start, start + window_ms)] += 1
        start = t - t % slide_ms
        while start > t - window_ms:
            out["hopping"][(user, start, start + window_ms)] += 1
            start -= slide_ms
    return out


def demo_table_equals_model(bootstrap: str, data_dir: Path) -> None:
    """:func:`demo_table_equals_batch` with the batch job computed in plain Python
    (:func:`window_counts_model`) instead of Spark: no JVM start, for the reduced form."""
    from riverbed.pipelines.pageviews import PageviewConfig
    from riverbed.pipelines.pageviews_store import PageviewStore

    config = PageviewConfig(
        bootstrap_servers=bootstrap,
        database=data_dir / "analytics.sqlite",
        checkpoint=data_dir / "checkpoint",
    )
    whole, late = (
        window_counts_model(read_topic(bootstrap, topic), config.window_ms, config.slide_ms)
        for topic in (config.input_topic, config.late_topic)
    )
    store = PageviewStore(config.database)
    for kind in ("tumbling", "hopping"):
        streamed = collections.Counter(
            {(r.user_id, r.window_start_ms, r.window_end_ms): r.count for r in store.counts(kind)}  # type: ignore[attr-defined]
        )
        assert sum(whole[kind].values()) > 0, kind
        assert streamed + late[kind] == whole[kind], kind


def demo_table_equals_batch(bootstrap: str, data_dir: Path) -> None:
    """The demo's table plus its stragglers equals a Spark batch job over the input topic.

    The check of tests/integration/pipeline/test_pageviews_stream.py, on the demo's topics
    and ``analytics.sqlite``: :func:`riverbed.pipelines.pageviews.batch_window_counts` over
    ``pageviews`` (all input) and ``pageviews-late`` (the side output).
    """
    from riverbed.pipelines.pageviews import PageviewConfig, batch_window_counts, local_spark
    from riverbed.pipelines.pageviews_store import PageviewStore

    config = PageviewConfig(
        bootstrap_servers=bootstrap,
        database=data_dir / "analytics.sqlite",
        checkpoint=data_dir / "checkpoint",
    )
    spark = local_spark("riverbed-scale-out-batch")
    try:
        counts = {}
        for topic in (config.input_topic, config.late_topic):
            per_kind: dict[str, collections.Counter[tuple[str, int, int]]] = {
                "tumbling": collections.Counter(),
                "hopping": collections.Counter(),
            }
            for row in batch_window_counts(spark, config, topic).collect():
                key = (row["user_id"], row["window_start_ms"], row["window_end_ms"])
                per_kind[row["fact"]][key] += row["count"]
            counts[topic] = per_kind
    finally:
        spark.stop()
    store = PageviewStore(config.database)
    for kind in ("tumbling", "hopping"):
        streamed = collections.Counter(
            {(r.user_id, r.window_start_ms, r.window_end_ms): r.count for r in store.counts(kind)}  # type: ignore[attr-defined]
        )
        whole = counts[config.input_topic][kind]
        assert sum(whole.values()) > 0, kind
        assert streamed + counts[config.late_topic][kind] == whole, kind


RIVERBED = [sys.executable, "-c", "from riverbed.cli.main import main; main()"]


def produce_json(bootstrap: str, topic: str, records: list[tuple[Any, Any]]) -> None:
    """Produce ``(key, value)`` pairs (JSON-encoded; str sent as text; None as null) in
    this order with an idempotent ``acks=all`` producer: a broker dying meanwhile costs
    retries, not records or duplicates."""

    def encode(part: Any) -> bytes | None:
        if part is None or isinstance(part, bytes):
            return part
        if isinstance(part, str):
            return part.encode()
        return json.dumps(part, separators=(",", ":")).encode()

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all"})
    for key, value in records:
        producer.produce(topic, key=encode(key), value=encode(value))
        producer.poll(0)
    assert producer.flush(120) == 0, f"records for {topic} not acknowledged"


class PipelineRun:
    """``riverbed pipeline run ARGS`` as a child process, stdout and stderr in ``log``."""

    def __init__(self, args: list[str], log: Path) -> None:
        self.log = log
        with open(log, "w") as out:
            self.proc = subprocess.Popen(
                [*RIVERBED, "pipeline", "run", *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-5000:]

    def running(self) -> bool:
        return self.proc.poll() is None

    def wait(self, timeout_s: float) -> int:
        return self.proc.wait(timeout_s)

    def terminate(self, timeout_s: float = 120) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout_s)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
