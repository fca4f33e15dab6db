"""``riverbed quotas``: Kafka client quotas (KIP-13/55) on any Kafka cluster.

confluent-kafka's AdminClient has no client-quota calls (2.16), so these subcommands
send DescribeClientQuotas / AlterClientQuotas with kafka-python's admin client (its
connection manager; kafka-python 3 has the messages but no public method for them).
``-X KEY=VALUE`` passes kafka-python settings in Kafka's dotted names
(``-X security.protocol=SASL_PLAINTEXT -X sasl.mechanism=PLAIN ...``).  Entities as in
``kafka-configs.sh``: ``--user NAME`` / ``--user-default``, ``--client-id NAME`` /
``--client-id-default``.

    riverbed quotas describe [--user alice] [--client-id-default] [--output json]
    riverbed quotas alter --client-id app --add-config producer_byte_rate=1048576
    riverbed quotas alter --user alice --delete-config consumer_byte_rate
"""

from __future__ import annotations

from collections.abc import Callable
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

MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY = 0, 1, 2


class QuotaCommandError(RiverbedError):
    """A ``riverbed quotas`` command failed (message is for the user)."""


def _entity_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = click.option("--client-id-default", is_flag=True, help="The <default> client id.")(fn)
    fn = click.option("--client-id", metavar="NAME", help="A client id.")(fn)
    fn = click.option("--user-default", is_flag=True, help="The <default> user.")(fn)
    return click.option("--user", metavar="NAME", help="A user (principal name).")(fn)


def _parts(
    user: str | None, user_default: bool, client_id: str | None, client_default: bool
) -> list[tuple[str, str | None]]:
    """The entity's (type, name) parts; name None is <default>."""
    if (user is not None and user_default) or (client_id is not None and client_default):
        raise QuotaCommandError("give a name or --*-default for an entity type, not both")
    parts: list[tuple[str, str | None]] = []
    if user is not None or user_default:
        parts.append(("user", user))
    if client_id is not None or client_default:
        parts.append(("client-id", client_id))
    return parts


def _run(bootstrap: str, properties: tuple[str, ...], request: Any) -> Any:
    from kafka.admin import KafkaAdminClient

    check_reachable(bootstrap)
    config: dict[str, Any] = {"bootstrap_servers": bootstrap, "request_timeout_ms": 15_000}
    for item in properties:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--property {item!r} is not KEY=VALUE")
        config[key.strip().replace(".", "_")] = value
    admin = KafkaAdminClient(**config)
    try:
        manager = admin._manager

        async def send() -> Any:
            return await manager.send(request)

        return manager.run(send)
    finally:
        admin.close()


@click.group()
def quotas() -> None:
    """Describe and alter client quotas (producer_byte_rate, consumer_byte_rate, ...)."""


@quotas.command("describe")
@_entity_options
@click.option("--strict", is_flag=True, help="Only entities with exactly these types.")
@property_option
@bootstrap_option
@output_option
def describe(
    user: str | None,
    user_default: bool,
    client_id: str | None,
    client_id_default: bool,
    strict: bool,
    properties: tuple[str, ...],
    bootstrap: str,
    output: str,
) -> None:
    """Quotas of the entities matching the filter (no filter: all of them)."""
    from kafka.protocol.admin import DescribeClientQuotasRequest

    components = [
        (kind, MATCH_DEFAULT if name is None else MATCH_EXACT, name)
        for kind, name in _parts(user, user_default, client_id, client_id_default)
    ]
    response = _run(
        bootstrap, properties, DescribeClientQuotasRequest(components=components, strict=strict)
    )
    if response.error_code:
        raise QuotaCommandError(f"describe failed: {response.error_message}")
    entries = [
        {
            "entity": {e.entity_type: e.entity_name for e in entry.entity},
            "quotas": {v.key: v.value for v in entry.values},
        }
        for entry in response.entries or []
    ]
    if output == "json":
        echo_json(entries)
        return
    for entry in entries:
        entity = _name(entry["entity"].items())
        values = ", ".join(f"{k}={_number(v)}" for k, v in sorted(entry["quotas"].items()))
        click.echo(f"{entity}: {values}")


@quotas.command("alter")
@_entity_options
@click.option("--add-config", "add", metavar="K=V[,K=V]", help="Quotas to set.")
@click.option("--delete-config", "delete", metavar="K[,K]", help="Quotas to remove.")
@property_option
@bootstrap_option
def alter(
    user: str | None,
    user_default: bool,
    client_id: str | None,
    client_id_default: bool,
    add: str | None,
    delete: str | None,
    properties: tuple[str, ...],
    bootstrap: str,
) -> None:
    """Set or remove quotas of one entity."""
    from kafka.protocol.admin import AlterClientQuotasRequest

    parts = _parts(user, user_default, client_id, client_id_default)
    if not parts:
        raise QuotaCommandError("name an entity: --user/--user-default, --client-id/...")
    ops: list[tuple[str, float, bool]] = []
    for item in (add or "").split(","):
        if item.strip():
            key, sep, value = item.partition("=")
            try:
                ops.append((key.strip(), float(value), False))
            except ValueError:
                raise QuotaCommandError(f"--add-config {item!r} is not KEY=NUMBER") from None
            if not sep:
                raise QuotaCommandError(f"--add-config {item!r} is not KEY=NUMBER")
    ops += [(key.strip(), 0.0, True) for key in (delete or "").split(",") if key.strip()]
    if not ops:
        raise QuotaCommandError("nothing to do: give --add-config and/or --delete-config")
    request = AlterClientQuotasRequest(entries=[(parts, ops)], validate_only=False)
    response = _run(bootstrap, properties, request)
    for entry in response.entries:
        if entry.error_code:
            raise QuotaCommandError(f"alter failed: {entry.error_message}")
    click.echo(f"altered {_name(parts)}")


def _number(value: float) -> str:
    return str(int(value)) if value.is_integer() else str(value)


def _name(parts: Any) -> str:
    return ", ".join(f"{t}={'<default>' if n is None else n}" for t, n in parts)
