"""Rows per second through the riverbed Spark source into a count.

Produces ``--records`` records of ``--size`` bytes into a ``--partitions``-partition topic
of librdkafka's in-process mock cluster (or of ``--bootstrap``, any Kafka-protocol
broker), then times, on Spark ``local[2]``:

* batch: ``spark.read.format("riverbed") ... .count()``
* stream: ``readStream`` with ``trigger(availableNow=True)`` into the ``noop`` sink

The mock cluster keeps only ~5 MB per partition (older records are deleted, the log start
offset moves), hence the default of many partitions and modest record counts; the counts
printed are what the topic retained.

Run: ``.venv/bin/python bench/bench_spark.py``
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from pathlib import Path

from confluent_kafka import Producer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=320_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--bootstrap", help="a broker to use instead of the mock cluster")
    args = parser.parse_args()

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    topic = f"bench-{uuid.uuid4().hex[:8]}"
    cluster = None
    bootstrap = args.bootstrap
    if bootstrap is None:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "integration"))
        from spark.mock_cluster import MockCluster

        cluster = MockCluster()
        bootstrap = cluster.bootstrap_servers
        cluster.create_topic(topic, args.partitions)

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    payload = b"x" * args.size
    started = time.perf_counter()
    for i in range(args.records):
        while True:
            try:
                producer.produce(topic, payload, partition=i % args.partitions)
                break
            except BufferError:
                producer.poll(0.01)
    producer.flush()
    print(f"produced {args.records:,} x {args.size} B in {time.perf_counter() - started:.1f} s")

    from pyspark.sql import SparkSession

    import riverbed.spark

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    riverbed.spark.register(spark)

    def reader(builder):  # type: ignore[no-untyped-def]
        return (
            builder.format("riverbed")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic)
        )

    reader(spark.read).load().limit(1).collect()  # warm up the Python workers
    for attempt in range(2):
        started = time.perf_counter()
        count = reader(spark.read).load().count()
        elapsed = time.perf_counter() - started
        print(
            f"batch count #{attempt + 1}: {count:,} rows in {elapsed:.2f} s "
            f"= {count / elapsed:,.0f} rows/s"
        )

    checkpoint = f"/tmp/riverbed-bench-{uuid.uuid4().hex[:8]}"
    started = time.perf_counter()
    query = (
        reader(spark.readStream)
        .option("startingOffsets", "earliest")
        .load()
        .writeStream.format("noop")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    elapsed = time.perf_counter() - started
    rows = sum(p["numInputRows"] for p in query.recentProgress)
    print(f"stream availableNow: {rows:,} rows in {elapsed:.2f} s = {rows / elapsed:,.0f} rows/s")
    spark.stop()
    if cluster is not None:
        cluster.close()


if __name__ == "__main__":
    main()
