"""``riverbed cdc``: change data capture connectors, in the foreground until SIGTERM.

::

    riverbed cdc sqlite --db PATH --bootstrap-server HOST:PORT [--topic-prefix P] [--table T]...
    riverbed cdc postgres --dsn DSN --bootstrap-server HOST:PORT [--topic-prefix P]
                          [--table SCHEMA.TABLE]... [--slot NAME] [--publication NAME]

Each table goes to ``<prefix>.<schema>.<table>`` (created compacted), as Debezium's JSON
envelope (docs/cdc.md).  SIGTERM or Ctrl-C: outstanding changes are flushed and the command
exits 0; a SIGKILL loses nothing committed (the restart resumes).  Bad input (a database that
does not exist, a table without a primary key, an unreachable broker) is one line on stderr
and exit 1, with nothing installed in the database.

Works against any Kafka cluster: the connectors use confluent-kafka clients only.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from pathlib import Path

import click

from riverbed.cli.kafka_admin import (
    bootstrap_option,
    check_reachable,
    client_config,
    property_option,
)
from riverbed.signals import SignalStop


@click.group("cdc")
def cdc() -> None:
    """Capture database changes into Kafka topics (Debezium's JSON format)."""


def _stop_on_sigterm() -> threading.Event:
    """A SIGTERM during start-up (snapshot, topic creation) must still end in exit 0: from
    here on it only requests the stop, which :func:`~riverbed.cdc.runner.run` honours."""
    stop = threading.Event()
    SignalStop(stop, [signal.SIGTERM]).install()  # no lock in the handler (riverbed.signals)
    return stop


def _log_to_stderr() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    cdc_log = logging.getLogger("riverbed.cdc")
    cdc_log.addHandler(handler)
    cdc_log.setLevel(logging.INFO)


@cdc.command("sqlite")
@click.option(
    "--db", "db_path", required=True, metavar="PATH", help="The SQLite database file (must exist)."
)
@bootstrap_option
@click.option(
    "--topic-prefix",
    default="riverbed",
    show_default=True,
    metavar="P",
    help="Topics are <P>.main.<table>; the position is kept in <P>.cdc-offsets.",
)
@click.option(
    "--table",
    "tables",
    multiple=True,
    metavar="TABLE",
    help="A table to capture (repeatable; default: every table).",
)
@click.option(
    "--schemas-enable",
    is_flag=True,
    help="Add the schema part to keys and values (Debezium's schemas.enable).",
)
@click.option(
    "--outbox-table",
    default=None,
    metavar="TABLE",
    help="Route this outbox table's inserts as events (Debezium's outbox event router).",
)
@click.option(
    "--outbox-topic-prefix",
    default="outbox.event",
    show_default=True,
    metavar="P",
    help="Outbox events go to <P>.<aggregatetype>.",
)
@click.option(
    "--outbox-header",
    "outbox_headers",
    multiple=True,
    metavar="COLUMN[:HEADER]",
    help="An outbox column also placed in a header (repeatable; the id always is).",
)
@property_option
def cdc_sqlite(
    db_path: str,
    bootstrap: str,
    topic_prefix: str,
    tables: tuple[str, ...],
    schemas_enable: bool,
    outbox_table: str | None,
    outbox_topic_prefix: str,
    outbox_headers: tuple[str, ...],
    properties: tuple[str, ...],
) -> None:
    """Capture a SQLite database: triggers into a change table, tailed into topics."""
    from riverbed.cdc.outbox import router_for_table, with_outbox_table
    from riverbed.cdc.runner import run
    from riverbed.cdc.sqlite.connector import SqliteConnector, open_database

    stop = _stop_on_sigterm()
    router = None
    if outbox_table is not None:
        router = router_for_table(
            topic_prefix,
            outbox_table,
            "main",
            topic_prefix=outbox_topic_prefix,
            header_specs=outbox_headers,
        )
        outbox_table = outbox_table.rpartition(".")[2]
        tables = with_outbox_table(tables, outbox_table)
    open_database(Path(db_path)).close()  # a missing path is reported before the broker
    check_reachable(bootstrap)
    connector = SqliteConnector(
        db_path,
        client_config(bootstrap, properties),
        topic_prefix=topic_prefix,
        tables=tables,
        schemas_enable=schemas_enable,
        router=router,
    )
    connector.start()
    _log_to_stderr()
    click.echo(
        f"capturing {db_path} into {topic_prefix}.main.* "
        f"({connector.snapshot_rows} rows snapshotted now); SIGTERM stops",
        err=True,
    )
    run(connector, stop=stop)


# riverbed cdc postgres lives in its own module (cli/cdc_postgres_command.py)
from riverbed.cli.cdc_postgres_command import postgres_command  # noqa: E402

cdc.add_command(postgres_command)
