"""``riverbed demo --chapter``: DDIA chapter 11 in one process (docs/chapter-demo.md).

What runs, in start order (each stopped in reverse order, whatever ends the run)::

    stderr -> data_dir/demo.log               Spark, the JVM, librdkafka, Python logging
    EmbeddedBroker(data_dir/broker)           or --bootstrap-server (nothing started)
    topics pageviews, logins, activity, activity-enriched, sessions, fraud-alerts,
           pageviews-per-user-hour, pageviews-late
    data_dir/users.sqlite + UsersMutator      users(id, name, country), changed 4x a second
    SqliteConnector thread                    users -> riverbed.main.users (Debezium,
                                              compacted), position in riverbed.cdc-offsets
    one local[2] SparkSession                 shuffle partitions 2, polling every 1 s
      windows   riverbed.pipelines.pageviews  pageviews -> per user per hour (SQLite + topic)
      enrich    riverbed.pipelines.enrich     activity x riverbed.main.users (temporal join)
      sessions  riverbed.pipelines.sessions   pageviews -> sessions (30 min gap)
      fraud     riverbed.pipelines.fraud      logins -> fraud-alerts (3 failures + success)
    serve_pipeline_metrics                    the queries' progress, Prometheus text
    ConsoleServer                             --console-listen, its connectors page scraping
                                              the exporter above (live, nothing hand-fed)
    views thread (riverbed.views.run_views)   riverbed.main.users + activity-enriched +
                                              sessions -> search (SQLite FTS5), cache
                                              (Redis with --redis, else in-process),
                                              analytics (DuckDB, the views extra)
    EventProducer thread                      page views, logins, activities (--rate)

After ``duration_s``: the mutator stops, the connector closes (every change acknowledged),
the generator stops and writes one end-of-input event per stream (2 h of event time
ahead), and the demo waits until every query has read everything and run the batch in
which its watermark passed all real events -- from then on the output topics hold the
final answer of each pipeline over the whole input (the test compares them with batch
computations).  Then the views catch up and the summary is read back from the topics.

Ctrl-C or SIGTERM: the same teardown (SIGINT/SIGTERM ignored meanwhile), then
:class:`KeyboardInterrupt` propagates for the CLI (one line, exit 0).  Any other failure is
logged with its traceback to ``demo.log`` and re-raised.  One demo per process (it
redirects the process's stderr and installs a SIGTERM handler while it runs).
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from riverbed.demo.chapter_inputs import (
    EventProducer,
    MemoryCacheView,
    UsersMutator,
    captured_until,
    create_users_db,
    read_topic,
    wait_changes_captured,
)
from riverbed.demo.clickstream import DEFAULT_START_MS, create_topics
from riverbed.demo.logs import (
    FAILURE_MARK,
    KAFKA_LOGGER,
    log_path,
    run_cleanups,
    spark_log_options,
    stderr_to,
    stdout_to,
)
from riverbed.errors import RiverbedError

logger = logging.getLogger("riverbed.demo.chapter")

TOPIC_PREFIX = "riverbed"
USERS_TOPIC = f"{TOPIC_PREFIX}.main.users"
TOPICS = [
    "pageviews",
    "logins",
    "activity",
    "activity-enriched",
    "sessions",
    "fraud-alerts",
    "pageviews-per-user-hour",
    "pageviews-late",
]
VIEW_TOPICS = [USERS_TOPIC, "activity-enriched", "sessions"]
VIEWS_GROUP = "riverbed-chapter-views"
HOUR_MS = 3_600_000


@dataclass(frozen=True, slots=True)
class ChapterOptions:
    duration_s: float = 30.0
    users: int = 12
    rate: float = 40.0  # page views per wall-clock second
    speedup: float = 600.0  # event-time seconds per wall-clock second
    seed: int = 7
    partitions: int = 2
    console_host: str = "127.0.0.1"
    console_port: int = 0
    bootstrap_servers: str | None = None
    redis_url: str | None = None
    drain_timeout_s: float = 240.0


@dataclass(slots=True)
class ChapterResult:
    """What the summary printed (the numbers the test checks against the topics)."""

    console_url: str = ""
    produced: dict[str, int] = field(default_factory=dict)
    pipeline_read: int = 0
    cdc: dict[str, int] = field(default_factory=dict)  # op -> count, "total"
    enrich_joined: int = 0
    enrich_emitted: int = 0
    window_rows: int = 0
    window_views: int = 0
    sessions: int = 0
    fraud_alerts: int = 0
    views: dict[str, int] = field(default_factory=dict)  # search / cache / analytics
    drained: bool = False


def run_chapter(options: ChapterOptions, data_dir: Path, out: TextIO = sys.stdout) -> ChapterResult:
    """Run the chapter demo in ``data_dir`` (a new or empty directory; see module doc)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    if any(data_dir.iterdir()):
        raise RiverbedError(f"--chapter needs a new or empty --data-dir, not {data_dir}")
    with stderr_to(log_path(data_dir)), _sigterm_as_interrupt():
        logging.getLogger("py4j").setLevel(logging.WARNING)
        logger.info("riverbed demo --chapter starting in %s with %s", data_dir, asdict(options))
        return _Chapter(options, data_dir, out).run()


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    def interrupt(_signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def _signals_ignored() -> Iterator[None]:
    previous = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


class _ViewsThread(threading.Thread):
    """Feeds the views until stopped, then catches up to the topics' ends, counts the
    entries of each view and closes them (all on this thread: DuckDB's connection is
    not shared)."""

    def __init__(self, views: dict[str, Any], bootstrap: str) -> None:
        super().__init__(name="riverbed-chapter-views", daemon=True)
        self.views, self.bootstrap = views, bootstrap
        self.stopping = threading.Event()
        self.changes = 0
        self.counts: dict[str, int] = {}
        self.error: BaseException | None = None

    def _count(self, total: int) -> None:
        self.changes = total

    def run(self) -> None:
        from riverbed.views.driver import run_views

        views = list(self.views.values())
        try:
            run_views(
                views, self.bootstrap, VIEW_TOPICS, VIEWS_GROUP, self.stopping, on_batch=self._count
            )
            caught_up = run_views(views, self.bootstrap, VIEW_TOPICS, VIEWS_GROUP, stop_at_end=True)
            self.changes += caught_up
            self.counts = {name: len(view.snapshot()) for name, view in self.views.items()}
        except BaseException as exc:  # reported by the demo
            self.error = exc
        finally:
            for view in views:
                with contextlib.suppress(Exception):
                    view.close()

    def finish(self, timeout_s: float) -> dict[str, int]:
        self.stopping.set()
        self.join(timeout_s)
        if self.error is not None:
            raise RiverbedError(f"the views failed: {self.error}")
        if self.is_alive():
            raise RiverbedError(f"the views did not catch up within {timeout_s:g} s")
        return self.counts


class _Chapter:
    def __init__(self, options: ChapterOptions, data_dir: Path, out: TextIO) -> None:
        self.options, self.data_dir, self.out = options, data_dir, out
        self.cleanups: list[tuple[str, Callable[[], object]]] = []
        self.result = ChapterResult()
        self.started = time.monotonic()

    def say(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def run(self) -> ChapterResult:
        try:
            self._run()
            return self.result
        except KeyboardInterrupt:
            logger.info("interrupted: stopping")
            self.say("\nstopping: generators, CDC, Spark, views, console and broker...")
            raise
        except BaseException:
            logger.exception(FAILURE_MARK)
            raise
        finally:
            with _signals_ignored():
                run_cleanups(self.cleanups, logger)

    # -- start ----------------------------------------------------------------------

    def _run(self) -> None:
        o, data_dir = self.options, self.data_dir
        log = log_path(data_dir)
        self.say(f"riverbed demo --chapter: data dir {data_dir} (log: {log.name})")
        if o.bootstrap_servers is None:
            from riverbed.testing.embedded import EmbeddedBroker

            broker = EmbeddedBroker(data_dir / "broker").start()
            self.cleanups.append(("broker", broker.stop))
            bootstrap, where = broker.bootstrap_servers, "embedded Riverbed"
        else:
            bootstrap, where = o.bootstrap_servers, "external Kafka cluster"
        kafka: dict[str, object] = {"bootstrap.servers": bootstrap, "logger": KAFKA_LOGGER}
        create_topics(kafka, TOPICS, o.partitions)
        self.say(f"broker     {bootstrap} ({where})")

        import random

        from riverbed.cdc.runner import run as run_connector
        from riverbed.cdc.sqlite.connector import SqliteConnector

        database = data_dir / "users.sqlite"
        create_users_db(database, o.users, random.Random(o.seed))
        connector = SqliteConnector(
            database, {"bootstrap.servers": bootstrap}, topic_prefix=TOPIC_PREFIX, tables=["users"]
        )
        connector.start()
        cdc_stop = threading.Event()
        cdc_errors: list[BaseException] = []

        def capture() -> None:
            try:
                run_connector(connector, stop=cdc_stop)
            except BaseException as exc:
                cdc_errors.append(exc)

        cdc_thread = threading.Thread(target=capture, name="riverbed-chapter-cdc", daemon=True)
        cdc_thread.start()

        def stop_cdc() -> None:
            cdc_stop.set()
            cdc_thread.join(60)

        self.cleanups.append(("CDC connector", stop_cdc))
        self.say(
            f"cdc        {database.name}: users(id, name, country), {o.users} rows, changed "
            f"4x a second -> {USERS_TOPIC} (Debezium format, compacted)"
        )

        self.say("spark      starting one local[2] session and four queries (about 20 s)...")
        from riverbed.pipelines import enrich, fraud, sessions
        from riverbed.pipelines.example_io import read_topics, write_topic
        from riverbed.pipelines.examples import ExampleOptions
        from riverbed.pipelines.pageviews import (
            PageviewConfig,
            local_spark,
            start_pageviews_query,
        )
        from riverbed.spark.metrics import serve_pipeline_metrics

        spark_options = spark_log_options()
        spark_options["spark.sql.streaming.pollingDelay"] = "1s"
        # A Python worker that starts slowly on a loaded 2-core machine: more time for its
        # authentication handshake (its connecting back is retried by _start_query).
        spark_options["spark.python.authenticate.socketTimeout"] = "120s"
        with stdout_to(log):  # the JVM and its Python workers inherit descriptor 1
            spark = local_spark("riverbed-chapter", spark_options)
        self.cleanups.append(("Spark", spark.stop))
        exporter = serve_pipeline_metrics(spark, "127.0.0.1", 0)
        self.cleanups.append(("pipeline metrics", exporter.close))
        metrics_url = f"http://127.0.0.1:{exporter.port}/metrics"
        windows_config = PageviewConfig(
            bootstrap_servers=bootstrap,
            database=data_dir / "analytics.sqlite",
            checkpoint=data_dir / "checkpoint" / "windows",
        )
        example = ExampleOptions(bootstrap_server=bootstrap, checkpoint=data_dir / "checkpoint")
        writers = _Writers()

        def start_windows() -> Any:
            query, windows_writer = start_pageviews_query(
                spark, windows_config, processing_time="2 seconds", query_name="windows"
            )
            writers.append(windows_writer)
            return query

        def start_enrich() -> Any:
            # enrich emits each activity in the batch that reads it (its emit-on-arrival
            # mode, which `riverbed pipeline run enrich` uses with --available-now): the
            # generator stamps activities after the changes valid at them are in their topic.
            joined = enrich.enrich(
                read_topics(spark, example, [enrich.ACTIVITY]),
                read_topics(spark, example, [enrich.users_topic(example)]),
                emit_on_arrival=True,
            )
            return write_topic(joined, example, enrich.OUTPUT, enrich.QUERY_NAME)

        starters: dict[str, Callable[[], Any]] = {
            "windows": start_windows,
            "enrich": start_enrich,
            "sessions": lambda: sessions.start(spark, example)[0],
            "fraud": lambda: fraud.start(spark, example)[0],
        }
        queries: dict[str, Any] = {}
        for name, starter in starters.items():
            queries[name] = _start_query(starter, name)
            self.cleanups.append((f"query {name}", _stopper(queries[name])))
        writer = writers
        restarts: Counter[str] = Counter()
        query_names = {str(q.id): name for name, q in queries.items()}
        self.say(
            "pipelines  windows  pageviews -> pageviews-per-user-hour (1 h windows)\n"
            f"           enrich   activity x {USERS_TOPIC} -> activity-enriched\n"
            "           sessions pageviews -> sessions (30 min gap)\n"
            "           fraud    logins -> fraud-alerts (3 failures then a success in 5 min)\n"
            f"           progress as Prometheus text at {metrics_url}"
        )

        from riverbed.console.server import ConsoleServer

        console = ConsoleServer(
            bootstrap,
            o.console_host,
            o.console_port,
            pipeline_urls=[metrics_url],
            query_names=query_names,
            option="--console-listen",
        )
        console.start()
        self.cleanups.append(("console", console.stop))
        self.result.console_url = console.url
        self.say(f"console    {console.url}  (connectors & pipelines: {console.url}/connectors)")

        views, notes = self._open_views()
        views_thread = _ViewsThread(views, bootstrap)
        views_thread.start()
        self.cleanups.append(("views", lambda: views_thread.finish(30)))
        self.say(f"views      {', '.join(VIEW_TOPICS)} ->\n" + "\n".join(notes))

        mutator = UsersMutator(database, o.users, o.seed + 1)
        mutator.start()
        self.cleanups.append(("users mutator", mutator.stop))
        events = EventProducer(
            kafka,
            o.users,
            o.rate,
            o.speedup,
            o.seed,
            DEFAULT_START_MS,
            captured_until=captured_until(database),
        )
        events.start()
        self.cleanups.append(("generator", events.stop))
        self.say(
            f"streaming  for {o.duration_s:g} s: {o.rate:g} page views/s of {o.users} users "
            f"(event time x{o.speedup:g}), logins, activities; Ctrl-C stops"
        )
        streaming_started = time.monotonic()

        def check() -> None:
            for name, query in list(queries.items()):
                error = query.exception()
                if error is None:
                    continue
                if "connect back" in str(error) and restarts[name] < 3:
                    # a Python worker slow to start (see _start_query): the checkpoint
                    # makes a restart safe (exactly-once sink, batch-keyed windows store)
                    restarts[name] += 1
                    logger.warning("the %s query failed (%s); restarting it", name, error)
                    queries[name] = _start_query(starters[name], name)
                    query_names[str(queries[name].id)] = name
                    self.cleanups.append((f"query {name}", _stopper(queries[name])))
                    continue
                raise RiverbedError(f"the {name} query failed: {_first_line(str(error))}")
            for thread_error in (mutator.error, *cdc_errors, views_thread.error):
                if thread_error is not None:
                    raise RiverbedError(f"{_first_line(str(thread_error))}")

        def progress_line() -> str:
            batches = " ".join(
                f"{name} {_batch_id(query.lastProgress)}" for name, query in queries.items()
            )
            p = events.produced
            return (
                f"  {time.monotonic() - streaming_started:5.0f} s  produced {p['pageviews']:,}"
                f" views {p['logins']:,} logins {p['activity']:,} activities | users changed "
                f"{mutator.changes:,} | batches {batches} | views {views_thread.changes:,}"
            )

        next_line = 0.0
        while time.monotonic() - streaming_started < o.duration_s:
            check()
            if time.monotonic() >= next_line:
                self.say(progress_line())
                next_line = time.monotonic() + 5
            time.sleep(0.5)
        streaming_s = time.monotonic() - streaming_started

        # -- drain: every change and event in, then every watermark past them ------------
        self.say("draining   inputs stopped; end-of-input events sent; waiting for the queries")
        mutator.stop()
        # the connector's last poll may predate the mutator's last changes: let it take them
        if not wait_changes_captured(database, 120, cdc_thread.is_alive):
            self.say("note: the CDC connector did not capture every change before stopping")
        stop_cdc()
        events.stop()
        undelivered = events.finish()
        check()
        if undelivered or events.errors:
            self.say(f"note: {undelivered} records not acknowledged ({events.errors[:1]})")
        ends = {
            "windows": None,
            "enrich": events.end_ms["activity"],
            "sessions": events.end_ms["pageviews"],
            "fraud": events.end_ms["logins"],
        }
        deadline = time.monotonic() + o.drain_timeout_s
        next_line = time.monotonic() + 10
        while True:
            check()
            waiting = [
                name
                for name, query in queries.items()
                if not _done(query.lastProgress, ends[name], writer, events.produced["pageviews"])
            ]
            if not waiting:
                self.result.drained = True
                break
            if time.monotonic() > deadline:
                self.say(
                    f"note: {', '.join(waiting)} had not finished after "
                    f"{o.drain_timeout_s:g} s of draining; the summary is partial"
                )
                break
            if time.monotonic() >= next_line:
                self.say(progress_line() + f" | waiting for {', '.join(waiting)}")
                next_line = time.monotonic() + 10
            time.sleep(0.5)
        with _signals_ignored():
            for query in queries.values():
                query.stop()
        counts = views_thread.finish(120)
        self._summarize(kafka, writer, events, counts, notes, streaming_s)

    def _open_views(self) -> tuple[dict[str, Any], list[str]]:
        from riverbed.views.search import SearchView

        views: dict[str, Any] = {"search": SearchView(str(self.data_dir / "search.sqlite"))}
        notes = [f"           search     SQLite FTS5 {self.data_dir / 'search.sqlite'}"]
        if self.options.redis_url:
            from riverbed.views.cache import CacheView

            views["cache"] = CacheView(self.options.redis_url, "riverbed:chapter")
            notes.append(
                f"           cache      Redis {self.options.redis_url} (riverbed:chapter:*)"
            )
        else:
            views["cache"] = MemoryCacheView()
            notes.append("           cache      in-process dict (no --redis URL given)")
        if importlib.util.find_spec("duckdb") is not None:
            from riverbed.views.analytics import AnalyticsView

            views["analytics"] = AnalyticsView(str(self.data_dir / "analytics.duckdb"))
            notes.append(f"           analytics  DuckDB {self.data_dir / 'analytics.duckdb'}")
        else:
            notes.append(
                "           analytics  skipped: DuckDB needs the views extra "
                "(pip install 'riverbed[views]')"
            )
        return views, notes

    # -- the summary ----------------------------------------------------------------

    def _summarize(
        self,
        kafka: dict[str, object],
        writer: Any,
        events: EventProducer,
        view_counts: dict[str, int],
        notes: list[str],
        streaming_s: float,
    ) -> None:
        r = self.result
        r.produced = dict(events.produced)
        r.pipeline_read = writer.rows_in
        ops = Counter(
            str(value["op"])
            for _key, value in read_topic(kafka, USERS_TOPIC)
            if isinstance(value, dict) and "op" in value
        )
        r.cdc = {**ops, "total": sum(ops.values())}
        enriched = [v for _k, v in read_topic(kafka, "activity-enriched") if v is not None]
        r.enrich_emitted = len(enriched)
        r.enrich_joined = sum(v.get("name") is not None for v in enriched)
        tumbling = writer.store.counts("tumbling")
        r.window_rows = len(tumbling)
        r.window_views = sum(row.count for row in tumbling)
        r.sessions = len(read_topic(kafka, "sessions"))
        r.fraud_alerts = len(read_topic(kafka, "fraud-alerts"))
        r.views = dict(view_counts)
        p = r.produced
        cache = "in-process" if not self.options.redis_url else "Redis"
        analytics = (
            f"analytics {r.views['analytics']:,} rows"
            if "analytics" in r.views
            else "analytics skipped (pip install 'riverbed[views]')"
        )
        self.say("")
        self.say("summary")
        self.say(
            f"  produced   {p['pageviews']:,} page views, {p['logins']:,} logins, "
            f"{p['activity']:,} activities in {streaming_s:.0f} s (each stream's last record "
            "marks the end of input)"
        )
        self.say(
            f"  pipeline   read {r.pipeline_read:,} in {writer.batches:,} micro-batches "
            "(the windows query)"
        )
        self.say(
            f"  cdc:       captured {r.cdc['total']:,} changes of users ({ops['r']:,} snapshot, "
            f"{ops['c']:,} inserts, {ops['u']:,} updates, {ops['d']:,} deletes)"
        )
        self.say(
            f"  enrich:    joined {r.enrich_joined:,} of {r.enrich_emitted:,} activities with "
            "the users row valid at their time (the rest: no such user then)"
        )
        self.say(
            f"  windows:   {r.window_rows:,} rows (user x hour), {r.window_views:,} page views "
            f"counted, {writer.late:,} late"
        )
        self.say(f"  sessions:  {r.sessions:,} sessions closed (30 min without a view)")
        self.say(f"  fraud:     {r.fraud_alerts:,} alerts")
        self.say(
            f"  views:     search {r.views.get('search', 0):,} docs, cache "
            f"{r.views.get('cache', 0):,} keys ({cache}), {analytics}"
        )
        self.say("")
        self.say(f"data dir:    {self.data_dir} (log: {log_path(self.data_dir)})")


class _Writers(list[Any]):
    """The windows query's ``foreachBatch`` writers, one per start of the query (a restart
    makes a new one): their counters summed, the store shared."""

    @property
    def rows_in(self) -> int:
        return sum(int(w.rows_in) for w in self)

    @property
    def batches(self) -> int:
        return sum(int(w.batches) for w in self)

    @property
    def late(self) -> int:
        return sum(int(w.late) for w in self)

    @property
    def store(self) -> Any:
        return self[-1].store


def _stopper(query: Any) -> Callable[[], None]:
    def stop() -> None:
        if query.isActive:
            query.stop()

    return stop


def _start_query(start: Callable[[], Any], name: str, attempts: int = 3) -> Any:
    """Start a query with ``start`` and wait until it has planned its sources; start it
    again (same checkpoint, nothing processed yet) when it failed because a Python worker
    did not connect back in time -- Spark waits 10 s for one, not configurable, and a
    loaded 2-core machine can take longer to start one."""
    for attempt in range(1, attempts + 1):
        query = start()
        try:
            _initialized(query, name)
            return query
        except RiverbedError as exc:
            if "connect back" not in str(exc) or attempt == attempts:
                raise
            logger.warning("the %s query failed to start (%s); starting it again", name, exc)
            with contextlib.suppress(Exception):
                query.stop()
    raise AssertionError("unreachable")


def _initialized(query: Any, name: str, timeout_s: float = 180.0) -> None:
    """Wait until ``query`` has planned its sources (one query at a time: each start
    spawns Python workers, and four at once overload two cores)."""
    deadline = time.monotonic() + timeout_s
    while str(query.status.get("message", "")).startswith("Initializing"):
        error = query.exception()
        if error is not None:
            raise RiverbedError(f"the {name} query failed: {_first_line(str(error))}")
        if time.monotonic() > deadline:
            raise RiverbedError(f"the {name} query did not start within {timeout_s:g} s")
        time.sleep(0.2)


def _batch_id(progress: Any) -> int:
    if not progress:
        return 0
    return int(progress.get("batchId", -1)) + 1


def _watermark_ms(progress: Any) -> int | None:
    from riverbed.spark.metrics import parse_watermark

    if not progress:
        return None
    seconds = parse_watermark((progress.get("eventTime") or {}).get("watermark"))
    return None if seconds is None else round(seconds * 1000)


def _done(progress: Any, end_ms: int | None, writer: Any, pageviews: int) -> bool:
    """Whether a query has read every record and emitted all it will: the windows query
    has counted every page view; a watermarked query has run the batch whose watermark is
    the end-of-input event's (its output for all real events is then final).  The end
    event is 2 h ahead of every real one and the delays are 10 minutes (and a ms), so a
    watermark within the last hour before it can only come from it."""
    if end_ms is None:
        return bool(writer.rows_in >= pageviews)
    watermark = _watermark_ms(progress)
    return watermark is not None and watermark >= end_ms - HOUR_MS


def _first_line(text: str, limit: int = 300) -> str:
    line = next((s.strip() for s in text.splitlines() if s.strip()), "")
    return line if len(line) <= limit else line[: limit - 3] + "..."
