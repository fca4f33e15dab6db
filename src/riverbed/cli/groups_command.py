"""``riverbed groups``: list, describe and reset consumer groups over the Kafka protocol.

Every subcommand talks to ``--bootstrap-server`` (default ``127.0.0.1:9092``) through
confluent-kafka's AdminClient only (ListGroups, DescribeGroups/ConsumerGroupDescribe,
OffsetFetch, OffsetCommit, ListOffsets, Metadata), so it works against any Kafka cluster,
not just Riverbed.  Output is plain text, one row per line, columns separated by spaces.

``reset-offsets`` refuses a group that has members (any state but Empty or Dead), as
Kafka's ``kafka-consumer-groups.sh`` does: committing over a live member's position would
be overwritten by its next commit.  ``--to-offset`` is clamped to the partition's
[earliest, latest] range; ``--to-datetime`` picks the first offset at or after the
timestamp (latest when there is none).

Connection handling (reachability check, quiet client logs) is shared with the other
admin commands: :mod:`riverbed.cli.kafka_admin`.

Errors (unknown group, active group, refused requests) raise :class:`GroupCommandError`;
the ``cli`` group in :mod:`riverbed.cli.main` prints them as one line and exits non-zero.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import click

from riverbed.cli.kafka_admin import TIMEOUT_S, bootstrap_option
from riverbed.cli.kafka_admin import admin_client as _admin
from riverbed.errors import RiverbedError

_RESETTABLE_STATES = ("EMPTY", "DEAD", "UNKNOWN")


class GroupCommandError(RiverbedError):
    """A ``riverbed groups`` command failed (message is for the user)."""


def _result(future: Any, what: str) -> Any:
    from confluent_kafka import KafkaException

    try:
        return future.result(timeout=TIMEOUT_S)
    except KafkaException as exc:
        raise GroupCommandError(f"{what} failed: {exc.args[0].str()}") from None
    except TimeoutError:
        raise GroupCommandError(
            f"{what} timed out after {TIMEOUT_S:g}s (the broker accepted a connection but "
            "did not answer)") from None


def _state(description: Any) -> str:
    return str(getattr(description.state, "name", description.state)).upper()


@click.group("groups")
def groups() -> None:
    """Consumer groups: list, describe, reset committed offsets."""


@groups.command("list")
@bootstrap_option
def list_groups(bootstrap: str) -> None:
    """List consumer groups with their state and type."""
    admin = _admin(bootstrap)  # keep the client alive until the result is in
    listed = _result(admin.list_consumer_groups(request_timeout=TIMEOUT_S), "listing groups")
    if listed.errors:
        raise GroupCommandError(f"listing groups failed: {listed.errors[0].str()}")
    for g in sorted(listed.valid, key=lambda g: g.group_id):
        kind = getattr(getattr(g, "type", None), "name", "UNKNOWN")
        click.echo(f"{g.group_id} {_state(g)} {kind}")


@groups.command("describe")
@click.argument("group")
@bootstrap_option
def describe(group: str, bootstrap: str) -> None:
    """Members, assignments, committed offsets, log end offsets and lag of GROUP."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]

    admin = _admin(bootstrap)
    desc = _result(admin.describe_consumer_groups([group])[group], f"describing {group}")
    click.echo(f"GROUP {group} STATE {_state(desc)} ASSIGNOR {desc.partition_assignor or '-'}")
    owner: dict[tuple[str, int], str] = {}
    click.echo("MEMBER CLIENT-ID HOST ASSIGNMENT")
    for m in desc.members:
        parts = m.assignment.topic_partitions if m.assignment else []
        for tp in parts:
            owner[(tp.topic, tp.partition)] = m.member_id
        assigned = ",".join(f"{tp.topic}-{tp.partition}" for tp in parts) or "-"
        click.echo(f"{m.member_id} {m.client_id} {m.host} {assigned}")
    committed = _result(
        admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group],
        f"fetching offsets of {group}",
    ).topic_partitions or []
    keys = {(tp.topic, tp.partition): tp.offset for tp in committed}
    for key in owner:
        keys.setdefault(key, -1)
    ends: dict[tuple[str, int], int] = {}
    if keys:
        latest = OffsetSpec.latest()  # type: ignore[no-untyped-call]
        specs = {TopicPartition(t, p): latest for t, p in keys}
        for tp, fut in admin.list_offsets(specs, request_timeout=TIMEOUT_S).items():
            ends[(tp.topic, tp.partition)] = _result(fut, "listing offsets").offset
    click.echo("TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG MEMBER")
    for (topic, partition), offset in sorted(keys.items()):
        end = ends.get((topic, partition), -1)
        current = str(offset) if offset >= 0 else "-"
        lag = str(max(end - offset, 0)) if offset >= 0 and end >= 0 else "-"
        member = owner.get((topic, partition), "-")
        click.echo(f"{topic} {partition} {current} {end} {lag} {member}")


