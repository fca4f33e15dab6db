"""Produce -> Spark -> topic latency of the riverbed source and sink, with a breakdown.

A streaming query with a ``--trigger-ms`` processing-time trigger reads topic A through
``format("riverbed")`` and writes topic B through the riverbed sink.  A producer stamps
its send time (epoch ns) into each record's value, ``--rate`` records/s for
``--seconds``; a consumer on B records, per record, receive - send.  That is the whole
path: produce -> broker -> Spark source -> Spark sink -> broker -> a consumer.  Samples
are taken after the query's first (slow: Python worker start) micro-batch.

The measuring consumer must not add latency of its own: it ``poll``s one message at a
time (``consume(n, timeout)`` waits for ``n`` messages or the whole timeout) with
``fetch.wait.max.ms=10``, and B is a ``LogAppendTime`` topic, so each output record also
carries the broker's append time -- "at B" below, independent of the consumer.

``--trace`` adds the breakdown: the query then runs ``format("riverbed_traced")``, the
same reader and writer classes wrapped to log (JSON lines, one file) when ``latestOffset``
returned and which offsets it planned, when each task's read yielded each record and when
the read ended (consumer closed), when each sink task got its rows and when its flush
returned, and when the driver-side sink commit ran.  Topic A is ``LogAppendTime`` too (its
append time is the source's ``timestamp`` column).  Spark's own
``StreamingQueryProgress.durationMs`` per micro-batch are summarised beside it.  All
clocks are this machine's wall clock (Spark ``local[2]``: one host).

``--variant jvm-source`` / ``jvm`` read (and write) with ``format("riverbed-jvm")``, the
Java source and sink (src/riverbed/spark/java; built on first use): no Python worker on
the path for ``jvm``.  They are not traced: ``--trace`` then breaks down only the Python
side (none for ``jvm``), and Spark's ``durationMs`` is the per-stage figure.

``--variant NAME`` (repeatable) runs named configurations in turn, ``--rounds`` times,
alternating, in one Spark session (see :data:`VARIANTS`; ``async`` shows Spark refusing
asynchronous progress tracking for a Python sink).  Figures swing with the load on a
shared 2-core box: compare variants of one run.

Run: ``.venv/bin/python bench/bench_spark_latency.py [--trace] [--variant ...]``
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from pyspark.sql import SparkSession
from pyspark.sql.datasource import (
    DataSource,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

import riverbed.spark
from riverbed.spark.data_source import RiverbedDataSource
from riverbed.spark.reader import RiverbedStreamReader
from riverbed.spark.sink import RiverbedStreamWriter


def load() -> str:
    """The 1-minute load average and the core count (the box is shared)."""
    return f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"


# ---------------------------------------------------------------------------------------
# Tracing wrappers (pickled by value to Spark's Python workers: this module is __main__
# or registered with cloudpickle below).


def _trace(path: str, event: dict[str, Any]) -> None:
    """Append one JSON line (O_APPEND: lines from several processes do not interleave)."""
    event["pid"] = os.getpid()
    line = (json.dumps(event, separators=(",", ":")) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


class _TracedReader(DataSourceStreamReader):
    """Delegates to :class:`RiverbedStreamReader`, logging planning and reads."""

    def __init__(self, inner: RiverbedStreamReader, path: str) -> None:
        self.inner, self.path = inner, path

    def initialOffset(self) -> dict[str, Any]:
        return self.inner.initialOffset()

    def getDefaultReadLimit(self) -> Any:
        return self.inner.getDefaultReadLimit()

    def latestOffset(self, start: dict[str, Any], limit: Any) -> dict[str, Any]:
        begun = time.time_ns()
        end = self.inner.latestOffset(start, limit)
        _trace(self.path, {"e": "latest", "t0": begun, "t": time.time_ns(), "end": end})
        return end

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Any:
        begun = time.time_ns()
        parts = self.inner.partitions(start, end)
        _trace(self.path, {"e": "partitions", "t0": begun, "t": time.time_ns(), "n": len(parts)})
        return parts

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        begun = time.time_ns()
        values: list[str] = []
        for batch in self.inner.read(partition):
            now = time.time_ns()
            column = [v.decode() for v in batch.column(1).to_pylist()]  # value
            stamps = batch.column(5).cast(pa.int64()).to_pylist()  # timestamp, us
            values.extend(column)
            _trace(self.path, {"e": "read", "t0": begun, "t": now, "v": column, "a": stamps})
            yield batch
        _trace(self.path, {"e": "read_end", "t0": begun, "t": time.time_ns(), "n": len(values)})

    def commit(self, end: dict[str, Any]) -> None:
        self.inner.commit(end)
        _trace(self.path, {"e": "source_commit", "t": time.time_ns()})

    def stop(self) -> None:
        self.inner.stop()


class _TracedWriter(DataSourceStreamArrowWriter):
    """Delegates to :class:`RiverbedStreamWriter`, logging each task's write and commits."""

    def __init__(self, inner: RiverbedStreamWriter, path: str) -> None:
        self.inner, self.path = inner, path

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        begun = time.time_ns()
        values: list[str] = []
        first: list[int] = []

        def watched() -> Iterator[Any]:
            for batch in iterator:
                if not first:
                    first.append(time.time_ns())
                index = batch.schema.get_field_index("value")
                values.extend(v.decode() for v in batch.column(index).to_pylist())
                yield batch

        message = self.inner.write(watched())
        _trace(
            self.path,
            {
                "e": "written",
                "t0": begun,
                "t1": first[0] if first else None,
                "t": time.time_ns(),
                "v": values,
                "src": sys.modules[type(self.inner).__module__].__file__,
            },
        )
        return message

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        begun = time.time_ns()
        self.inner.commit(messages, batchId)
        _trace(self.path, {"e": "sink_commit", "t0": begun, "t": time.time_ns(), "b": batchId})

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        self.inner.abort(messages, batchId)


