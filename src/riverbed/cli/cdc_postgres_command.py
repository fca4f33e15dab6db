"""``riverbed cdc postgres``: capture a PostgreSQL database's changes into Kafka topics.

::

    riverbed cdc postgres --dsn DSN --bootstrap-server HOST:PORT [--topic-prefix P]
                          [--table SCHEMA.TABLE]... [--slot NAME] [--publication NAME]
                          [--signal-table SCHEMA.TABLE] [--schemas-enable] [-X KEY=VALUE]...

Runs in the foreground until SIGTERM/SIGINT (exit 0).  A refused start (wrong DSN or
password, ``wal_level`` not logical, no REPLICATION privilege, a table without a key, a
slot in use, an unreachable broker) is one line on stderr and exit code 1, with nothing
created.  Registered in the ``riverbed cdc`` group (:mod:`riverbed.cli.cdc_command`).
"""

from __future__ import annotations

import signal
import threading

import click

from riverbed.cli.kafka_admin import (
    bootstrap_option,
    check_reachable,
    client_config,
    property_option,
)
from riverbed.signals import SignalStop


@click.command("postgres")
@click.option(
    "--dsn",
    required=True,
    metavar="DSN",
    help="libpq connection string or URI of the database to capture.",
)
@bootstrap_option
@click.option(
    "--topic-prefix",
    default="riverbed",
    show_default=True,
    metavar="P",
    help="Topics are <P>.<schema>.<table>; the position is kept in <P>.cdc-offsets.",
)
@click.option(
    "--table",
    "tables",
    multiple=True,
    metavar="SCHEMA.TABLE",
    help="A table to capture (repeatable; default: every user table).",
)
@click.option(
    "--slot",
    default="riverbed",
    show_default=True,
    metavar="NAME",
    help="Logical replication slot (pgoutput; created when missing).",
)
@click.option(
    "--publication",
    default="riverbed_publication",
    show_default=True,
    metavar="NAME",
    help="Publication (created for the captured tables when missing).",
)
@click.option(
    "--signal-table",
    default=None,
    metavar="SCHEMA.TABLE",
    help="Signal table (id text PRIMARY KEY, type text, data text): inserting an "
    "'execute-snapshot' row starts an incremental snapshot.",
)
@click.option(
    "--incremental-chunk-rows",
    default=1024,
    show_default=True,
    metavar="N",
    type=click.IntRange(min=1),
    help="Rows per incremental snapshot chunk (incremental.snapshot.chunk.size).",
)
@click.option(
    "--schemas-enable",
    is_flag=True,
    help="Add the schema part to keys and values (Debezium's schemas.enable).",
)
@click.option(
    "--outbox-table",
    default=None,
    metavar="SCHEMA.TABLE",
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
def postgres_command(
    dsn: str,
    bootstrap: str,
    topic_prefix: str,
    tables: tuple[str, ...],
    slot: str,
    publication: str,
    signal_table: str | None,
    incremental_chunk_rows: int,
    schemas_enable: bool,
    outbox_table: str | None,
    outbox_topic_prefix: str,
    outbox_headers: tuple[str, ...],
    properties: tuple[str, ...],
) -> None:
    """Capture a PostgreSQL database: a consistent snapshot, then pgoutput logical decoding."""
    from riverbed.cdc.outbox import router_for_table, with_outbox_table
    from riverbed.cdc.postgres import PostgresConfig, PostgresConnector
    from riverbed.cdc.runner import run

    router = None
    if outbox_table is not None:
        router = router_for_table(
            topic_prefix,
            outbox_table,
            "public",
            topic_prefix=outbox_topic_prefix,
            header_specs=outbox_headers,
        )
        if "." not in outbox_table:
            outbox_table = f"public.{outbox_table}"
        tables = with_outbox_table(tables, outbox_table)

    # a SIGTERM during start-up (snapshot, topic creation) only requests the stop, honoured
    # once started: still exit 0
    stop = threading.Event()
    SignalStop(stop, [signal.SIGTERM]).install()  # no lock in the handler (riverbed.signals)
    check_reachable(bootstrap)
    connector = PostgresConnector(
        PostgresConfig(
            dsn=dsn,
            bootstrap_servers=bootstrap,
            topic_prefix=topic_prefix,
            tables=tables,
            slot=slot,
            publication=publication,
            schemas_enable=schemas_enable,
            signal_table=signal_table,
            incremental_chunk_rows=incremental_chunk_rows,
            kafka=client_config(bootstrap, properties),
        ),
        router=router,
    )
    try:
        started = connector.start(stop)
    except BaseException:
        connector.close(timeout_s=5)
        raise
    if not started:  # SIGTERM during the snapshot: abandoned, redone at the next start
        connector.close(timeout_s=30)
        return
    click.echo(
        f"capturing {connector.db} ({len(connector.tables)} tables) into "
        f"{topic_prefix}.<schema>.<table> from slot {slot!r}; SIGTERM stops",
        err=True,
    )
    run(connector, stop=stop)
