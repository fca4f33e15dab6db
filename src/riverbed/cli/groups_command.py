"""``riverbed groups``: list, describe and reset consumer groups over the Kafka protocol.

Every subcommand talks to ``--bootstrap-server`` (default ``127.0.0.1:9092``) through
confluent-kafka's AdminClient only (ListGroups, DescribeGroups/ConsumerGroupDescribe,
OffsetFetch, OffsetCommit, ListOffsets, Metadata), so it works against any Kafka cluster,
not just Riverbed.  Output is plain text, one row per line, columns separated by spaces,
or with ``--output json`` (``list``, ``describe``, ``lag``) one JSON document:

- ``list``: ``[{"group", "state", "type"}]``;
- ``describe``: ``{"group", "state", "assignor", "members": [{"member_id", "client_id",
  "host", "assignment": [{"topic", "partition"}]}], "offsets": [PARTITION-LAG]}``;
- ``lag [GROUP]``: ``[{"group", "state", "total_lag", "partitions": [PARTITION-LAG]}]`` for
  GROUP, or every group when left out; text rows ``GROUP TOPIC PARTITION CURRENT-OFFSET
  LOG-END-OFFSET LAG`` (``-`` where nothing is committed), then ``TOTAL-LAG`` per group.

PARTITION-LAG is ``{"topic", "partition", "committed_offset", "log_end_offset", "lag",
"member"}``, null where unknown.  Lag is the log end offset (high watermark) minus the
committed offset, counted over the partitions the group has committed offsets for or is
assigned.

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

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import click

from riverbed.cli.kafka_admin import TIMEOUT_S, bootstrap_option, echo_json, output_option
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
            "did not answer)"
        ) from None


def _state(description: Any) -> str:
    return str(getattr(description.state, "name", description.state)).upper()


@click.group("groups")
def groups() -> None:
    """Consumer groups: list, describe, reset committed offsets."""


def _list(admin: Any) -> list[Any]:
    listed = _result(admin.list_consumer_groups(request_timeout=TIMEOUT_S), "listing groups")
    if listed.errors:
        raise GroupCommandError(f"listing groups failed: {listed.errors[0].str()}")
    return sorted(listed.valid, key=lambda g: g.group_id)


@groups.command("list")
@output_option
@bootstrap_option
def list_groups(output: str, bootstrap: str) -> None:
    """List consumer groups with their state and type."""
    admin = _admin(bootstrap)  # keep the client alive until the result is in
    rows = [
        (g.group_id, _state(g), getattr(getattr(g, "type", None), "name", "UNKNOWN"))
        for g in _list(admin)
    ]
    if output == "json":
        echo_json([{"group": g, "state": st, "type": kind} for g, st, kind in rows])
        return
    for group_id, state, kind in rows:
        click.echo(f"{group_id} {state} {kind}")


@dataclass(frozen=True, slots=True)
class PartitionLag:
    """One partition of a group: committed offset, log end offset, lag (None: unknown)."""

    topic: str
    partition: int
    committed_offset: int | None
    log_end_offset: int | None
    member: str | None

    @property
    def lag(self) -> int | None:
        if self.committed_offset is None or self.log_end_offset is None:
            return None
        return max(self.log_end_offset - self.committed_offset, 0)

    def as_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "committed_offset": self.committed_offset,
            "log_end_offset": self.log_end_offset,
            "lag": self.lag,
            "member": self.member,
        }


def _partition_lags(
    admin: Any, group: str, owner: dict[tuple[str, int], str]
) -> list[PartitionLag]:
    """Committed offsets of ``group`` (plus the partitions in ``owner``, its assignment)
    against the partitions' log end offsets, sorted by topic and partition."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]

    committed = (
        _result(
            admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group],
            f"fetching offsets of {group}",
        ).topic_partitions
        or []
    )
    keys = {(tp.topic, tp.partition): tp.offset for tp in committed}
    for key in owner:
        keys.setdefault(key, -1)
    ends: dict[tuple[str, int], int] = {}
    if keys:
        latest = OffsetSpec.latest()  # type: ignore[no-untyped-call]
        specs = {TopicPartition(t, p): latest for t, p in keys}
        for tp, fut in admin.list_offsets(specs, request_timeout=TIMEOUT_S).items():
            ends[(tp.topic, tp.partition)] = _result(fut, "listing offsets").offset
    return [
        PartitionLag(
            topic,
            partition,
            offset if offset >= 0 else None,
            end if (end := ends.get((topic, partition), -1)) >= 0 else None,
            owner.get((topic, partition)),
        )
        for (topic, partition), offset in sorted(keys.items())
    ]


def _owners(desc: Any) -> dict[tuple[str, int], str]:
    owner: dict[tuple[str, int], str] = {}
    for m in desc.members:
        for tp in m.assignment.topic_partitions if m.assignment else []:
            owner[(tp.topic, tp.partition)] = m.member_id
    return owner


def _dash(value: int | str | None) -> str:
    return "-" if value is None else str(value)


