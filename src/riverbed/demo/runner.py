"""``riverbed demo``: broker, clickstream, Spark pipeline and live progress, in one process.

Lifecycle (each step undone in reverse order, whatever ends the run)::

    stderr -> data_dir/demo.log              Spark, JVM, librdkafka, Python logging
    EmbeddedBroker(data_dir/broker)          127.0.0.1, ephemeral port
      or --bootstrap-server HOST:PORT        an external Kafka cluster (nothing started)
    topics pageviews / pageviews-per-user-hour / pageviews-late (retention unlimited)
    local[2] SparkSession + pageviews query  processingTime trigger, data_dir/checkpoint
      or --master spark://HOST:PORT          executors on a Spark cluster
    ClickstreamProducer thread               --rate events/s, event time --speedup x wall time
    progress every second                    until --duration elapses
    drain                                    generator stopped; wait for lag 0 (bounded)
    summary and per-user-per-hour table      from data_dir/analytics.sqlite

The data dir is kept (the CLI makes a fresh temporary one when none is given).  Running
again on the same data dir *resumes*: the broker reopens its logs, the query restarts from
its checkpoint, and the clickstream continues after the events already in the topic, so
the table accumulates both runs.

External engines (``DemoOptions.bootstrap_servers`` / ``master``, see docs/scale-out.md):
the topics are created with the cluster's default replication factor (or
``replication_factor``) and the clickstream producer is idempotent with ``acks=all``, so a
broker dying mid-run costs retries, not page views; the lag probe tolerates a partition
without a leader for a moment.  With a Spark master, executors run the pipeline's source in
Python workers started with this interpreter (``spark.pyspark.python``): they must import
``riverbed`` -- on another machine, the same package installed at the same path.  The
checkpoint and ``analytics.sqlite`` stay in the data dir on the driver's machine
(``foreachBatch`` writes the table on the driver); a real cluster needs the checkpoint on
storage the driver can reach after a restart.

Ctrl-C (KeyboardInterrupt) at any point runs the same teardown -- query stopped, Spark
stopped, generator joined, broker stopped -- with SIGINT ignored meanwhile, and
:func:`run_demo` re-raises it for the CLI to turn into a one-line message.  Any other
failure is logged with its traceback to ``demo.log`` and re-raised for the CLI likewise.
Not thread-safe: one demo per process (it redirects the process's stderr).
"""

from __future__ import annotations

import contextlib
import json
import logging
import signal
import socket
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, cast

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from riverbed.demo.clickstream import (
    ClickstreamGenerator,
    ClickstreamProducer,
    ClickstreamSpec,
    create_topics,
)
from riverbed.demo.logs import (
    FAILURE_MARK,
    KAFKA_LOGGER,
    log_path,
    run_cleanups,
    spark_log_options,
    stderr_to,
    stdout_to,
)
from riverbed.demo.progress import (
    RATE_WINDOW_S,
    Progress,
    ProgressDisplay,
    RateMeter,
    Summary,
    duration,
    format_progress,
    format_summary,
)
from riverbed.demo.table import UserHour, format_user_hours, sqlite_hint, user_hours
from riverbed.errors import RiverbedError

if TYPE_CHECKING:
    from riverbed.pipelines.pageviews import BatchStats

INPUT_TOPIC = "pageviews"
OUTPUT_TOPIC = "pageviews-per-user-hour"
LATE_TOPIC = "pageviews-late"
logger = logging.getLogger("riverbed.demo")


@dataclass(frozen=True, slots=True)
class DemoOptions:
    duration_s: float = 30.0
    users: int = 20
    rate: float = 200.0  # events per wall-clock second
    speedup: float = 600.0  # event-time seconds per wall-clock second
    partitions: int = 2
    seed: int = 7
    allowed_delay_ms: int = 10 * 60_000
    late_fraction: float = 0.01
    trigger_s: float = 2.0
    drain_timeout_s: float = 60.0
    top_rows: int = 12
    bootstrap_servers: str | None = None  # an external Kafka cluster instead of the embedded one
    master: str | None = None  # a Spark master URL instead of local[2]
    replication_factor: int | None = None  # external topics; None: the cluster's default