def _parse_datetime(text: str) -> int:
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise GroupCommandError(f"--to-datetime: {text!r} is not an ISO-8601 datetime") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1000)


@groups.command("reset-offsets")
@click.argument("group")
@click.option("--topic", required=True, help="Reset every partition of this topic.")
@click.option("--to-earliest", is_flag=True, help="The log start offset.")
@click.option("--to-latest", is_flag=True, help="The log end offset.")
@click.option("--to-offset", type=int, default=None, metavar="N", help="Offset N (clamped).")
@click.option("--to-datetime", default=None, metavar="TS",
              help="First offset at or after TS (ISO-8601; UTC if no zone).")
@bootstrap_option
def reset_offsets(group: str, topic: str, to_earliest: bool, to_latest: bool,
                  to_offset: int | None, to_datetime: str | None, bootstrap: str) -> None:
    """Set GROUP's committed offsets on TOPIC (the group must have no members)."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]

    chosen = [to_earliest, to_latest, to_offset is not None, to_datetime is not None]
    if sum(chosen) != 1:
        raise GroupCommandError(
            "choose exactly one of --to-earliest, --to-latest, --to-offset, --to-datetime")
    admin = _admin(bootstrap)
    desc = _result(admin.describe_consumer_groups([group])[group], f"describing {group}")
    if _state(desc) not in _RESETTABLE_STATES or desc.members:
        raise GroupCommandError(
            f"group {group} is active ({_state(desc).lower()}, {len(desc.members)} member(s)); "
            "stop its consumers before resetting offsets")
    metadata = admin.list_topics(timeout=TIMEOUT_S).topics.get(topic)  # no auto-create
    if metadata is None or metadata.error is not None or not metadata.partitions:
        raise GroupCommandError(f"topic {topic} does not exist")
    partitions = sorted(metadata.partitions)

    def offsets(spec: Any) -> dict[int, int]:
        futures = admin.list_offsets({TopicPartition(topic, p): spec for p in partitions},
                                     request_timeout=TIMEOUT_S)
        return {tp.partition: _result(f, "listing offsets").offset for tp, f in futures.items()}

    earliest = offsets(OffsetSpec.earliest())  # type: ignore[no-untyped-call]
    latest = offsets(OffsetSpec.latest())  # type: ignore[no-untyped-call]
    if to_earliest:
        target = earliest
    elif to_latest:
        target = latest
    elif to_offset is not None:
        target = {p: min(max(to_offset, earliest[p]), latest[p]) for p in partitions}
    else:
        assert to_datetime is not None
        found = offsets(OffsetSpec.for_timestamp(_parse_datetime(to_datetime)))
        target = {p: found[p] if found[p] >= 0 else latest[p] for p in partitions}
    request = ConsumerGroupTopicPartitions(
        group, [TopicPartition(topic, p, target[p]) for p in partitions])
    done = _result(admin.alter_consumer_group_offsets([request])[group], "committing offsets")
    for tp in done.topic_partitions:
        if tp.error is not None:
            raise GroupCommandError(f"{tp.topic}-{tp.partition}: {tp.error.str()}")
    click.echo("TOPIC PARTITION NEW-OFFSET")
    for p in partitions:
        click.echo(f"{topic} {p} {target[p]}")
