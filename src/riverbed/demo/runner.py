"""``riverbed demo``: broker, clickstream, Spark pipeline and live progress, in one process.

Lifecycle (each step undone in reverse order, whatever ends the run)::

    EmbeddedBroker(data_dir/broker)          127.0.0.1, ephemeral port
    topics pageviews / pageviews-per-user-hour / pageviews-late (retention unlimited)
    ClickstreamProducer thread               --rate events/s, event time --speedup x wall time
    local[2] SparkSession + pageviews query  processingTime trigger
    progress every second                    until --duration elapses
    drain                                    generator stopped; wait for lag 0 (bounded)
    print the per-user-per-hour table        from data_dir/analytics.sqlite

Ctrl-C (KeyboardInterrupt) at any point runs the same teardown -- query stopped, Spark
stopped, generator joined, broker stopped -- and :func:`run_demo` re-raises it for the
CLI to turn into a one-line message.  A second Ctrl-C during teardown is ignored.  A
temporary data dir (no ``--data-dir``) is removed at the end; a given one is kept, with the
broker's logs, the checkpoint and the SQLite table in it.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from confluent_kafka import Consumer, TopicPartition

from riverbed.demo.clickstream import (
    ClickstreamGenerator,
    ClickstreamProducer,
    ClickstreamSpec,
    create_topics,
)
from riverbed.demo.progress import Progress, format_hourly_table, format_progress
from riverbed.errors import RiverbedError

INPUT_TOPIC = "pageviews"
OUTPUT_TOPIC = "pageviews-per-user-hour"
LATE_TOPIC = "pageviews-late"


@dataclass(frozen=True, slots=True)
class DemoOptions:
    duration_s: float = 30.0
    data_dir: Path | None = None
    users: int = 20
    rate: float = 200.0  # events per wall-clock second
    speedup: float = 600.0  # event-time seconds per wall-clock second
    partitions: int = 2
    seed: int = 7
    allowed_delay_ms: int = 10 * 60_000
    late_fraction: float = 0.01
    trigger_s: float = 2.0
    drain_timeout_s: float = 60.0


@dataclass(frozen=True, slots=True)
class DemoResult:
    produced: int
    records_in: int
    late: int
    table: str
    data_dir: Path


class _Lag:
    """High watermark minus the query's committed end offsets (no consumer group needed)."""

    def __init__(self, bootstrap: str, partitions: int) -> None:
        self._consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "riverbed-demo-lag"})
        self._partitions = partitions

    def high_watermarks(self) -> int:
        return sum(
            self._consumer.get_watermark_offsets(TopicPartition(INPUT_TOPIC, p), timeout=5)[1]
            for p in range(self._partitions)
        )

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
def _teardown_without_interrupts() -> Iterator[None]:
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def run_demo(
    options: DemoOptions,
    out: TextIO = sys.stdout,
    on_progress: Callable[[Progress], None] | None = None,
) -> DemoResult:
    """Run the demo (see the module docstring); returns what it counted."""
    from riverbed.testing.embedded import EmbeddedBroker

    own_dir = options.data_dir is None
    data_dir = Path(tempfile.mkdtemp(prefix="riverbed-demo-")) if own_dir else options.data_dir
    assert data_dir is not None
    data_dir.mkdir(parents=True, exist_ok=True)
    is_tty = out.isatty()
    cleanups: list[Callable[[], None]] = []
    if own_dir:
        cleanups.append(lambda: shutil.rmtree(data_dir, ignore_errors=True))
    try:
        out.write(f"riverbed demo: data in {data_dir}\n")
        broker = EmbeddedBroker(data_dir / "broker").start()
        cleanups.append(broker.stop)
        bootstrap = broker.bootstrap_servers
        kafka = {"bootstrap.servers": bootstrap}
        create_topics(kafka, [INPUT_TOPIC, OUTPUT_TOPIC, LATE_TOPIC], options.partitions)
        out.write(f"broker on {bootstrap}; topics {INPUT_TOPIC}, {OUTPUT_TOPIC}, {LATE_TOPIC}\n")
        spec = ClickstreamSpec(
            users=options.users,
            seed=options.seed,
            step_ms=max(1, int(options.speedup * 1000 / options.rate)),
            late_fraction=options.late_fraction,
        )
        out.write(f"clickstream: {options.users} users, {options.rate:g} events/s, event time "
                  f"x{options.speedup:g}; starting Spark (local[2])...\n")
        out.flush()

        from riverbed.spark.pageviews import PageviewConfig, local_spark, start_pageviews_query

        spark = local_spark("riverbed-demo")
        cleanups.append(spark.stop)
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
        cleanups.append(lambda: query.stop() if query.isActive else None)
        generator = ClickstreamProducer(kafka, INPUT_TOPIC, ClickstreamGenerator(spec),
                                        options.rate)
        generator.start()
        cleanups.append(generator.stop)
        lag = _Lag(bootstrap, options.partitions)
        cleanups.append(lag.close)
        started = time.monotonic()

        def snapshot() -> Progress:
            if query.exception() is not None:
                raise RiverbedError(f"the pipeline failed: {query.exception()}")
            progress = query.lastProgress
            committed = _committed(progress)
            last = writer.last
            return Progress(
                elapsed_s=time.monotonic() - started,
                produced=generator.acknowledged,
                records_in=writer.rows_in,
                records_out=writer.records_out,
                late=writer.late,
                consumer_lag=None if committed is None else lag.high_watermarks() - committed,
                batches=0 if last is None else last.batch_id + 1,
                batch_duration_s=None if progress is None
                else progress["durationMs"].get("triggerExecution", 0) / 1000,
                watermark_ms=None if last is None else last.watermark_ms,
            )

        def show(p: Progress) -> None:
            if on_progress is not None:
                on_progress(p)
            line = format_progress(p)
            out.write(("\r" + line + "\x1b[K") if is_tty else line + "\n")
            out.flush()

        while time.monotonic() - started < options.duration_s:
            show(snapshot())
            time.sleep(1.0)
        generator.stop()
        drain_deadline = time.monotonic() + options.drain_timeout_s
        while time.monotonic() < drain_deadline:
            p = snapshot()
            show(p)
            if p.records_in >= generator.acknowledged and p.consumer_lag == 0:
                break
            time.sleep(0.5)
        out.write("\n" if is_tty else "")
        with _teardown_without_interrupts():
            query.stop()
        table = format_hourly_table(writer.store.counts("tumbling"), writer.store.counts("late"))
        day = time.strftime("%Y-%m-%d", time.gmtime(spec.start_ms / 1000))
        out.write(f"\npage views per user per hour (event time, UTC, from {day}):\n{table}\n")
        out.write(f"stragglers behind the watermark: {writer.late} (in topic {LATE_TOPIC})\n")
        if not own_dir:
            out.write(f"table: {config.database} (view pageviews_per_user_hour)\n")
        out.flush()
        return DemoResult(generator.acknowledged, writer.rows_in, writer.late, table, data_dir)
    finally:
        with _teardown_without_interrupts():
            for cleanup in reversed(cleanups):
                with contextlib.suppress(Exception):
                    cleanup()
