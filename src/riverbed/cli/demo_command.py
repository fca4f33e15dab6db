"""``riverbed demo``: the main job on embedded defaults (see :mod:`riverbed.demo.runner`).

Registered by :func:`riverbed.cli.main.main`.  Exit codes: 0 done; 1 the demo failed (the
last lines of its log, then a one-line message on stderr, no traceback -- the traceback is
in the log); 2 a usage mistake or a missing extra; 130 Ctrl-C, after everything stopped
cleanly.  ``--chapter`` (:mod:`riverbed.demo.chapter`) exits 0 after Ctrl-C or SIGTERM
too, once everything stopped.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import click
from click.core import ParameterSource

from riverbed.cli.extras import require_extra


@click.command("demo")
@click.option(
    "--duration",
    default=30.0,
    show_default=True,
    type=click.FloatRange(min=1),
    help="Seconds to stream page views before draining and printing the table "
    "(Spark start-up and the drain come on top: ~15 s).",
)
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Broker logs, checkpoint, analytics.sqlite and demo.log go here; an existing "
    "one is resumed.  [default: a new temporary dir, kept]",
)
@click.option(
    "--users",
    default=20,
    show_default=True,
    type=click.IntRange(min=1),
    help="Distinct users in the clickstream.",
)
@click.option(
    "--rate",
    default=200.0,
    show_default=True,
    type=click.FloatRange(min=0.1),
    help="Page views per second.",
)
@click.option(
    "--speedup",
    default=600.0,
    show_default=True,
    type=click.FloatRange(min=0.001),
    help="Event-time seconds per wall-clock second (600: an hour every 6 s).",
)
@click.option(
    "--late-fraction",
    default=0.01,
    show_default=True,
    type=click.FloatRange(0, 1),
    help="Share of page views arriving 2 h late.",
)
@click.option(
    "--allowed-delay",
    "allowed_delay_s",
    default=600,
    show_default=True,
    type=click.IntRange(min=0),
    help="Watermark delay, event-time seconds.",
)
@click.option(
    "--partitions",
    default=2,
    show_default=True,
    type=click.IntRange(min=1),
    help="Partitions of the demo's topics (when it creates them).",
)
@click.option(
    "--top",
    "top_rows",
    default=12,
    show_default=True,
    type=click.IntRange(min=1),
    help="Rows of the final table to print (busiest users first).",
)
@click.option(
    "--seed",
    default=7,
    show_default=True,
    type=int,
    help="Seed of the clickstream generator (same seed, same page views).",
)
@click.option(
    "--bootstrap-server",
    "bootstrap_servers",
    metavar="HOST:PORT[,HOST:PORT...]",
    help="Run on this Kafka cluster instead of an embedded Riverbed broker "
    "(see docs/scale-out.md).",
)
@click.option(
    "--master",
    metavar="SPARK_URL",
    help="Run the pipeline on this Spark master (e.g. spark://host:7077) instead of local[2].",
)
@click.option(
    "--replication-factor",
    type=click.IntRange(min=1),
    help="Replication factor of the topics the demo creates on --bootstrap-server "
    "[default: the cluster's default.replication.factor].",
)
@click.option(
    "--chapter",
    is_flag=True,
    help="Run the whole of DDIA chapter 11 instead: SQLite CDC, enrichment (stream-table "
    "join), windows, sessions, a fraud pattern, derived views and the web console, live "
    "(docs/chapter-demo.md).  Its defaults: --users 12, --rate 40.",
)
@click.option(
    "--console-listen",
    metavar="HOST:PORT",
    default="127.0.0.1:0",
    show_default=True,
    help="With --chapter: where the web console listens (port 0: a free one; its URL is printed).",
)
@click.option(
    "--redis",
    "redis_url",
    metavar="URL",
    help="With --chapter: the cache view in this Redis (redis://HOST:PORT[/DB]) "
    "[default: an in-process cache].",
)
@click.pass_context
def demo_command(
    ctx: click.Context,
    duration: float,
    data_dir: Path | None,
    users: int,
    rate: float,
    speedup: float,
    late_fraction: float,
    allowed_delay_s: int,
    partitions: int,
    top_rows: int,
    seed: int,
    bootstrap_servers: str | None,
    master: str | None,
    replication_factor: int | None,
    chapter: bool,
    console_listen: str,
    redis_url: str | None,
) -> None:
    """Run a broker, a synthetic clickstream and the page-views-per-user-per-hour pipeline.

    Starts an embedded broker, streams page views (some out of order, some late) through
    a Spark Structured Streaming query on local Spark, shows live progress and ends with
    a summary and the per-user-per-hour table.  Ctrl-C stops everything cleanly.
    With --bootstrap-server and --master it runs the same pipeline on a Kafka cluster and
    a Spark cluster instead (nothing embedded is started).
    """
    require_extra("spark", "the demo")  # pyspark, pandas, pyarrow: one line, exit 2
    if chapter:
        for name in ("master", "replication_factor", "late_fraction", "top_rows"):
            if ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE:
                option = "--" + name.replace("_", "-").replace("top-rows", "top")
                raise click.UsageError(f"{option} does not apply to --chapter")
        explicit = {
            name: ctx.params[name]
            for name in ("users", "rate", "speedup", "seed", "partitions")
            if ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE
        }
        _chapter(duration, data_dir, bootstrap_servers, console_listen, redis_url, explicit)
        return
    for name, option in (("console_listen", "--console-listen"), ("redis_url", "--redis")):
        if ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE:
            raise click.UsageError(f"{option} needs --chapter")
    if replication_factor is not None and bootstrap_servers is None:
        raise click.UsageError("--replication-factor needs --bootstrap-server")
    from riverbed.demo.runner import DemoOptions, run_demo

    options = DemoOptions(
        duration_s=duration,
        users=users,
        rate=rate,
        speedup=speedup,
        partitions=partitions,
        seed=seed,
        allowed_delay_ms=allowed_delay_s * 1000,
        late_fraction=late_fraction,
        top_rows=top_rows,
        bootstrap_servers=bootstrap_servers,
        master=master,
        replication_factor=replication_factor,
    )
    _run_logged(
        "riverbed demo",
        data_dir or Path(tempfile.mkdtemp(prefix="riverbed-demo-")),
        lambda data: run_demo(options, data),
        stopped="broker, clickstream and Spark",
        interrupt_exit=130,
    )


def _chapter(
    duration: float,
    data_dir: Path | None,
    bootstrap_servers: str | None,
    console_listen: str,
    redis_url: str | None,
    explicit: dict[str, object],
) -> None:
    """``riverbed demo --chapter``: exit 0 when done or stopped by Ctrl-C/SIGTERM, 1 when it
    failed (one line, the log's tail), 2 for a bad option."""
    from riverbed.console.server import parse_listen
    from riverbed.demo.chapter import ChapterOptions, run_chapter
    from riverbed.errors import ConfigError

    try:
        host, port = parse_listen(console_listen, "--console-listen")
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None
    options = ChapterOptions(
        duration_s=duration,
        console_host=host,
        console_port=port,
        bootstrap_servers=bootstrap_servers,
        redis_url=redis_url,
        **explicit,  # type: ignore[arg-type]
    )
    _run_logged(
        "riverbed demo --chapter",
        data_dir or Path(tempfile.mkdtemp(prefix="riverbed-chapter-")),
        lambda data: run_chapter(options, data),
        stopped="generators, CDC, Spark, views, console and broker",
        interrupt_exit=0,
        usage_errors=(ConfigError,),  # a port in use, a Redis that does not answer...
    )


def _run_logged(
    command: str,
    data_dir: Path,
    run: Callable[[Path], object],
    *,
    stopped: str,
    interrupt_exit: int,
    usage_errors: tuple[type[Exception], ...] = (),
) -> None:
    """``run(data_dir)`` (its result unused), its log at
    :func:`riverbed.demo.logs.log_path` of ``data_dir``.
    Ctrl-C (once ``run`` stopped everything): ``<command>: interrupted; <stopped> stopped
    (log: <log>)`` on stderr, exit ``interrupt_exit``.  One of ``usage_errors``:
    ``<command>: error: <its first line>``, exit 2.  Any other exception: the log's tail
    and ``<command>: error: <its first line>``, exit 1.  Returns when ``run`` does."""
    from riverbed.demo.logs import log_path, tail

    log = log_path(data_dir)
    try:
        run(data_dir)
        return
    except KeyboardInterrupt:
        click.echo(f"{command}: interrupted; {stopped} stopped (log: {log})", err=True)
        sys.exit(interrupt_exit)
    except usage_errors as exc:
        click.echo(f"{command}: error: {_one_line(exc)}", err=True)
        sys.exit(2)
    except Exception as exc:
        error = exc
    lines = tail(log)
    if lines:
        click.echo(f"last lines of {log}:", err=True)
        for line in lines:
            click.echo(f"  {line[:200]}", err=True)
    click.echo(f"{command}: error: {_one_line(error)}", err=True)
    sys.exit(1)


def _one_line(exc: BaseException, limit: int = 300) -> str:
    text = next((s.strip() for s in str(exc).splitlines() if s.strip()), "")
    text = text or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."
