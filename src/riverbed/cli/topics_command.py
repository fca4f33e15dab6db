"""``riverbed topics``: list, create, describe, alter, add partitions to and delete topics.

Every subcommand talks to ``--bootstrap-server`` (default ``127.0.0.1:9092``) through
confluent-kafka's AdminClient only (Metadata/DescribeTopicPartitions, CreateTopics,
DescribeConfigs, IncrementalAlterConfigs, CreatePartitions, DeleteTopics, ListOffsets),
so it works against any Kafka cluster, not just Riverbed.  Output is plain text, one row
per line, columns separated by spaces:

- ``list``: ``NAME PARTITIONS`` rows sorted by name; internal topics (the broker's
  ``is_internal`` flag, e.g. ``__consumer_offsets``) only with ``--all``.
- ``describe``: a ``TOPIC name PARTITIONS n INTERNAL false`` line, then
  ``PARTITION LEADER LOG-START-OFFSET LOG-END-OFFSET`` rows, then ``CONFIG`` rows
  ``key=value SOURCE`` (Kafka's ConfigSource name) for the configs that are not at their default.
- ``create``/``alter``/``add-partitions``/``delete``: one confirmation line.

``list`` and ``describe`` take ``--output json`` for one JSON document instead:
``[{"name", "partitions", "internal"}]`` (same filtering as the text), and ``{"name",
"internal", "partitions": [{"partition", "leader", "log_start_offset", "log_end_offset"}],
"configs": {KEY: {"value", "source", "is_default"}}}`` with *every* config.

``alter`` is incremental (IncrementalAlterConfigs SET and DELETE): configs not named stay
as they are.  ``delete`` asks for confirmation unless ``--yes`` is given, and refuses when
stdin is not a terminal (a script must say ``--yes``).  Metadata is read without asking
the broker to auto-create anything, so ``describe`` of a missing topic never creates it.

Connection handling (TCP reachability check first, librdkafka log lines routed to Python
logging) is shared with ``riverbed groups``: :mod:`riverbed.cli.kafka_admin`.  Errors the
broker answers (e.g. ``TOPIC_ALREADY_EXISTS``, ``INVALID_CONFIG``, ``INVALID_PARTITIONS``) raise
:class:`TopicCommandError` with Kafka's error name and the broker's message; malformed
``--config`` arguments raise :class:`~riverbed.errors.ConfigError` (exit code 2).  The
``cli`` group in :mod:`riverbed.cli.main` prints either as one line.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

import click

from riverbed.cli.kafka_admin import TIMEOUT_S, bootstrap_option, echo_json, output_option
from riverbed.cli.kafka_admin import admin_client as _admin
from riverbed.errors import ConfigError, RiverbedError


class TopicCommandError(RiverbedError):
    """A ``riverbed topics`` command failed (message is for the user)."""


def _wait(future: Any, what: str) -> Any:
    """The future's result; a Kafka error becomes one line naming the error and
    the broker's message, e.g. ``creating topic t failed: TOPIC_ALREADY_EXISTS: ...``."""
    from confluent_kafka import KafkaException

    try:
        return future.result(timeout=TIMEOUT_S)
    except KafkaException as exc:
        error = exc.args[0]
        raise TopicCommandError(f"{what} failed: {error.name()}: {error.str()}") from None
    except TimeoutError:
        raise TopicCommandError(
            f"{what} timed out after {TIMEOUT_S:g}s (the broker accepted a connection but "
            "did not answer)"
        ) from None


def _parse_configs(pairs: Iterable[str]) -> dict[str, str]:
    """``key=value`` arguments as a dict (the last of repeated keys wins)."""
    configs: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--config {pair!r} is not key=value")
        configs[key.strip()] = value
    return configs


def _describe_topics(admin: Any, names: list[str]) -> dict[str, Any]:
    """TopicDescriptions by name (``is_internal``, ``partitions`` with leaders)."""
    from confluent_kafka import TopicCollection

    if not names:
        return {}
    futures = admin.describe_topics(TopicCollection(names), request_timeout=TIMEOUT_S)
    return {name: _wait(f, f"describing topic {name}") for name, f in futures.items()}


@click.group("topics")
def topics() -> None:
    """Topics: list, create, describe, alter configs, add partitions, delete."""


@topics.command("list")
@click.option("--all", "show_all", is_flag=True, help="Include internal topics.")
@output_option
@bootstrap_option
def list_topics(show_all: bool, output: str, bootstrap: str) -> None:
    """List topics with their partition counts."""
    admin = _admin(bootstrap)  # keep the client alive until the results are in
    metadata = admin.list_topics(timeout=TIMEOUT_S)
    names = sorted(n for n, t in metadata.topics.items() if t.error is None)
    shown = [
        (name, desc)
        for name, desc in sorted(_describe_topics(admin, names).items())
        if show_all or not desc.is_internal
    ]
    if output == "json":
        echo_json(
            [
                {
                    "name": name,
                    "partitions": len(desc.partitions),
                    "internal": bool(desc.is_internal),
                }
                for name, desc in shown
            ]
        )
        return
    for name, desc in shown:
        click.echo(f"{name} {len(desc.partitions)}")


