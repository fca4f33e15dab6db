"""``riverbed users``: SCRAM users (SASL/SCRAM-SHA-256 and -512) on any Kafka cluster.

Subcommands talk to ``--bootstrap-server`` through confluent-kafka's AdminClient
(AlterUserScramCredentials / DescribeUserScramCredentials), so they work against a Kafka
cluster as well as Riverbed; ``-X KEY=VALUE`` passes client settings (a SASL or TLS
listener needs ``-X security.protocol=...`` and its credentials).  The password is
salted and hashed by the client (``--iterations``, 4096..16384, Kafka's bounds): neither
it nor the salted password is stored by the broker.

    riverbed users create alice --mechanism SCRAM-SHA-256 --password secret
    riverbed users describe [alice ...] [--output json]
    riverbed users delete alice --mechanism SCRAM-SHA-256
"""

from __future__ import annotations

from typing import Any

import click

from riverbed.cli.kafka_admin import (
    TIMEOUT_S,
    bootstrap_option,
    check_reachable,
    client_config,
    echo_json,
    output_option,
    property_option,
)
from riverbed.errors import RiverbedError

MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


class UserCommandError(RiverbedError):
    """A ``riverbed users`` command failed (message is for the user)."""


mechanism_option = click.option(
    "--mechanism",
    type=click.Choice(MECHANISMS, case_sensitive=False),
    default=MECHANISMS[0],
    show_default=True,
    help="The SCRAM mechanism.",
)


def _admin(bootstrap: str, properties: tuple[str, ...]) -> Any:
    from confluent_kafka.admin import AdminClient

    check_reachable(bootstrap)
    return AdminClient(client_config(bootstrap, properties))


def _result(future: Any, what: str) -> Any:
    from confluent_kafka import KafkaException

    try:
        return future.result(timeout=TIMEOUT_S)
    except KafkaException as exc:
        raise UserCommandError(f"{what} failed: {exc.args[0].str()}") from None
    except TimeoutError:
        raise UserCommandError(f"{what} timed out after {TIMEOUT_S:g}s") from None


def _mechanism(name: str) -> Any:
    from confluent_kafka.admin import ScramMechanism  # type: ignore[attr-defined]

    return ScramMechanism[name.upper().replace("-", "_")]


@click.group()
def users() -> None:
    """Create, describe and delete SCRAM users."""


@users.command("create")
@click.argument("name")
@mechanism_option
@click.option("--password", prompt=True, hide_input=True, help="Prompted for if not given.")
@click.option("--iterations", type=click.IntRange(4096, 16384), default=8192, show_default=True)
@property_option
@bootstrap_option
def create(
    name: str,
    mechanism: str,
    password: str,
    iterations: int,
    properties: tuple[str, ...],
    bootstrap: str,
) -> None:
    """Create user NAME (or replace its password) for one mechanism."""
    from confluent_kafka.admin import ScramCredentialInfo, UserScramCredentialUpsertion  # type: ignore[attr-defined]

    admin = _admin(bootstrap, properties)
    info = ScramCredentialInfo(_mechanism(mechanism), iterations)
    futures = admin.alter_user_scram_credentials(
        [UserScramCredentialUpsertion(name, info, password.encode())]
    )
    _result(futures[name], f"creating user {name!r}")
    click.echo(f"user {name} created for {mechanism.upper()} ({iterations} iterations)")


@users.command("delete")
@click.argument("name")
@mechanism_option
@property_option
@bootstrap_option
def delete(name: str, mechanism: str, properties: tuple[str, ...], bootstrap: str) -> None:
    """Delete user NAME's credential for one mechanism."""
    from confluent_kafka.admin import UserScramCredentialDeletion  # type: ignore[attr-defined]

    admin = _admin(bootstrap, properties)
    futures = admin.alter_user_scram_credentials(
        [UserScramCredentialDeletion(name, _mechanism(mechanism))]
    )
    _result(futures[name], f"deleting user {name!r}")
    click.echo(f"user {name} deleted for {mechanism.upper()}")


@users.command("describe")
@click.argument("names", nargs=-1)
@output_option
@property_option
@bootstrap_option
def describe(
    names: tuple[str, ...], output: str, properties: tuple[str, ...], bootstrap: str
) -> None:
    """The mechanisms and iteration counts of NAMES (every user when none is given)."""
    admin = _admin(bootstrap, properties)
    if names:
        futures = admin.describe_user_scram_credentials(list(dict.fromkeys(names)))
        found = {n: _result(f, f"describing user {n!r}") for n, f in futures.items()}
    else:
        found = _result(admin.describe_user_scram_credentials(), "describing users")
    rows = {
        user: [
            {"mechanism": str(info.mechanism.name).replace("_", "-"), "iterations": info.iterations}
            for info in description.scram_credential_infos
        ]
        for user, description in sorted(found.items())
    }
    if output == "json":
        echo_json(rows)
        return
    for user, infos in rows.items():
        for info in infos:
            click.echo(f"{user}\t{info['mechanism']}\t{info['iterations']}")