@dataclass(frozen=True, slots=True)
class DemoResult:
    summary: Summary
    rows: list[UserHour]
    data_dir: Path
    database: Path
    log: Path
    resumed_from: int  # page views already in the input topic when the run started


class _Lag:
    """High watermarks of the input topic (consumer lag = these minus committed offsets)."""

    def __init__(self, kafka: Mapping[str, object], timeout_s: float = 30.0) -> None:
        self._consumer = Consumer({**kafka, "group.id": "riverbed-demo-lag"})
        # On a cluster, the broker this consumer asks may learn of the just-created topic
        # after the one that answered the creator: an empty partition list is "not yet".
        deadline = time.monotonic() + timeout_s
        self._partitions: list[int] = []
        while not self._partitions and time.monotonic() < deadline:
            topic = self._consumer.list_topics(INPUT_TOPIC, timeout=10).topics.get(INPUT_TOPIC)
            if topic is not None and topic.error is None:
                self._partitions = sorted(topic.partitions)
            if not self._partitions:
                time.sleep(0.2)

    def high_watermarks(self) -> int | None:
        """Sum of the high watermarks; None while a partition has no reachable leader
        (or the topic's partitions are not known yet)."""
        if not self._partitions:
            return None
        try:
            return sum(
                self._consumer.get_watermark_offsets(TopicPartition(INPUT_TOPIC, p), timeout=5)[1]
                for p in self._partitions
            )
        except KafkaException as exc:
            logger.info("lag probe: %s (a leader change?); retrying next tick", exc)
            return None

    def close(self) -> None:
        self._consumer.close()


def _committed(progress: dict[str, Any] | None) -> int | None:
    if not progress or not progress.get("sources"):
        return None
    end = progress["sources"][0].get("endOffset")
    offsets = json.loads(end) if isinstance(end, str) else end
    if not isinstance(offsets, dict):
        return None
    return sum(int(o) for parts in offsets.values() for o in parts.values())


@contextlib.contextmanager
def _interrupts_ignored() -> Iterator[None]:
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def _logger_level(name: str, level: int) -> Iterator[None]:
    target = logging.getLogger(name)
    previous = target.level
    target.setLevel(level)
    try:
        yield
    finally:
        target.setLevel(previous)


def run_demo(
    options: DemoOptions,
    data_dir: Path,
    out: TextIO = sys.stdout,
    on_progress: Callable[[Progress], None] | None = None,
) -> DemoResult:
    """Run the demo in ``data_dir`` (see the module docstring); returns what it counted."""
    data_dir.mkdir(parents=True, exist_ok=True)
    with stderr_to(log_path(data_dir)), _logger_level("py4j", logging.WARNING):
        logger.info("riverbed demo starting in %s with %s", data_dir, asdict(options))
        return _Demo(options, data_dir, out, on_progress).run()