@groups.command("describe")
@click.argument("group")
@output_option
@bootstrap_option
def describe(group: str, output: str, bootstrap: str) -> None:
    """Members, assignments, committed offsets, log end offsets and lag of GROUP."""
    admin = _admin(bootstrap)
    desc = _result(admin.describe_consumer_groups([group])[group], f"describing {group}")
    owner = _owners(desc)
    lags = _partition_lags(admin, group, owner)
    members = [(m, m.assignment.topic_partitions if m.assignment else []) for m in desc.members]
    if output == "json":
        echo_json(
            {
                "group": group,
                "state": _state(desc),
                "assignor": desc.partition_assignor or None,
                "members": [
                    {
                        "member_id": m.member_id,
                        "client_id": m.client_id,
                        "host": m.host,
                        "assignment": [
                            {"topic": tp.topic, "partition": tp.partition} for tp in parts
                        ],
                    }
                    for m, parts in members
                ],
                "offsets": [lag.as_json() for lag in lags],
            }
        )
        return
    click.echo(f"GROUP {group} STATE {_state(desc)} ASSIGNOR {desc.partition_assignor or '-'}")
    click.echo("MEMBER CLIENT-ID HOST ASSIGNMENT")
    for m, parts in members:
        assigned = ",".join(f"{tp.topic}-{tp.partition}" for tp in parts) or "-"
        click.echo(f"{m.member_id} {m.client_id} {m.host} {assigned}")
    click.echo("TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG MEMBER")
    for row in lags:
        click.echo(
            f"{row.topic} {row.partition} {_dash(row.committed_offset)} "
            f"{_dash(row.log_end_offset if row.log_end_offset is not None else -1)} "
            f"{_dash(row.lag)} {_dash(row.member)}"
        )


@groups.command("lag")
@click.argument("group", required=False)
@output_option
@bootstrap_option
def lag(group: str | None, output: str, bootstrap: str) -> None:
    """Lag per partition and in total of GROUP, or of every group."""
    admin = _admin(bootstrap)
    names = [group] if group is not None else [g.group_id for g in _list(admin)]
    futures = admin.describe_consumer_groups(names) if names else {}
    report = []
    for name in names:
        desc = _result(futures[name], f"describing {name}")
        if group is not None and _state(desc) == "DEAD":
            raise GroupCommandError(f"group {name} does not exist")
        lags = _partition_lags(admin, name, _owners(desc))
        total = sum(row.lag or 0 for row in lags)
        report.append((name, _state(desc), total, lags))
    if output == "json":
        echo_json(
            [
                {
                    "group": name,
                    "state": state,
                    "total_lag": total,
                    "partitions": [row.as_json() for row in lags],
                }
                for name, state, total, lags in report
            ]
        )
        return
    click.echo("GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG")
    for name, _state_name, total, lags in report:
        for row in lags:
            click.echo(
                f"{name} {row.topic} {row.partition} {_dash(row.committed_offset)} "
                f"{_dash(row.log_end_offset)} {_dash(row.lag)}"
            )
        click.echo(f"{name} TOTAL-LAG {total}")


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
@click.option(
    "--to-datetime",
    default=None,
    metavar="TS",
    help="First offset at or after TS (ISO-8601; UTC if no zone).",
)
@bootstrap_option
def reset_offsets(
    group: str,
    topic: str,
    to_earliest: bool,
    to_latest: bool,
    to_offset: int | None,
    to_datetime: str | None,
    bootstrap: str,
) -> None:
    """Set GROUP's committed offsets on TOPIC (the group must have no members)."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]

    chosen = [to_earliest, to_latest, to_offset is not None, to_datetime is not None]
    if sum(chosen) != 1:
        raise GroupCommandError(
            "choose exactly one of --to-earliest, --to-latest, --to-offset, --to-datetime"
        )
    admin = _admin(bootstrap)
    desc = _result(admin.describe_consumer_groups([group])[group], f"describing {group}")
    if _state(desc) not in _RESETTABLE_STATES or desc.members:
        raise GroupCommandError(
            f"group {group} is active ({_state(desc).lower()}, {len(desc.members)} member(s)); "
            "stop its consumers before resetting offsets"
        )
    metadata = admin.list_topics(timeout=TIMEOUT_S).topics.get(topic)  # no auto-create
    if metadata is None or metadata.error is not None or not metadata.partitions:
        raise GroupCommandError(f"topic {topic} does not exist")
    partitions = sorted(metadata.partitions)

    def offsets(spec: Any) -> dict[int, int]:
        futures = admin.list_offsets(
            {TopicPartition(topic, p): spec for p in partitions}, request_timeout=TIMEOUT_S
        )
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
        group, [TopicPartition(topic, p, target[p]) for p in partitions]
    )
    done = _result(admin.alter_consumer_group_offsets([request])[group], "committing offsets")
    for tp in done.topic_partitions:
        if tp.error is not None:
            raise GroupCommandError(f"{tp.topic}-{tp.partition}: {tp.error.str()}")
    click.echo("TOPIC PARTITION NEW-OFFSET")
    for p in partitions:
        click.echo(f"{topic} {p} {target[p]}")
