"""``riverbed transactions``: Kafka transactions (KIP-98, KIP-664) on any Kafka cluster.

confluent-kafka's AdminClient has no transaction calls (2.16), so these subcommands use
kafka-python 3's admin client (``list_transactions``: ListTransactions sent to every broker;
``describe_transactions``: FindCoordinator for the id, then DescribeTransactions to its
coordinator), as ``kafka-transactions.sh list|describe`` does.  kafka-python is therefore
a base dependency.  ``-X KEY=VALUE`` passes kafka-python settings in Kafka's dotted names.

    riverbed transactions list [--state Ongoing] [--output json]
    riverbed transactions describe TRANSACTIONAL_ID [--output json]
"""

from __future__ import annotations

from typing import Any

import click

from riverbed.cli.kafka_admin import (
    bootstrap_option,
    check_reachable,
    echo_json,
    output_option,
    property_option,
)
from riverbed.errors import ConfigError, RiverbedError


class TransactionCommandError(RiverbedError):
    """A ``riverbed transactions`` command failed (message is for the user)."""


def _admin(bootstrap: str, properties: tuple[str, ...]) -> Any:
    from kafka.admin import KafkaAdminClient

    check_reachable(bootstrap)
    config: dict[str, Any] = {"bootstrap_servers": bootstrap, "request_timeout_ms": 15_000}
    for item in properties:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--property {item!r} is not KEY=VALUE")
        config[key.strip().replace(".", "_")] = value
    return KafkaAdminClient(**config)


def _failure(what: str, exc: Exception) -> TransactionCommandError:
    """kafka-python's errors repeat the class name in their text; the name is enough."""
    return TransactionCommandError(f"{what} failed: {type(exc).__name__}")


@click.group()
def transactions() -> None:
    """List and describe transactions (transactional producers' state on the coordinators)."""


@transactions.command("list")
@click.option(
    "--state",
    "states",
    multiple=True,
    metavar="STATE",
    help="Only transactions in this state, e.g. Ongoing (repeatable).",
)
@property_option
@bootstrap_option
@output_option
def list_command(
    states: tuple[str, ...], properties: tuple[str, ...], bootstrap: str, output: str
) -> None:
    """Every transactional id known to the cluster's coordinators, with its state."""
    from kafka.errors import KafkaError

    admin = _admin(bootstrap, properties)
    try:
        by_broker = admin.list_transactions(state_filters=list(states) or None)
    except KafkaError as exc:
        raise _failure("list", exc) from None
    finally:
        admin.close()
    rows = sorted(
        (
            {
                "transactional_id": t.transactional_id,
                "producer_id": t.producer_id,
                "state": str(t.state.value),
                "coordinator": broker_id,
            }
            for broker_id, listings in by_broker.items()
            for t in listings
        ),
        key=lambda row: str(row["transactional_id"]),
    )
    if output == "json":
        echo_json(rows)
        return
    click.echo(f"{'TRANSACTIONAL_ID':<30} {'COORDINATOR':>11} {'PRODUCER_ID':>11} STATE")
    for row in rows:
        click.echo(
            f"{row['transactional_id']:<30} {row['coordinator']:>11} "
            f"{row['producer_id']:>11} {row['state']}"
        )


@transactions.command("describe")
@click.argument("transactional_id")
@property_option
@bootstrap_option
@output_option
def describe_command(
    transactional_id: str, properties: tuple[str, ...], bootstrap: str, output: str
) -> None:
    """One transaction: state, producer id and epoch, timeout, start time, partitions."""
    from kafka.errors import KafkaError

    admin = _admin(bootstrap, properties)
    try:
        described = admin.describe_transactions([transactional_id])
    except KafkaError as exc:
        raise _failure(f"describe {transactional_id!r}", exc) from None
    finally:
        admin.close()
    if transactional_id not in described:
        raise TransactionCommandError(f"no transactional id {transactional_id!r}")
    d = described[transactional_id]
    start = d.transaction_start_time_ms
    partitions = sorted(f"{tp.topic}-{tp.partition}" for tp in d.topic_partitions)
    document: dict[str, object] = {
        "transactional_id": transactional_id,
        "coordinator": d.coordinator_id,
        "state": str(d.state.value),
        "producer_id": d.producer_id,
        "producer_epoch": d.producer_epoch,
        "transaction_timeout_ms": d.transaction_timeout_ms,
        "transaction_start_time_ms": None if start < 0 else start,
        "partitions": partitions,
    }
    if output == "json":
        echo_json(document)
        return
    for key, value in {**document, "partitions": ",".join(partitions)}.items():
        click.echo(f"{key.upper()}: {'-' if value in (None, '') else value}")
