"""``riverbed pipeline list`` and ``riverbed pipeline run NAME``: the shipped examples'
runner (the contract of issues 12 and 13; the examples are in
:mod:`riverbed.pipelines.examples`).

``run`` does, in order:

1. resolves ``NAME`` (unknown: one line, exit 2) and checks the ``spark`` extra;
2. checks that a bootstrap server accepts a connection (unreachable: one line, exit 1);
3. with ``--master spark://HOST:PORT``, checks that the master accepts a connection
   (unreachable: one line, exit 1, before Spark's minute of registration retries);
4. creates the example's missing output topics with their configs (``OUTPUT_TOPICS``) and
   its missing input topics, so a query can subscribe before the first record is
   produced: CDC topics (``<topic prefix>.*``) compacted as ``riverbed cdc`` creates them
   (a table's changelog must not lose old rows to time retention), others with the
   broker's defaults; the replication factor is ``--replication-factor`` or the
   cluster's ``default.replication.factor``;
5. builds a ``local[2]`` session with :func:`riverbed.spark.local_session` (Spark's Python
   workers run this interpreter, so it works from a plain shell) with the RocksDB state
   store provider (``transformWithStateInPandas`` needs it; every example's state lives in
   RocksDB, a checkpoint must keep one provider for life).  With ``--master`` the same
   session is pointed at that cluster with the demo's settings
   (:func:`riverbed.demo.runner.cluster_spark_options`): executors start their Python
   workers with this interpreter, so they must import the same ``riverbed`` (on another
   machine: installed at the same path), and the checkpoint directory must be reachable
   at the same path from the driver and every executor (state stores are written by the
   executors) -- shared storage on a real cluster;
6. calls the example's ``start`` and waits: with ``--available-now`` until every query
   has terminated, otherwise until SIGTERM or SIGINT (in either mode a signal lets a
   micro-batch in flight finish, up to :data:`GRACE_S`, then stops the queries), and
   exits 0.

A query that fails ends the run with exit 1 and the first line of Spark's error.  The
checkpoint directory holds one sub-directory per query (Spark's offset and commit logs and
state), so a second run on it continues where the first stopped; a run killed with
SIGKILL replays at most its last uncommitted micro-batch (at-least-once output).

Called from the main thread only (signal handlers).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import click

from riverbed.cli.kafka_admin import admin_client, bootstrap_option
from riverbed.errors import ConfigError, RiverbedError
from riverbed.signals import SignalStop

if TYPE_CHECKING:
    from pyspark.sql.streaming.query import StreamingQuery

    from riverbed.pipelines.examples import ExampleOptions

GRACE_S = 30.0
"""After SIGTERM, how long a micro-batch in flight may take to finish before stopping."""

POLL_S = 0.5

ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"

#: Spark settings of every example run (a checkpoint's state store provider is fixed).
SPARK_CONFIG: dict[str, str] = {
    "spark.sql.streaming.stateStore.providerClass": ROCKSDB_PROVIDER,
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
    "spark.sql.streaming.noDataMicroBatches.enabled": "true",
}

TOPIC_TIMEOUT_S = 30.0


class PipelineFailedError(RiverbedError):
    """A streaming query of the example failed (exit 1; Spark's first error line)."""


def _parse_options(items: Iterable[str], flag: str) -> tuple[tuple[str, str], ...]:
    parsed = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{flag} {item!r} is not KEY=VALUE")
        parsed.append((key.strip(), value))
    return tuple(parsed)


def ensure_topics(
    bootstrap: str, wanted: dict[str, dict[str, str]], replication_factor: int | None = None
) -> list[str]:
    """Create the topics of ``wanted`` (name -> configs) that do not exist, with the
    broker's default partition count and ``replication_factor`` (None: the broker's
    default); the names created.

    A topic created meanwhile by someone else counts as existing.
    """
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

    admin = admin_client(bootstrap)
    existing = set(admin.list_topics(timeout=TOPIC_TIMEOUT_S).topics)
    missing = [name for name in wanted if name not in existing]
    if not missing:
        return []
    futures = admin.create_topics(
        [
            NewTopic(name, -1, replication_factor or -1, config=dict(wanted[name]))
            for name in missing
        ],
        request_timeout=TOPIC_TIMEOUT_S,
    )
    created = []
    for name, future in futures.items():
        try:
            future.result(TOPIC_TIMEOUT_S)
            created.append(name)
        except KafkaException as exc:
            error = exc.args[0]
            if error.code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise PipelineFailedError(f"cannot create topic {name!r}: {error.str()}") from None
    return created


def input_topic_config(topic: str, options: ExampleOptions) -> dict[str, str]:
    """Configs of an input topic the runner creates: compacted for a CDC topic."""
    if topic.startswith(f"{options.topic_prefix}."):
        return {"cleanup.policy": "compact"}
    return {}


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return next((s.strip() for s in text.splitlines() if s.strip()), type(exc).__name__)


def _check_failed(queries: list[StreamingQuery]) -> None:
    for query in queries:
        error = query.exception()
        if error is not None:
            name = query.name or query.id
            raise PipelineFailedError(f"query {name} failed: {_first_line(error)}")


def _stop_gracefully(queries: list[StreamingQuery]) -> None:
    """Let a micro-batch in flight finish (up to GRACE_S), then stop every query."""
    deadline = time.monotonic() + GRACE_S
    for query in queries:
        while query.isActive and time.monotonic() < deadline:
            status: dict[str, Any] = query.status
            if not status.get("isTriggerActive", False):
                break
            time.sleep(0.1)
        query.stop()


def wait_for_queries(queries: list[StreamingQuery]) -> None:
    """Return when every query has terminated (``availableNow``) or, after SIGTERM or
    SIGINT, once they are stopped gracefully; raise PipelineFailedError if one failed."""
    stop = threading.Event()
    with SignalStop(stop):  # the handlers take no lock (riverbed.signals)
        while not stop.wait(POLL_S):
            _check_failed(queries)
            if not any(query.isActive for query in queries):
                _check_failed(queries)
                return
        _stop_gracefully(queries)


def run_example(
    module: ModuleType,
    options: ExampleOptions,
    name: str,
    master: str | None = None,
    replication_factor: int | None = None,
) -> None:
    """Create the topics, start the example on a local session (or on ``master``) and
    wait (see module doc)."""
    from riverbed.demo.runner import check_master_reachable, cluster_spark_options
    from riverbed.spark.session import local_session

    config = dict(SPARK_CONFIG)
    if master is not None:
        check_master_reachable(master)
        config |= cluster_spark_options(master)
    inputs = {topic: input_topic_config(topic, options) for topic in module.INPUT_TOPICS(options)}
    outputs: dict[str, dict[str, str]] = dict(module.OUTPUT_TOPICS(options))
    ensure_topics(options.bootstrap_server, {**inputs, **outputs}, replication_factor)
    options.checkpoint.mkdir(parents=True, exist_ok=True)
    spark = local_session(f"riverbed-pipeline-{name}", config=config)
    try:
        queries: list[StreamingQuery] = list(module.start(spark, options))
        click.echo(
            f"pipeline {name}: {len(queries)} queries running on {master or 'local[2]'}, "
            f"checkpoint {options.checkpoint}",
            err=True,
        )
        wait_for_queries(queries)
    finally:
        for query in spark.streams.active:
            query.stop()
        spark.stop()
    click.echo(f"pipeline {name}: stopped", err=True)


@click.group("pipeline")
def pipeline() -> None:
    """The shipped example pipelines on local Spark (docs/joins.md)."""


@pipeline.command("list")
def list_command() -> None:
    """Print each example's name and description."""
    from riverbed.pipelines.examples import EXAMPLES, example_module

    for name in sorted(EXAMPLES):
        try:
            description = str(example_module(name).DESCRIPTION)
        except ImportError as exc:
            description = f"(unavailable: {exc})"
        click.echo(f"{name:<16} {description}")


@pipeline.command("run")
@click.argument("name")
@bootstrap_option
@click.option(
    "--checkpoint",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    metavar="DIR",
    help="Spark checkpoint directory (one sub-directory per query); reuse it to continue.",
)
@click.option(
    "--available-now",
    is_flag=True,
    help="Process everything present in the input topics, then exit 0.",
)
@click.option(
    "--topic-prefix",
    default="riverbed",
    show_default=True,
    help="Prefix of the CDC input topics (<prefix>.main.<table>).",
)
@click.option(
    "--source-option",
    "source_options",
    multiple=True,
    metavar="KEY=VALUE",
    help="Added to every riverbed source of the example, e.g. maxOffsetsPerTrigger=100.",
)
@click.option(
    "--sink-option",
    "sink_options",
    multiple=True,
    metavar="KEY=VALUE",
    help="Added to every riverbed sink of the example.",
)
@click.option(
    "--master",
    default=None,
    metavar="SPARK_URL",
    help="Run on this Spark master (e.g. spark://host:7077) instead of local[2]; the "
    "checkpoint must be at the same path on every executor.",
)
@click.option(
    "--replication-factor",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Replication factor of the topics the run creates "
    "[default: the cluster's default.replication.factor].",
)
def run_command(
    name: str,
    bootstrap: str,
    checkpoint: Path,
    available_now: bool,
    topic_prefix: str,
    source_options: tuple[str, ...],
    sink_options: tuple[str, ...],
    master: str | None,
    replication_factor: int | None,
) -> None:
    """Run example pipeline NAME until SIGTERM (or, with --available-now, until its
    inputs are processed), on local[2] or on the Spark cluster --master names."""
    from riverbed.cli.extras import require_extra
    from riverbed.pipelines.examples import ExampleOptions, example_module

    try:
        module = example_module(name)
    except ModuleNotFoundError as exc:
        if not (exc.name or "").startswith("riverbed."):
            raise
        raise PipelineFailedError(f"example pipeline {name!r} is not installed ({exc})") from None
    require_extra("spark", "riverbed pipeline run")
    options = ExampleOptions(
        bootstrap_server=bootstrap,
        checkpoint=checkpoint.absolute(),
        topic_prefix=topic_prefix,
        available_now=available_now,
        extra_source_options=_parse_options(source_options, "--source-option"),
        extra_sink_options=_parse_options(sink_options, "--sink-option"),
    )
    run_example(module, options, name, master, replication_factor)
    sys.stdout.flush()


@pipeline.command("state")
@click.argument("name")
@click.option(
    "--checkpoint",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    metavar="DIR",
    help="The --checkpoint of the example's runs.",
)
@click.option("--key", default=None, help="Only this key (a user id, an author, a search id).")
def state_command(name: str, checkpoint: Path, key: str | None) -> None:
    """Print the state a join example keeps (one JSON line per key), as of its last
    committed micro-batch; works while the example runs."""
    import json

    from riverbed.cli.extras import require_extra
    from riverbed.pipelines.examples import example_module

    example_module(name)
    require_extra("spark", "riverbed pipeline state")
    from riverbed.pipelines.live_state import read_state
    from riverbed.spark.session import local_session

    spark = local_session(f"riverbed-state-{name}", config=SPARK_CONFIG, register=False)
    try:
        for entry in read_state(spark, name, checkpoint.absolute(), key):
            click.echo(json.dumps(entry, sort_keys=True))
    finally:
        spark.stop()