@topics.command("create")
@click.argument("name")
@click.option(
    "--partitions",
    type=click.IntRange(min=1),
    required=True,
    metavar="N",
    help="Number of partitions.",
)
@click.option(
    "--replication-factor",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Replicas per partition (the broker's default when left out).",
)
@click.option(
    "--config",
    "config_pairs",
    multiple=True,
    metavar="KEY=VALUE",
    help="A topic config, e.g. retention.ms=86400000 (repeatable).",
)
@bootstrap_option
def create(
    name: str,
    partitions: int,
    replication_factor: int | None,
    config_pairs: tuple[str, ...],
    bootstrap: str,
) -> None:
    """Create topic NAME."""
    from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

    configs = _parse_configs(config_pairs)
    admin = _admin(bootstrap)
    new = NewTopic(name, partitions, replication_factor or -1, config=configs)
    futures = admin.create_topics([new], request_timeout=TIMEOUT_S)
    _wait(futures[name], f"creating topic {name}")
    click.echo(f"created topic {name} with {partitions} partition(s)")


@topics.command("describe")
@click.argument("name")
@output_option
@bootstrap_option
def describe(name: str, output: str, bootstrap: str) -> None:
    """Partitions (leader, log start and end offsets) and non-default configs of NAME."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        ConfigResource,
        ConfigSource,
        OffsetSpec,
    )

    admin = _admin(bootstrap)
    desc = _describe_topics(admin, [name])[name]
    partitions = sorted(p.id for p in desc.partitions)
    leaders = {p.id: (p.leader.id if p.leader is not None else -1) for p in desc.partitions}

    def offsets(spec: Any) -> dict[int, int]:
        futures = admin.list_offsets(
            {TopicPartition(name, p): spec for p in partitions}, request_timeout=TIMEOUT_S
        )
        return {
            tp.partition: _wait(f, f"listing offsets of {name}").offset for tp, f in futures.items()
        }

    start = offsets(OffsetSpec.earliest()) if partitions else {}  # type: ignore[no-untyped-call]
    end = offsets(OffsetSpec.latest()) if partitions else {}  # type: ignore[no-untyped-call]
    resource = ConfigResource(ConfigResource.Type.TOPIC, name)
    configs = _wait(
        admin.describe_configs([resource], request_timeout=TIMEOUT_S)[resource],
        f"describing configs of {name}",
    )
    if output == "json":
        echo_json(
            {
                "name": name,
                "internal": bool(desc.is_internal),
                "partitions": [
                    {
                        "partition": p,
                        "leader": leaders[p],
                        "log_start_offset": start[p],
                        "log_end_offset": end[p],
                    }
                    for p in partitions
                ],
                "configs": {
                    key: {
                        "value": entry.value,
                        "source": ConfigSource(entry.source).name,
                        "is_default": bool(entry.is_default),
                    }
                    for key, entry in sorted(configs.items())
                },
            }
        )
        return
    internal = str(bool(desc.is_internal)).lower()
    click.echo(f"TOPIC {name} PARTITIONS {len(partitions)} INTERNAL {internal}")
    click.echo("PARTITION LEADER LOG-START-OFFSET LOG-END-OFFSET")
    for p in partitions:
        click.echo(f"{p} {leaders[p]} {start[p]} {end[p]}")
    for key, entry in sorted(configs.items()):
        if not entry.is_default:
            source = ConfigSource(entry.source).name  # e.g. DYNAMIC_TOPIC_CONFIG
            click.echo(f"CONFIG {key}={entry.value} {source}")


@topics.command("alter")
@click.argument("name")
@click.option(
    "--config",
    "config_pairs",
    multiple=True,
    metavar="KEY=VALUE",
    help="Set a topic config (repeatable).",
)
@click.option(
    "--delete-config",
    "delete_keys",
    multiple=True,
    metavar="KEY",
    help="Remove a topic config override, back to the default (repeatable).",
)
@bootstrap_option
def alter(
    name: str, config_pairs: tuple[str, ...], delete_keys: tuple[str, ...], bootstrap: str
) -> None:
    """Change configs of NAME incrementally (configs not named are kept)."""
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
    )

    sets = _parse_configs(config_pairs)
    if not sets and not delete_keys:
        raise ConfigError("nothing to alter: give --config KEY=VALUE or --delete-config KEY")
    both = sorted(set(sets) & set(delete_keys))
    if both:
        raise ConfigError(f"{', '.join(both)}: both set and deleted")
    entries = [
        ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in sets.items()
    ]
    entries += [
        ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE) for k in delete_keys
    ]
    admin = _admin(bootstrap)
    resource = ConfigResource(ConfigResource.Type.TOPIC, name, incremental_configs=entries)
    futures = admin.incremental_alter_configs([resource], request_timeout=TIMEOUT_S)
    _wait(futures[resource], f"altering configs of {name}")
    click.echo(f"altered topic {name}: {len(sets)} set, {len(delete_keys)} deleted")


@topics.command("add-partitions")
@click.argument("name")
@click.option(
    "--total",
    type=click.IntRange(min=1),
    required=True,
    metavar="N",
    help="The partition count afterwards (must be more than now).",
)
@bootstrap_option
def add_partitions(name: str, total: int, bootstrap: str) -> None:
    """Grow NAME to N partitions (existing records stay where they are)."""
    from confluent_kafka.admin import NewPartitions  # type: ignore[attr-defined]

    admin = _admin(bootstrap)
    futures = admin.create_partitions([NewPartitions(name, total)], request_timeout=TIMEOUT_S)
    _wait(futures[name], f"adding partitions to {name}")
    click.echo(f"topic {name} now has {total} partition(s)")


@topics.command("delete")
@click.argument("name")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@bootstrap_option
def delete(name: str, yes: bool, bootstrap: str) -> None:
    """Delete NAME and all its records."""
    if not yes:
        if not sys.stdin.isatty():
            raise TopicCommandError(
                f"refusing to delete {name} without confirmation: stdin is not a terminal "
                "(pass --yes)"
            )
        if not click.confirm(f"Delete topic {name} and all its records?", default=False):
            raise TopicCommandError(f"not deleting {name}")
    admin = _admin(bootstrap)
    futures = admin.delete_topics([name], request_timeout=TIMEOUT_S)
    _wait(futures[name], f"deleting topic {name}")
    click.echo(f"deleted topic {name}")