class _Demo:
    """One run: the steps of the module docstring, with their cleanups."""

    def __init__(
        self,
        options: DemoOptions,
        data_dir: Path,
        out: TextIO,
        on_progress: Callable[[Progress], None] | None,
    ) -> None:
        self.options = options
        self.data_dir = data_dir
        self.out = out
        self.on_progress = on_progress
        self.display = ProgressDisplay(out)
        self.cleanups: list[tuple[str, Callable[[], object]]] = []
        self.started = time.monotonic()

    def say(self, text: str) -> None:
        self.display.end_line()
        self.out.write(text + "\n")
        self.out.flush()

    def run(self) -> DemoResult:
        try:
            return self._run()
        except KeyboardInterrupt:
            logger.info("Ctrl-C: stopping")
            self.say("\nCtrl-C: stopping the pipeline, Spark, the clickstream and the broker...")
            raise
        except BaseException:
            logger.exception(FAILURE_MARK)  # before the cleanups: tail() shows what led here
            raise
        finally:
            self.display.end_line()
            with _interrupts_ignored():
                run_cleanups(self.cleanups, logger)

    def _run(self) -> DemoResult:
        from riverbed.testing.embedded import EmbeddedBroker

        options, data_dir = self.options, self.data_dir
        log = log_path(data_dir)
        self.say(f"riverbed demo: data dir {data_dir} (log: {log.name})")
        topics = [INPUT_TOPIC, OUTPUT_TOPIC, LATE_TOPIC]
        producer_config: dict[str, object]
        if options.bootstrap_servers is None:
            broker = EmbeddedBroker(data_dir / "broker").start()
            self.cleanups.append(("broker", broker.stop))
            bootstrap = broker.bootstrap_servers
            kafka: dict[str, object] = {"bootstrap.servers": bootstrap, "logger": KAFKA_LOGGER}
            create_topics(kafka, topics, options.partitions)
            producer_config, where = kafka, "embedded Riverbed"
        else:
            bootstrap = options.bootstrap_servers
            kafka = {"bootstrap.servers": bootstrap, "logger": KAFKA_LOGGER}
            brokers = create_replicated_topics(
                kafka, topics, options.partitions, options.replication_factor
            )
            producer_config = {**kafka, "enable.idempotence": True, "acks": "all"}
            where = f"external Kafka cluster, {brokers} broker{'s' if brokers > 1 else ''}"
        lag = _Lag(kafka)
        self.cleanups.append(("lag probe", lag.close))
        earlier = lag.high_watermarks()
        if earlier is None:
            raise RiverbedError(f"cannot read the offsets of topic {INPUT_TOPIC} on {bootstrap}")
        self.say(
            f"broker     {bootstrap} ({where})\n"
            f"topics     {INPUT_TOPIC} -> pipeline -> {OUTPUT_TOPIC} + {LATE_TOPIC}"
        )
        if earlier:
            self.say(
                f"resuming   {earlier:,} page views from earlier runs in this data dir; "
                "the query continues from its checkpoint"
            )
        spec = ClickstreamSpec(
            users=options.users,
            seed=options.seed,
            step_ms=max(1, int(options.speedup * 1000 / options.rate)),
            late_fraction=options.late_fraction,
        )
        events = ClickstreamGenerator(spec)
        events.skip(earlier)
        self.say(
            f"clicks     {options.users} users, {options.rate:g} page views/s, event time runs "
            f"x{options.speedup:g} (an hour every {3600 / options.speedup:.3g} s)\n"
            f"           {spec.out_of_order_fraction:.0%} out of order (up to "
            f"{duration(spec.jitter_ms)}), {spec.late_fraction:.0%} late "
            f"({duration(spec.late_by_ms)} behind); watermark delay "
            f"{duration(options.allowed_delay_ms)}"
        )
        spark_options = spark_log_options()
        if options.master is not None:
            check_master_reachable(options.master)
            spark_options.update(cluster_spark_options(options.master))
        self.say(f"spark      starting {options.master or 'local[2]'} (about 10 s)...")
        from riverbed.pipelines.pageviews import PageviewConfig, local_spark, start_pageviews_query

        with stdout_to(log):  # the JVM and its Python workers inherit descriptor 1
            spark = local_spark("riverbed-demo", spark_options)
        self.cleanups.append(("Spark", spark.stop))
        config = PageviewConfig(
            bootstrap_servers=bootstrap,
            database=data_dir / "analytics.sqlite",
            checkpoint=data_dir / "checkpoint",
            input_topic=INPUT_TOPIC,
            output_topic=OUTPUT_TOPIC,
            late_topic=LATE_TOPIC,
            allowed_delay_ms=options.allowed_delay_ms,
        )
        query, writer = start_pageviews_query(
            spark, config, processing_time=f"{options.trigger_s:g} seconds"
        )
        self.cleanups.append(("query", lambda: query.stop() if query.isActive else None))
        startup_s = time.monotonic() - self.started
        generator = ClickstreamProducer(producer_config, INPUT_TOPIC, events, options.rate)
        generator.start()
        self.cleanups.append(("clickstream", generator.stop))
        self.say(
            f"streaming  for {options.duration_s:g} s.  in/out: records the pipeline read/wrote"
            f" (@: per s, last {RATE_WINDOW_S:g} s)\n"
            "           lag: records not read yet; batch: last micro-batch's duration;\n"
            "           late: stragglers behind the watermark (side output, not counted)"
        )
        streaming_started = time.monotonic()
        in_rate, out_rate = RateMeter(), RateMeter()
        baseline = 0 if not earlier else None  # committed offsets unknown until a batch ends

        def snapshot() -> Progress:
            error = query.exception()
            if error is not None:
                raise RiverbedError(f"the pipeline failed: {_first_line(str(error))}")
            progress = query.lastProgress
            committed = _committed(progress)
            if committed is None:
                committed = baseline
            high = lag.high_watermarks()
            last = writer.last
            now = time.monotonic()
            return Progress(
                elapsed_s=now - streaming_started,
                produced=generator.acknowledged,
                records_in=writer.rows_in,
                records_out=writer.records_out,
                late=writer.late,
                consumer_lag=None if committed is None or high is None else high - committed,
                batches=0 if last is None else writer.batches,
                batch_duration_s=_batch_duration_s(progress, last),
                watermark_ms=None if last is None else last.watermark_ms,
                in_rate=in_rate.add(now, writer.rows_in),
                out_rate=out_rate.add(now, writer.records_out),
            )

        def show(p: Progress, force: bool = False) -> Progress:
            logger.info("progress: %s", format_progress(p).strip())
            if self.on_progress is not None:
                self.on_progress(p)
            self.display.show(p, force)
            return p

        while time.monotonic() - streaming_started < options.duration_s:
            show(snapshot())
            time.sleep(1.0)
        generator.stop()
        streaming_s = time.monotonic() - streaming_started
        drain_deadline = time.monotonic() + options.drain_timeout_s
        drained = False
        while time.monotonic() < drain_deadline:
            p = snapshot()
            drained = p.records_in >= generator.acknowledged and p.consumer_lag == 0
            show(p, force=drained)
            if drained:
                break
            time.sleep(0.5)
        self.display.end_line()
        if not drained:
            self.say(
                f"note: the pipeline had not caught up after {options.drain_timeout_s:g} s "
                "of draining; the table below is partial"
            )
        if generator.errors:
            logger.warning("clickstream delivery errors: %s", generator.errors)
            self.say(
                f"note: {generator.produced - generator.acknowledged:,} page views were "
                f"not acknowledged ({generator.errors[0]})"
            )
        with _interrupts_ignored():
            query.stop()
        final = query.lastProgress
        store = writer.store
        rows = user_hours(
            store.counts("tumbling"),
            store.counts("hopping"),
            store.counts("late"),
            window_ms=config.window_ms,
            slide_ms=config.slide_ms,
        )
        summary = Summary(
            produced=generator.acknowledged,
            in_order=events.in_order,
            out_of_order=events.out_of_order,
            late_generated=events.late,
            jitter_ms=spec.jitter_ms,
            late_by_ms=spec.late_by_ms,
            records_in=writer.rows_in,
            records_out=writer.records_out,
            stragglers=writer.late,
            malformed=writer.malformed,
            batches=writer.batches,
            last_batch_s=_batch_duration_s(final, writer.last),
            watermark_ms=store.watermark_ms(options.allowed_delay_ms),
            allowed_delay_ms=options.allowed_delay_ms,
            first_event_ms=events.first_event_ms,
            last_event_ms=events.last_event_ms,
            streaming_s=streaming_s,
            startup_s=startup_s,
            wall_s=time.monotonic() - self.started,
        )
        self._report(summary, rows, config.database, log, earlier)
        return DemoResult(summary, rows, data_dir, config.database, log, earlier)

    def _report(
        self, summary: Summary, rows: list[UserHour], database: Path, log: Path, earlier: int
    ) -> None:
        top = self.options.top_rows
        shown = "" if len(rows) <= top else f", the {top} largest counts"
        both = " (all runs in this data dir)" if earlier else ""
        self.say("")
        self.say(format_summary(summary))
        self.say("")
        self.say(f"page views per user per hour{both}, event time{shown}:")
        self.say(format_user_hours(rows, top=top))
        self.say(
            "tumbling = views in [hh:00, hh+1:00); +15 = hopping window [hh:15, hh+1:15), ...;\n"
            f"late = stragglers of that hour, diverted to topic {LATE_TOPIC} and not counted."
        )
        self.say("")
        self.say(f"whole table: {database}, e.g.\n  {sqlite_hint(database)}")
        self.say(f"log:         {log}")
        self.say(
            f"data dir:    {self.data_dir} (run again with --data-dir to resume it; "
            "remove with rm -r)"
        )


