"""Scale-out figures for docs/scale-out.md: one Riverbed broker beside a 3-broker Kafka cluster,
and the page-views pipeline on local[2] beside a Spark standalone cluster of two workers.

    .venv/bin/python bench/bench_scale_out.py [--messages 1000000] [--size 100] [--events 20000]

1. Producer throughput, one confluent-kafka producer (acks=all, idempotent, linger.ms=5),
   6 partitions: a ``riverbed broker`` child process (replication factor 1, it has no
   other) and Apache Kafka 4.4.0, three KRaft nodes (replication factor 3,
   min.insync.replicas=2, -Xmx384m each).  Printed: msg/s, MB/s and msg/s per broker.
2. Pipeline throughput: ``--events`` page views in the Kafka cluster, drained by the
   page-views pipeline (``availableNow``) once on ``local[2]`` and once on a standalone
   master with two 1-core workers; rows/s over the query's wall time (session start
   excluded, first-batch Python worker start included).

On a 2-core machine shared with others the cluster runs on the same cores as the client:
the figures say what one box does, not what a cluster of machines does.  Prints the load
average with the figures; compare within one run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from riverbed.testing.broker_process import BrokerProcess, free_port
from riverbed.testing.kafka_cluster import KafkaCluster
from riverbed.testing.spark_standalone import SparkStandalone


def _create(bootstrap: str, topic: str, partitions: int, rf: int) -> None:
    """Create ``topic`` with unlimited time retention (page views carry 2024 timestamps)."""
    admin: Any = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(topic, partitions, rf, config={"retention.ms": "-1"})
    for future in admin.create_topics([new]).values():
        future.result(60)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        topics = admin.list_topics(timeout=10).topics
        if topic in topics and all(p.leader >= 0 for p in topics[topic].partitions.values()):
            return
        time.sleep(0.2)


def produce_rate(bootstrap: str, topic: str, messages: int, size: int) -> float:
    """Messages/s for ``messages`` of ``size`` bytes, until the last acknowledgement."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "batch.size": 1_000_000,
        }
    )
    payload = b"x" * size
    for _ in range(2000):  # warm-up: connections, metadata, producer id
        producer.produce(topic, payload)
    producer.flush(60)
    started = time.perf_counter()
    for _ in range(messages):
        while True:
            try:
                producer.produce(topic, payload)
                break
            except BufferError:
                producer.poll(0.01)
    remaining = producer.flush(300)
    elapsed = time.perf_counter() - started
    if remaining:
        raise RuntimeError(f"{remaining} messages not acknowledged")
    return messages / elapsed


def pipeline_rate(bootstrap: str, master: str | None, events: int, work: Path) -> float:
    """Rows/s of the page-views pipeline draining ``events`` page views (availableNow)."""
    from riverbed.demo.runner import cluster_spark_options
    from riverbed.pipelines.pageviews import PageviewConfig, local_spark, start_pageviews_query

    extra = cluster_spark_options(master) if master else {}
    spark = local_spark("riverbed-bench-scale-out", extra)
    try:
        suffix = "cluster" if master else "local"
        config = PageviewConfig(
            bootstrap_servers=bootstrap,
            database=work / f"analytics-{suffix}.sqlite",
            checkpoint=work / f"checkpoint-{suffix}",
            output_topic=f"bench-out-{suffix}",
            late_topic=f"bench-late-{suffix}",
            max_offsets_per_trigger=max(1000, events // 4),
        )
        for topic in (config.output_topic, config.late_topic):
            _create(bootstrap, topic, 2, 3)
        started = time.perf_counter()
        query, writer = start_pageviews_query(spark, config, available_now=True)
        query.awaitTermination()
        elapsed = time.perf_counter() - started
        if query.exception() is not None or writer.rows_in != events:
            raise RuntimeError(f"pipeline read {writer.rows_in} of {events}: {query.exception()}")
        return events / elapsed
    finally:
        spark.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--skip-pipeline", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    work = Path(tempfile.mkdtemp(prefix="riverbed-bench-scale-out-"))
    try:
        return _run(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run(args: argparse.Namespace, work: Path) -> int:
    print(f"load average before: {os.getloadavg()[0]:.1f} (2 cores)")
    rows = []

    riverbed = BrokerProcess(work / "riverbed", free_port(), work / "riverbed.log")
    riverbed.start(timeout_s=180)
    try:
        _create(riverbed.bootstrap_servers, "bench", 6, 1)
        rate = produce_rate(riverbed.bootstrap_servers, "bench", args.messages, args.size)
        rows.append(("Riverbed, 1 broker, RF 1", rate, 1))
    finally:
        riverbed.close()

    with KafkaCluster() as cluster:
        _create(cluster.bootstrap_servers, "bench", 6, 3)
        rate = produce_rate(cluster.bootstrap_servers, "bench", args.messages, args.size)
        rows.append(("Kafka 4.4, 3 brokers, RF 3, min ISR 2", rate, 3))
        print(f"\nproducer, {args.messages:,} x {args.size} B, acks=all, idempotent, 6 partitions")
        print(f"{'setup':40s} {'msg/s':>10s} {'MB/s':>7s} {'msg/s per broker':>17s}")
        for name, rate, brokers in rows:
            mb = rate * args.size / 1e6
            print(f"{name:40s} {rate:10,.0f} {mb:7.1f} {rate / brokers:17,.0f}")
        sys.stdout.flush()
        if args.skip_pipeline:
            return 0

        from riverbed.demo.clickstream import (
            ClickstreamGenerator,
            ClickstreamSpec,
            produce_pageviews,
        )

        _create(cluster.bootstrap_servers, "pageviews", 2, 3)
        events = ClickstreamGenerator(ClickstreamSpec(users=20, seed=7, step_ms=3000)).take(
            args.events
        )
        produce_pageviews({"bootstrap.servers": cluster.bootstrap_servers}, "pageviews", events)
        local = pipeline_rate(cluster.bootstrap_servers, None, args.events, work)
        with SparkStandalone() as spark_cluster:
            standalone = pipeline_rate(
                cluster.bootstrap_servers, spark_cluster.master_url, args.events, work
            )
        print(f"\npage-views pipeline, {args.events:,} events from the Kafka cluster, availableNow")
        print(f"{'local[2]':40s} {local:10,.0f} rows/s")
        print(f"{'standalone, 2 workers x 1 core':40s} {standalone:10,.0f} rows/s")
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
