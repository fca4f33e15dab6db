"""Small waits and look-ups on a Kafka cluster shared by the scale-out tests."""

from __future__ import annotations

import collections
import re
import time
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient


def wait_until(predicate, timeout_s: float, what: str, interval_s: float = 0.2):  # type: ignore[no-untyped-def]
    """Poll ``predicate`` until it returns something truthy; fail naming ``what``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval_s)
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")


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
