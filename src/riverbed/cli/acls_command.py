"""``riverbed acls``: ACL bindings on any Kafka cluster (like ``kafka-acls.sh``).

Subcommands talk to ``--bootstrap-server`` through confluent-kafka's AdminClient
(CreateAcls / DescribeAcls / DeleteAcls), so they work against a Kafka cluster as well
as Riverbed; ``-X KEY=VALUE`` passes client settings (a SASL or TLS listener needs
``-X security.protocol=...`` and a super user's credentials).  A resource is named with
one of ``--topic``, ``--group``, ``--transactional-id`` or ``--cluster``.

    riverbed acls create --principal User:alice --operation read --operation describe \\
        --topic orders [--pattern-type prefixed] [--deny] [--host 10.0.0.1]
    riverbed acls list [--topic orders --pattern-type match] [--principal User:alice]
    riverbed acls delete --principal User:alice --topic orders [--operation read]

``list`` and ``delete`` take filters: a missing option matches anything, ``--pattern-type
match`` (list/delete) matches every ACL that applies to the named resource (literal,
``*`` and prefixed ones).  ``delete`` prints what it removed.
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

OPERATIONS = (
    "all",
    "read",
    "write",
    "create",
    "delete",
    "alter",
    "describe",
    "cluster_action",
    "describe_configs",
    "alter_configs",
    "idempotent_write",
)


class AclCommandError(RiverbedError):
    """A ``riverbed acls`` command failed (message is for the user)."""


def _resource_options(fn: Any) -> Any:
    for option in reversed(
        [
            click.option("--topic", help="A topic name (or prefix, or '*')."),
            click.option("--group", help="A consumer group id (or prefix, or '*')."),
            click.option(
                "--transactional-id",
                "transactional_id",
                help="A transactional id (or prefix, or '*').",
            ),
            click.option("--cluster", is_flag=True, help="The cluster resource."),
            click.option("--principal", help="e.g. User:alice (User:* for everyone)."),
            click.option("--host", help="The client host (IP), '*' for any."),
        ]
    ):
        fn = option(fn)
    return fn


def _resource(
    topic: str | None,
    group: str | None,
    transactional_id: str | None,
    cluster: bool,
    *,
    required: bool,
) -> tuple[Any, str | None]:
    from confluent_kafka.admin import ResourceType  # type: ignore[attr-defined]

    given = [
        (ResourceType.TOPIC, topic),
        (ResourceType.GROUP, group),
        (ResourceType.TRANSACTIONAL_ID, transactional_id),
    ]
    chosen = [(t, n) for t, n in given if n is not None]
    if cluster:
        chosen.append((ResourceType.BROKER, "kafka-cluster"))
    if len(chosen) > 1:
        raise click.UsageError("give one of --topic, --group, --transactional-id, --cluster")
    if not chosen:
        if required:
            raise click.UsageError("give --topic, --group, --transactional-id or --cluster")
        return ResourceType.ANY, None
    return chosen[0]


def _admin(bootstrap: str, properties: tuple[str, ...]) -> Any:
    from confluent_kafka.admin import AdminClient

    check_reachable(bootstrap)
    return AdminClient(client_config(bootstrap, properties))


def _result(future: Any, what: str) -> Any:
    from confluent_kafka import KafkaException

    try:
        return future.result(timeout=TIMEOUT_S)
    except KafkaException as exc:
        raise AclCommandError(f"{what} failed: {exc.args[0].str()}") from None
    except TimeoutError:
        raise AclCommandError(f"{what} timed out after {TIMEOUT_S:g}s") from None


def _enum(enum_cls: Any, name: str) -> Any:
    return enum_cls[name.upper()]


def _row(binding: Any) -> dict[str, str]:
    rtype = binding.restype.name
    return {
        "resource_type": "CLUSTER" if rtype == "BROKER" else rtype,
        "name": binding.name,
        "pattern_type": binding.resource_pattern_type.name,
        "principal": binding.principal,
        "host": binding.host,
        "operation": binding.operation.name,
        "permission": binding.permission_type.name,
    }


def _echo(bindings: list[Any], output: str) -> None:
    rows = sorted((_row(b) for b in bindings), key=lambda r: tuple(r.values()))
    if output == "json":
        echo_json(rows)
        return
    for row in rows:
        click.echo("\t".join(row.values()))


@click.group()
def acls() -> None:
    """Create, list and delete ACL bindings."""


@acls.command("create")
@_resource_options
@click.option(
    "--operation",
    "operations",
    multiple=True,
    required=True,
    type=click.Choice(OPERATIONS, case_sensitive=False),
    help="Repeatable.",
)
@click.option(
    "--pattern-type",
    type=click.Choice(("literal", "prefixed"), case_sensitive=False),
    default="literal",
    show_default=True,
)
@click.option("--deny", is_flag=True, help="A DENY binding (default: ALLOW).")
@property_option
@bootstrap_option
def create(
    topic: str | None,
    group: str | None,
    transactional_id: str | None,
    cluster: bool,
    principal: str | None,
    host: str | None,
    operations: tuple[str, ...],
    pattern_type: str,
    deny: bool,
    properties: tuple[str, ...],
    bootstrap: str,
) -> None:
    """Add one binding per --operation for --principal on the resource."""
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AclBinding,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
    )

    if principal is None:
        raise click.UsageError("--principal is required")
    rtype, name = _resource(topic, group, transactional_id, cluster, required=True)
    permission = AclPermissionType.DENY if deny else AclPermissionType.ALLOW
    bindings = [
        AclBinding(
            rtype,
            name or "",
            _enum(ResourcePatternType, pattern_type),
            principal,
            host or "*",
            _enum(AclOperation, op),
            permission,
        )
        for op in dict.fromkeys(o.lower() for o in operations)
    ]
    admin = _admin(bootstrap, properties)
    for binding, future in admin.create_acls(bindings).items():
        _result(future, f"creating {binding}")
    _echo(bindings, "text")


def _filter(
    topic: str | None,
    group: str | None,
    transactional_id: str | None,
    cluster: bool,
    principal: str | None,
    host: str | None,
    operation: str,
    pattern_type: str,
    permission: str,
) -> Any:
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
    )

    rtype, name = _resource(topic, group, transactional_id, cluster, required=False)
    return AclBindingFilter(  # None matches anything (the stubs say str)
        rtype,
        name,  # type: ignore[arg-type]
        _enum(ResourcePatternType, pattern_type),
        principal,  # type: ignore[arg-type]
        host,  # type: ignore[arg-type]
        _enum(AclOperation, operation),
        _enum(AclPermissionType, permission),
    )


_filter_options = [
    click.option(
        "--operation",
        type=click.Choice(("any", *OPERATIONS), case_sensitive=False),
        default="any",
        show_default=True,
    ),
    click.option(
        "--pattern-type",
        type=click.Choice(("any", "literal", "prefixed", "match"), case_sensitive=False),
        default="any",
        show_default=True,
    ),
    click.option(
        "--permission",
        type=click.Choice(("any", "allow", "deny"), case_sensitive=False),
        default="any",
        show_default=True,
    ),
]


def _with_filter_options(fn: Any) -> Any:
    for option in reversed(_filter_options):
        fn = option(fn)
    return _resource_options(fn)


@acls.command("list")
@_with_filter_options
@output_option
@property_option
@bootstrap_option
def list_(
    topic: str | None,
    group: str | None,
    transactional_id: str | None,
    cluster: bool,
    principal: str | None,
    host: str | None,
    operation: str,
    pattern_type: str,
    permission: str,
    output: str,
    properties: tuple[str, ...],
    bootstrap: str,
) -> None:
    """The bindings matching the filter (every binding when no option is given)."""
    flt = _filter(
        topic,
        group,
        transactional_id,
        cluster,
        principal,
        host,
        operation,
        pattern_type,
        permission,
    )
    admin = _admin(bootstrap, properties)
    _echo(list(_result(admin.describe_acls(flt), "listing ACLs")), output)


@acls.command("delete")
@_with_filter_options
@output_option
@property_option
@bootstrap_option
def delete(
    topic: str | None,
    group: str | None,
    transactional_id: str | None,
    cluster: bool,
    principal: str | None,
    host: str | None,
    operation: str,
    pattern_type: str,
    permission: str,
    output: str,
    properties: tuple[str, ...],
    bootstrap: str,
) -> None:
    """Remove the bindings matching the filter and print them."""
    if not any((topic, group, transactional_id, cluster, principal)):
        raise click.UsageError("give a resource or --principal (refusing to delete every ACL)")
    flt = _filter(
        topic,
        group,
        transactional_id,
        cluster,
        principal,
        host,
        operation,
        pattern_type,
        permission,
    )
    admin = _admin(bootstrap, properties)
    removed: list[Any] = []
    for future in admin.delete_acls([flt]).values():
        removed.extend(_result(future, "deleting ACLs"))
    _echo(removed, output)