class TracedSource(RiverbedDataSource):
    """``format("riverbed_traced")``: the riverbed source and sink with tracing (option
    ``benchtrace``: the trace file)."""

    @classmethod
    def name(cls) -> str:
        return "riverbed_traced"

    def _split(self) -> tuple[dict[str, str], str]:
        options = dict(self.options)
        path = options.pop("benchtrace")
        return options, path

    def schema(self) -> StructType:
        options, _ = self._split()
        return RiverbedDataSource(options).schema()

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        options, path = self._split()
        inner = RiverbedDataSource(options).streamReader(schema)
        assert isinstance(inner, RiverbedStreamReader)
        return _TracedReader(inner, path)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        options, path = self._split()
        _trace(path, {"e": "stream_writer", "t": time.time_ns()})
        inner = RiverbedDataSource(options).streamWriter(schema, overwrite)
        assert isinstance(inner, RiverbedStreamWriter)
        return _TracedWriter(inner, path)


if __name__ != "__main__":  # imported (bench_spark.py): ship the classes by value
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])


# ---------------------------------------------------------------------------------------
# The run


@dataclass(frozen=True)
class Variant:
    """One configuration of the pipeline: Spark session confs (set before the query
    starts, reset after), source and sink options."""

    name: str
    spark_conf: dict[str, str] = field(default_factory=dict)
    source: dict[str, str] = field(default_factory=dict)
    sink: dict[str, str] = field(default_factory=dict)
    note: str = ""
    #: "riverbed" (Python; traced under --trace) or "riverbed-jvm" (Java, not traced)
    source_format: str = "riverbed"
    sink_format: str = "riverbed"


FS_CHECKPOINT = {
    "spark.sql.streaming.checkpointFileManagerClass": "org.apache.spark.sql."
    "execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"
}


VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in [
        Variant("default", note="the library's defaults, Spark's own configuration"),
        Variant(
            "linger0",
            sink={"kafka.linger.ms": "0"},
            note="the sink's producers at linger.ms 0 (the sink's default is 5; flush() "
            "sends at once either way)",
        ),
        Variant(
            "fs-checkpoint",
            spark_conf=FS_CHECKPOINT,
            note="checkpoint files through Hadoop's FileSystem API, not FileContext",
        ),
        Variant(
            "jvm-source",
            spark_conf=FS_CHECKPOINT,
            source_format="riverbed-jvm",
            note="fs-checkpoint with the riverbed-jvm source (Java, in the executor JVM) "
            "and the Python sink",
        ),
        Variant(
            "jvm",
            spark_conf=FS_CHECKPOINT,
            source_format="riverbed-jvm",
            sink_format="riverbed-jvm",
            note="fs-checkpoint with the riverbed-jvm source and sink: no Python worker",
        ),
        Variant(
            "async",
            sink={
                "asyncProgressTrackingEnabled": "true",
                "asyncProgressTrackingCheckpointIntervalMs": "1000",
            },
            note="Spark's asynchronous progress tracking (offset and commit logs off the "
            "critical path); Spark 4.3 refuses it for any sink but its own built-in ones",
        ),
    ]
}


