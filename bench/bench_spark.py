"""The riverbed Spark source and sink, measured against Riverbed's broker.

Starts a Riverbed broker (``--broker subprocess``, the default: ``riverbed broker`` in its
own process, as deployed; ``--broker embedded``: a thread of this process) or uses
``--bootstrap`` (any Kafka-protocol broker), produces ``--records`` records of
``--size`` bytes into a ``--partitions``-partition topic, and on Spark ``local[2]``
measures, in one run:

* **scan**: ``spark.read.format("riverbed")`` into an aggregate that touches every value
  (``sum(length(value))``), beside Spark scanning the *same rows* from Parquet with the
  same aggregate -- rows/s of both and their ratio (Parquet is the ceiling: no broker, no
  Python, columnar files; ``--values same``, the default, gives every record the value
  ``b"x" * size``, which Parquet stores as one dictionary entry, ``--values distinct``
  random bytes per record, as real payloads differ) -- and the *in-memory floor*: a Python
  data source (``bench_floor``) yielding the same rows as ready-made Arrow batches, no
  client, no broker: what any Python data source costs on this Spark before it reads
  anything -- and ``format("riverbed-jvm")`` (riverbed.spark.jvm: the Java DataSource V2
  reader, no Python worker; ``--no-jvm`` leaves it out, as does a machine without
  mvn/javac);
* **stream**: ``readStream`` with ``trigger(availableNow=True)`` into the ``noop`` sink,
  query start included;
* **plan**: the source's own part of a micro-batch without Spark (driver-side planning
  and the tasks' reads of one record per partition);
* **latency**: produce -> Spark -> output topic, run by ``bench_spark_latency.py`` (see
  there): a streaming query with a ``--trigger-ms`` trigger reads topic A and writes
  topic B through the riverbed sink; the producer stamps its send time into each record;
  a consumer on B that adds no wait of its own computes receive - send.
  ``--latency-rate`` records/s for ``--latency-seconds``, p50/p99/max after the query's
  first micro-batch, under Spark's default checkpoint file manager and under the one
  docs/spark.md recommends (``--latency-variant``); ``--latency-trace`` adds the
  per-stage breakdown.

The embedded broker runs in this process (a thread), competing for the GIL with the
producer, the consumer and the Spark driver's py4j threads; the subprocess broker
competes only for the cores.  On 2 cores both compete with Spark's JVM and Python
workers.  Compare ratios within one run, not absolute figures across machines.

Run: ``.venv/bin/python bench/bench_spark.py [--broker subprocess|embedded]
[--bootstrap HOST:PORT]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import bench_spark_latency
import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]
from bench_produce_consume import riverbed_subprocess
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from pyspark.sql import DataFrame, DataFrameReader, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from riverbed.spark.jvm import JvmReaderBuildError, jvm_reader_classpath
from riverbed.spark.options import parse_source_options
from riverbed.spark.reader import RiverbedStreamReader
from riverbed.spark.schema import arrow_schema, source_schema
from riverbed.testing.embedded import EmbeddedBroker


@contextmanager
def broker_servers(bootstrap: str | None, broker: str) -> Iterator[str]:
    """``--bootstrap`` as given, else a Riverbed broker: ``subprocess`` (``riverbed broker``
    in its own process, as deployed) or ``embedded`` (a thread of this process, sharing the
    GIL with the Spark driver's py4j threads and the producer)."""
    if bootstrap is not None:
        yield bootstrap
        return
    if broker == "subprocess":
        with riverbed_subprocess(False) as servers:
            yield servers
        return
    with (
        tempfile.TemporaryDirectory(prefix="riverbed-bench-spark-") as data_dir,
        EmbeddedBroker(data_dir) as embedded,
    ):
        yield embedded.bootstrap_servers


def create_topics(bootstrap: str, names: list[str], partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [NewTopic(n, partitions, 1, config={"retention.ms": "-1"}) for n in names]
    for future in admin.create_topics(topics).values():
        future.result(30)


def produce_records(
    bootstrap: str, topic: str, records: int, size: int, partitions: int, distinct: bool = False
) -> None:
    """``records`` values of ``size`` bytes: all ``b"x" * size``, or (``distinct``) each
    its own random bytes, which no column encoding shrinks."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    payload = b"x" * size
    started = time.perf_counter()
    for i in range(records):
        if distinct:
            payload = os.urandom(size)
        while True:
            try:
                producer.produce(topic, payload, partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.01)
    assert producer.flush(120) == 0
    elapsed = time.perf_counter() - started
    print(f"produced {records:,} x {size} B in {elapsed:.1f} s ({records / elapsed:,.0f} msg/s)")


def local_session(jvm: bool) -> tuple[SparkSession, bool]:
    """The session, and whether the riverbed-jvm reader is on its classpath."""
    jars = None
    if jvm:
        try:
            jars = jvm_reader_classpath()
        except JvmReaderBuildError as exc:
            print(f"riverbed-jvm left out: {exc}")
            jvm = False
    return bench_spark_latency.spark_session(jars, FloorSource), jvm


def timed_scan(df: DataFrame) -> tuple[int, float]:
    """Rows and seconds for an aggregate that reads every row's value."""
    started = time.perf_counter()
    row = df.agg(F.count(F.lit(1)).alias("n"), F.sum(F.length("value")).alias("b")).collect()[0]
    return int(row["n"]), time.perf_counter() - started


class _FloorReader(DataSourceReader):
    """Yields the benchmark's rows from memory: ``rows[i]`` records of ``size`` B in input
    partition ``i``, as ``pyarrow.RecordBatch``es of ``batch`` rows in the source's schema."""

    def __init__(self, rows: list[int], size: int, batch: int) -> None:
        self.rows, self.size, self.batch = rows, size, batch

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(i) for i in range(len(self.rows))]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        schema = arrow_schema(include_headers=False)
        total, size = self.rows[partition.value], self.size
        for start in range(0, total, self.batch):
            n = min(self.batch, total - start)
            ends = np.arange(0, (n + 1) * size, size, dtype=np.int32)
            values = pa.Array.from_buffers(
                pa.binary(),
                n,
                [None, pa.py_buffer(ends.tobytes()), pa.py_buffer(b"x" * (n * size))],
            )
            stamps = pa.array(np.full(n, time.time_ns() // 1000, dtype=np.int64))
            yield pa.RecordBatch.from_arrays(
                [
                    pa.nulls(n, pa.binary()),
                    values,
                    pa.repeat(pa.scalar("floor", pa.string()), n),
                    pa.repeat(pa.scalar(partition.value, pa.int32()), n),
                    pa.array(np.arange(start, start + n, dtype=np.int64)),
                    stamps.cast(pa.timestamp("us", tz="UTC")),
                    pa.repeat(pa.scalar(0, pa.int32()), n),
                ],
                schema=schema,
            )


class FloorSource(DataSource):
    """``format("bench_floor")``: the ceiling of *any* Python data source on this Spark --
    the same rows, already in memory, no client, no broker (options ``rows``: JSON list of
    rows per input partition, ``size``, ``batch``)."""

    @classmethod
    def name(cls) -> str:
        return "bench_floor"

    def schema(self) -> StructType:
        return source_schema(include_headers=False)

    def reader(self, schema: StructType) -> DataSourceReader:
        options = self.options
        return _FloorReader(
            json.loads(options["rows"]), int(options["size"]), int(options.get("batch", 10_000))
        )


def bench_scan(
    spark: SparkSession,
    bootstrap: str,
    topic: str,
    runs: int,
    rows: list[int],
    size: int,
    jvm: bool,
) -> None:
    def source(builder: DataFrameReader, fmt: str = "riverbed") -> DataFrame:
        return (
            builder.format(fmt)
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic)
            .load()
        )

    source(spark.read).limit(1).collect()  # start the Python workers
    if jvm:
        timed_scan(source(spark.read, "riverbed-jvm"))  # warm up the JVM reader's classes
    with tempfile.TemporaryDirectory(prefix="riverbed-bench-parquet-") as parquet_dir:
        path = str(Path(parquet_dir) / "rows")
        source(spark.read).write.parquet(path)
        timed_scan(spark.read.parquet(path))  # warm up the Parquet path as well
        floor = (
            spark.read.format("bench_floor")
            .option("rows", json.dumps(rows))
            .option("size", str(size))
            .load()
        )
        timed_scan(floor)
        ours: list[float] = []
        jvms: list[float] = []
        floors: list[float] = []
        theirs: list[float] = []
        for attempt in range(1, runs + 1):
            n, riverbed_s = timed_scan(source(spark.read))
            jvm_rows, jvm_s = timed_scan(source(spark.read, "riverbed-jvm")) if jvm else (n, 0.0)
            floor_rows, floor_s = timed_scan(floor)
            parquet_rows, parquet_s = timed_scan(spark.read.parquet(path))
            assert parquet_rows == n == floor_rows == jvm_rows, (parquet_rows, n, floor_rows)
            ours.append(n / riverbed_s)
            floors.append(n / floor_s)
            theirs.append(n / parquet_s)
            jvm_part = ""
            if jvm:
                jvms.append(n / jvm_s)
                jvm_part = (
                    f"riverbed-jvm {n / jvm_s:,.0f} rows/s ({jvm_s:.2f} s, "
                    f"jvm/Parquet {parquet_s / jvm_s:.2f}), "
                )
            print(
                f"scan #{attempt}: riverbed source {n / riverbed_s:,.0f} rows/s "
                f"({riverbed_s:.2f} s), {jvm_part}in-memory floor {n / floor_s:,.0f} rows/s "
                f"({floor_s:.2f} s), Parquet {n / parquet_s:,.0f} rows/s ({parquet_s:.2f} s); "
                f"source/Parquet {parquet_s / riverbed_s:.2f}, floor/Parquet "
                f"{parquet_s / floor_s:.2f} (load {load()})"
            )
        ratios = [a / b for a, b in zip(ours, theirs, strict=True)]
        floor_ratios = [a / b for a, b in zip(floors, theirs, strict=True)]
        jvm_line = ""
        if jvm:
            jvm_ratios = [a / b for a, b in zip(jvms, theirs, strict=True)]
            jvm_line = (
                f"riverbed-jvm {statistics.median(jvms):,.0f} rows/s (jvm/Parquet "
                f"{statistics.median(jvm_ratios):.2f}, runs "
                f"{', '.join(f'{r:.2f}' for r in jvm_ratios)}), "
            )
        print(
            f"scan median of {runs}: riverbed source {statistics.median(ours):,.0f} rows/s, "
            f"{jvm_line}in-memory floor {statistics.median(floors):,.0f} rows/s, "
            f"Parquet {statistics.median(theirs):,.0f} rows/s; median ratios "
            f"source/Parquet {statistics.median(ratios):.2f}, "
            f"floor/Parquet {statistics.median(floor_ratios):.2f}"
        )


def load() -> str:
    """The 1-minute load average and the core count (the box is shared)."""
    return f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"


def bench_stream(spark: SparkSession, bootstrap: str, topic: str) -> None:
    reader = spark.readStream.format("riverbed")
    checkpoint = tempfile.mkdtemp(prefix="riverbed-bench-cp-")
    started = time.perf_counter()
    query = (
        reader.option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
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
    print(
        f"stream availableNow -> noop: {rows:,} rows in {elapsed:.2f} s "
        f"= {rows / elapsed:,.0f} rows/s"
    )


def bench_plan(bootstrap: str, rounds: int) -> None:
    """The source's own share of one micro-batch, without Spark: ``latestOffset`` +
    ``partitions`` on the driver side, then every task's ``read`` of the new records (one
    record per partition per round, a fresh consumer per read as in a task)."""
    topic = f"plan-{uuid.uuid4().hex[:8]}"
    create_topics(bootstrap, [topic], 2)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    options = parse_source_options(
        {"kafka.bootstrap.servers": bootstrap, "subscribe": topic}, streaming=True
    )
    reader = RiverbedStreamReader(options)
    start = reader.initialOffset()
    plan: list[float] = []
    total: list[float] = []
    for round_ in range(rounds + 1):
        for partition in range(2):
            producer.produce(topic, b"x", partition=partition)
        producer.flush(10)
        begun = time.perf_counter()
        end = reader.latestOffset(start, reader.getDefaultReadLimit())
        planned = time.perf_counter()
        rows = sum(b.num_rows for p in reader.partitions(start, end) for b in reader.read(p))
        done = time.perf_counter()
        if round_:  # the first round connects and warms up
            plan.append(planned - begun)
            total.append(done - begun)
        start = end
        assert rows == 2, rows
    reader.stop()
    print(
        f"source per micro-batch (2 partitions, 1 record each; median of {rounds}): "
        f"plan {statistics.median(plan) * 1e3:.1f} ms, plan + read "
        f"{statistics.median(total) * 1e3:.1f} ms (load {load()})"
    )


def bench_latency(
    spark: SparkSession,
    bootstrap: str,
    trigger_ms: int,
    rate: int,
    seconds: float,
    variants: list[str],
    trace: bool,
) -> None:
    """The latency run of ``bench_spark_latency.py`` (its docstring says what is measured
    and how), once per variant in turn: ``default`` is Spark's own configuration,
    ``fs-checkpoint`` the checkpoint file manager docs/spark.md recommends."""
    if trace:
        spark.dataSource.register(bench_spark_latency.TracedSource)
    for name in variants:
        result = bench_spark_latency.run_variant(
            spark,
            bootstrap,
            bench_spark_latency.VARIANTS[name],
            trigger_ms,
            rate,
            seconds,
            partitions=2,
            trace=trace,
        )
        bench_spark_latency.summarise(result, trigger_ms, rate)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--records", type=int, default=400_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument(
        "--values",
        choices=("same", "distinct"),
        default="same",
        help="every value b'x' * size (Parquet keeps one dictionary entry), or random bytes each",
    )
    parser.add_argument("--runs", type=int, default=5, help="scan repetitions (alternating)")
    parser.add_argument("--bootstrap", help="a running broker instead of a started one")
    parser.add_argument(
        "--broker",
        choices=("subprocess", "embedded"),
        default="subprocess",
        help="how to start Riverbed's broker (without --bootstrap)",
    )
    parser.add_argument("--trigger-ms", type=int, default=100)
    parser.add_argument("--latency-rate", type=int, default=200, help="records/s")
    parser.add_argument("--latency-seconds", type=float, default=15)
    parser.add_argument(
        "--latency-variant",
        action="append",
        choices=sorted(bench_spark_latency.VARIANTS),
        help="latency configurations, in turn (default: default, fs-checkpoint)",
    )
    parser.add_argument(
        "--latency-trace", action="store_true", help="print the latency breakdown per stage"
    )
    parser.add_argument(
        "--skip", choices=["scan", "stream", "latency", "plan"], action="append", default=[]
    )
    parser.add_argument("--plan-rounds", type=int, default=20)
    parser.add_argument(
        "--no-jvm", action="store_true", help="leave the riverbed-jvm reader out of the scan"
    )
    args = parser.parse_args()

    with broker_servers(args.bootstrap, args.broker) as bootstrap:
        spark, jvm = local_session(jvm=not args.no_jvm and "scan" not in args.skip)
        try:
            if "scan" not in args.skip or "stream" not in args.skip:
                topic = f"bench-{uuid.uuid4().hex[:8]}"
                create_topics(bootstrap, [topic], args.partitions)
                produce_records(
                    bootstrap,
                    topic,
                    args.records,
                    args.size,
                    args.partitions,
                    distinct=args.values == "distinct",
                )
                print(f"values: {args.values}")
                if "scan" not in args.skip:
                    rows = [
                        len(range(p, args.records, args.partitions)) for p in range(args.partitions)
                    ]
                    bench_scan(spark, bootstrap, topic, args.runs, rows, args.size, jvm)
                if "stream" not in args.skip:
                    bench_stream(spark, bootstrap, topic)
            if "plan" not in args.skip:
                bench_plan(bootstrap, args.plan_rounds)
            if "latency" not in args.skip:
                bench_latency(
                    spark,
                    bootstrap,
                    args.trigger_ms,
                    args.latency_rate,
                    args.latency_seconds,
                    args.latency_variant or ["default", "fs-checkpoint"],
                    args.latency_trace,
                )
        finally:
            spark.stop()


if __name__ == "__main__":
    main()