def _batch_duration_s(progress: dict[str, Any] | None, last: BatchStats | None) -> float | None:
    """Spark's ``triggerExecution`` of the last batch, else the writer's own timing."""
    if progress is not None and "triggerExecution" in progress.get("durationMs", {}):
        return float(progress["durationMs"]["triggerExecution"]) / 1000
    return None if last is None else last.duration_s


def _first_line(text: str, limit: int = 300) -> str:
    line = next((s.strip() for s in text.splitlines() if s.strip()), "")
    return line if len(line) <= limit else line[: limit - 3] + "..."


def create_replicated_topics(
    kafka: Mapping[str, object],
    names: list[str],
    partitions: int,
    replication_factor: int | None,
    timeout_s: float = 30,
) -> int:
    """Create ``names`` on an external cluster (existing ones stay); returns its broker count.

    Replication factor ``replication_factor``, or the cluster's ``default.replication.factor``
    when None; unlimited time retention (see :func:`~riverbed.demo.clickstream.create_topics`).
    Returns once every topic has a leader for each partition in the metadata.  Raises
    :class:`RiverbedError` when the cluster does not answer within ``timeout_s``.
    """
    admin = AdminClient(cast(dict[str, Any], dict(kafka)))
    try:
        brokers = len(admin.list_topics(timeout=min(timeout_s, 15)).brokers)
    except KafkaException as exc:
        raise RiverbedError(
            f"cannot reach --bootstrap-server {kafka['bootstrap.servers']}: {exc}"
        ) from None
    futures = admin.create_topics(
        [
            NewTopic(name, partitions, replication_factor or -1, config={"retention.ms": "-1"})
            for name in names
        ],
        request_timeout=timeout_s,
    )
    for name, future in futures.items():
        try:
            future.result(timeout_s)
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            if not (
                isinstance(error, KafkaError) and error.code() == KafkaError.TOPIC_ALREADY_EXISTS
            ):
                raise RiverbedError(f"cannot create topic {name}: {error or exc}") from None
    deadline = time.monotonic() + timeout_s
    while True:
        topics = admin.list_topics(timeout=10).topics
        if all(
            name in topics
            and topics[name].error is None
            and topics[name].partitions
            and all(p.leader >= 0 for p in topics[name].partitions.values())
            for name in names
        ):
            return brokers
        if time.monotonic() > deadline:
            raise RiverbedError(f"topics {names} have no leaders after {timeout_s:g} s")
        time.sleep(0.2)


def cluster_spark_options(master: str) -> dict[str, str]:
    """SparkSession settings for running the pipeline on ``master`` instead of local[2].

    Executors start their Python workers with this interpreter, so a cluster on this
    machine imports the same ``riverbed``; a cluster elsewhere needs it installed at the
    same path (or ``spark.pyspark.python`` set to where it is).
    """
    return {
        "spark.master": master,
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
        "spark.executorEnv.PYSPARK_PYTHON": sys.executable,
    }


def check_master_reachable(master: str, timeout_s: float = 5.0) -> None:
    """Raise :class:`RiverbedError` unless a ``spark://`` master accepts a TCP connection.

    Spark itself would retry for about a minute before giving up; other URLs (``local[N]``,
    ``yarn``, ``k8s://``) are left to Spark.
    """
    if not master.startswith("spark://"):
        return
    errors = []
    for address in master.removeprefix("spark://").split(","):
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise RiverbedError(f"--master {master}: expected spark://HOST:PORT")
        try:
            with socket.create_connection((host, int(port)), timeout=timeout_s):
                return
        except OSError as exc:
            errors.append(f"{address}: {exc.strerror or exc}")
    raise RiverbedError(f"cannot reach Spark master {master} ({'; '.join(errors)})")