class OutputConsumer(threading.Thread):
    """Reads topic B one message at a time; each value is ``b"<send epoch ns>"``.  Keeps,
    per send stamp, (receive ns, B's LogAppendTime ms)."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.seen: dict[int, tuple[int, int]] = {}
        self.stopping = threading.Event()
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"bench-{uuid.uuid4().hex[:8]}",
                "auto.offset.reset": "earliest",
                "fetch.wait.max.ms": 10,
                "enable.auto.commit": False,
            }
        )
        self._consumer.subscribe([topic])

    def run(self) -> None:
        while not self.stopping.is_set():
            message = self._consumer.poll(0.05)
            if message is None or message.error() is not None or not message.value():
                continue
            now = time.time_ns()
            self.seen[int(message.value())] = (now, message.timestamp()[1])
        self._consumer.close()


def wait_for(condition: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def create_topics(bootstrap: str, names: list[str], partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    config = {"retention.ms": "-1", "message.timestamp.type": "LogAppendTime"}
    topics = [NewTopic(n, partitions, 1, config=config) for n in names]
    for future in admin.create_topics(topics).values():
        future.result(30)


@dataclass
class Result:
    variant: str
    sent: list[int]
    seen: dict[int, tuple[int, int]]
    progress: list[dict[str, Any]]
    trace: list[dict[str, Any]]
    load_before: str
    load_after: str

    def latencies(self) -> tuple[list[float], list[float]]:
        """(receive - send, B append - send) in ms, for the records that arrived."""
        recv = sorted((self.seen[s][0] - s) / 1e6 for s in self.sent if s in self.seen)
        at_b = sorted(self.seen[s][1] - s / 1e6 for s in self.sent if s in self.seen)
        return recv, at_b


def quantiles(values: list[float]) -> tuple[float, float, float]:
    if len(values) < 2:
        return (float("nan"),) * 3
    q = statistics.quantiles(values, n=100)
    return q[49], q[98], values[-1]


class Refused(Exception):
    """Spark would not start the query of a variant (the message says why)."""


def run_variant(
    spark: SparkSession,
    bootstrap: str,
    variant: Variant,
    trigger_ms: int,
    rate: int,
    seconds: float,
    partitions: int,
    trace: bool,
) -> Result:
    topic_a, topic_b = f"lat-a-{uuid.uuid4().hex[:8]}", f"lat-b-{uuid.uuid4().hex[:8]}"
    create_topics(bootstrap, [topic_a, topic_b], partitions)
    trace_path = tempfile.mktemp(prefix="riverbed-latency-trace-", suffix=".jsonl")
    fmt = "riverbed_traced" if trace else "riverbed"
    for key, value in variant.spark_conf.items():
        spark.conf.set(key, value)
    source_options = {
        "kafka.bootstrap.servers": bootstrap,
        "subscribe": topic_a,
        "startingOffsets": "earliest",
        **variant.source,
    }
    sink_options = {
        "kafka.bootstrap.servers": bootstrap,
        "topic": topic_b,
        **variant.sink,
    }
    source_fmt = fmt if variant.source_format == "riverbed" else variant.source_format
    sink_fmt = fmt if variant.sink_format == "riverbed" else variant.sink_format
    if trace:
        for options, chosen in ((source_options, source_fmt), (sink_options, sink_fmt)):
            if chosen == "riverbed_traced":
                options["benchtrace"] = trace_path
    writer = (
        spark.readStream.format(source_fmt)
        .options(**source_options)
        .load()
        .select("key", "value")
        .writeStream.format(sink_fmt)
        .options(**sink_options)
    )
    try:
        query = (
            writer.option("checkpointLocation", tempfile.mkdtemp(prefix="riverbed-bench-cp-"))
            .trigger(processingTime=f"{trigger_ms} milliseconds")
            .start()
        )
    except Exception as exc:
        for key in variant.spark_conf:
            spark.conf.unset(key)
        raise Refused(f"[{variant.name}] refused by Spark: {str(exc).splitlines()[0]}") from None
    consumer = OutputConsumer(bootstrap, topic_b)
    consumer.start()
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    sent: list[int] = []
    try:
        warm = time.time_ns()
        producer.produce(topic_a, str(warm).encode())
        producer.flush(10)
        if not wait_for(lambda: warm in consumer.seen, 120):
            raise SystemExit(f"warm-up record never reached {topic_b}: {query.exception()}")
        print(
            f"[{variant.name}] warm-up (first micro-batch, query start included): "
            f"{(consumer.seen[warm][0] - warm) / 1e6:,.0f} ms"
        )
        # let a few empty micro-batches pass so that the first timed record does not
        # meet the tail of the warm-up batch
        time.sleep(1)
        load_before = load()
        started_ns = time.time_ns()
        interval = 1 / rate
        started = time.monotonic()
        while time.monotonic() - started < seconds:
            due = started + len(sent) * interval
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)  # pacing the producer, not synchronisation
            stamp = time.time_ns()
            producer.produce(topic_a, str(stamp).encode())
            producer.poll(0)
            sent.append(stamp)
        producer.flush(10)
        wait_for(lambda: all(s in consumer.seen for s in sent), 60)
        load_after = load()
        progress = [p for p in query.recentProgress if _progress_start_ns(p) >= started_ns - 10**9]
    finally:
        consumer.stopping.set()
        consumer.join(10)
        query.stop()
        for key in variant.spark_conf:
            spark.conf.unset(key)
    events: list[dict[str, Any]] = []
    if trace and os.path.exists(trace_path):
        with open(trace_path) as f:
            events = [json.loads(line) for line in f]
        os.unlink(trace_path)
    return Result(
        variant.name, sent, dict(consumer.seen), progress, events, load_before, load_after
    )


def _progress_start_ns(progress: Any) -> int:
    from datetime import datetime

    stamp = datetime.fromisoformat(progress["timestamp"].replace("Z", "+00:00"))
    return int(stamp.timestamp() * 1e9)


def summarise(result: Result, trigger_ms: int, rate: int) -> tuple[float, float]:
    recv, at_b = result.latencies()
    p50, p99, worst = quantiles(recv)
    b50, b99, _ = quantiles(at_b)
    print(
        f"[{result.variant}] produce -> Spark (trigger {trigger_ms} ms) -> topic: "
        f"{len(recv):,}/{len(result.sent):,} records at {rate}/s: received p50 {p50:,.0f} ms, "
        f"p99 {p99:,.0f} ms, max {worst:,.0f} ms; appended to B p50 {b50:,.0f} ms, "
        f"p99 {b99:,.0f} ms (load {result.load_before} -> {result.load_after})"
    )
    with_data = [p for p in result.progress if p.get("numInputRows", 0) > 0]
    if with_data:
        keys = sorted({k for p in with_data for k in p["durationMs"]})
        medians = {k: statistics.median(p["durationMs"].get(k, 0) for p in with_data) for k in keys}
        print(
            f"    Spark durationMs, median of {len(with_data)} micro-batches with data "
            f"({len(result.progress)} in all, "
            f"{statistics.mean(p['numInputRows'] for p in with_data):.1f} rows each): "
            + ", ".join(f"{k} {v:,.0f}" for k, v in medians.items())
        )
    if result.trace:
        breakdown(result)
    return p50, b50


def breakdown(result: Result) -> None:
    """Per record, consecutive stages that add up to receive - send; medians and p90
    over the timed records, in ms.  The micro-batch of a record is the one whose
    ``latestOffset`` returned last before its read task started (micro-batches run one
    at a time)."""
    events = result.trace
    first_read: dict[int, dict[str, Any]] = {}
    for e in events:
        if e["e"] == "read":
            for v, a in zip(e["v"], e["a"], strict=True):
                first_read.setdefault(int(v), {**e, "a": a})
    read_ends = {(e["pid"], e["t0"]): e["t"] for e in events if e["e"] == "read_end"}
    written: dict[int, dict[str, Any]] = {}
    for e in events:
        if e["e"] == "written":
            for v in e["v"]:
                written.setdefault(int(v), e)
    latests = sorted(e["t"] for e in events if e["e"] == "latest")
    planned = sorted(e["t"] for e in events if e["e"] == "partitions")
    sink_commits = sorted(e["t"] for e in events if e["e"] == "sink_commit")
    stages: dict[str, list[float]] = {}

    def add(name: str, value_ns: float) -> None:
        stages.setdefault(name, []).append(value_ns / 1e6)

    for s in result.sent:
        if s not in first_read or s not in written or s not in result.seen:
            continue
        read, write = first_read[s], written[s]
        start = read["t0"]
        latest = max((t for t in latests if t <= start), default=None)
        parts = max((t for t in planned if t <= start), default=None)
        if latest is None or parts is None or latest < s:
            continue
        received, appended_b_ms = result.seen[s]
        appended_a = read["a"] * 1000  # us -> ns
        add("send -> appended to A (broker's clock, ms)", appended_a - s)
        add("appended to A -> latestOffset returned it", latest - appended_a)
        add("latestOffset -> partitions() returned", parts - latest)
        add("partitions() -> read task started", start - parts)
        add("read task started -> record yielded", read["t"] - start)
        add("record yielded -> sink task got it", write["t1"] - read["t"])
        add("sink task got it -> flushed (acked)", write["t"] - write["t1"])
        add("flushed -> appended to B (broker's clock, ms)", appended_b_ms * 1e6 - write["t"])
        add("appended to B -> received by the consumer", received - appended_b_ms * 1e6)
        add("= total (received - send)", received - s)
        end = read_ends.get((read["pid"], start))
        if end is not None:
            add("  (aside) record yielded -> read task's consumer closed", end - read["t"])
        commit = min((t for t in sink_commits if t >= write["t"]), default=None)
        if commit is not None:
            add("  (aside) flushed -> driver's sink commit done", commit - write["t"])
    count = len(stages.get("= total (received - send)", []))
    if count == 0:
        print("    no per-record breakdown: the source is not traced (riverbed-jvm)")
        return
    print(f"    breakdown per record, ms (median, p90 of {count} records):")
    for name, values in stages.items():
        values.sort()
        p90 = values[int(len(values) * 0.9)]
        print(f"      {name:<56} {statistics.median(values):7.1f} {p90:7.1f}")
    gaps = [(b - a) / 1e6 for a, b in itertools.pairwise(latests)]
    sources = sorted({str(e.get("src")) for e in events if e["e"] == "written"})
    print(f"    sink code: {', '.join(sources)}")
    pids = {
        kind: len({e["pid"] for e in events if e["e"] == kind})
        for kind in ("latest", "read", "written", "stream_writer")
    }
    if gaps:
        print(
            f"    micro-batches: {len(latests)} latestOffset calls, one every "
            f"{statistics.median(gaps):.0f} ms (median); processes: "
            + ", ".join(f"{k} {n}" for k, n in pids.items())
            + f"; sink commits {len(sink_commits)}"
        )


def local_session(jvm: bool = False) -> SparkSession:
    """Spark's own configuration (not riverbed.spark.local_session's defaults), with the
    riverbed-jvm jars on the classpath when ``jvm``."""
    jars = None
    if jvm:
        from riverbed.spark.jvm import jvm_reader_classpath

        jars = jvm_reader_classpath()
    return spark_session(jars, TracedSource)


def spark_session(jars: str | None, *sources: type[DataSource]) -> SparkSession:
    """The benchmarks' ``local[2]`` session (2 shuffle partitions, no UI, Python workers
    reused), ``jars`` (a classpath) on the driver's and executors' classpaths, the
    riverbed sources and ``sources`` registered."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    builder = SparkSession.builder
    if jars is not None:
        builder = builder.config("spark.driver.extraClassPath", jars).config(
            "spark.executor.extraClassPath", jars
        )
    session = (
        builder.master("local[2]")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.python.worker.reuse", "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    riverbed.spark.register(session)
    for source in sources:
        session.dataSource.register(source)
    return session


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--bootstrap", help="a running broker instead of a started one")
    parser.add_argument("--trigger-ms", type=int, default=100)
    parser.add_argument("--rate", type=int, default=200, help="records/s")
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--trace", action="store_true")
    parser.add_argument("--variant", action="append", choices=sorted(VARIANTS))
    args = parser.parse_args()
    from bench_produce_consume import riverbed_subprocess

    variants = [VARIANTS[n] for n in (args.variant or ["default"])]
    with riverbed_subprocess(False) if args.bootstrap is None else _given(args.bootstrap) as bs:
        spark = local_session(
            jvm=any("riverbed-jvm" in (v.source_format, v.sink_format) for v in variants)
        )
        try:
            figures: dict[str, list[tuple[float, float]]] = {}
            for _ in range(args.rounds):
                for variant in variants:
                    try:
                        result = run_variant(
                            spark,
                            bs,
                            variant,
                            args.trigger_ms,
                            args.rate,
                            args.seconds,
                            args.partitions,
                            args.trace,
                        )
                    except Refused as exc:
                        print(exc)
                        continue
                    figures.setdefault(variant.name, []).append(
                        summarise(result, args.trigger_ms, args.rate)
                    )
            if args.rounds > 1:
                for name, values in figures.items():
                    print(
                        f"{name}: p50 received per round "
                        + ", ".join(f"{r:.0f}" for r, _ in values)
                        + f"; median {statistics.median(r for r, _ in values):.0f} ms"
                    )
        finally:
            spark.stop()


class _given:
    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap

    def __enter__(self) -> str:
        return self.bootstrap

    def __exit__(self, *exc: object) -> None:
        return None


if __name__ == "__main__":
    main()
