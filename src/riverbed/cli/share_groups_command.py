"""``riverbed share-groups``: list, describe and reset share groups (KIP-932) on any cluster.

    riverbed share-groups list [--output json]
    riverbed share-groups describe GROUP [--output json]
    riverbed share-groups reset-offsets GROUP --topic T
        (--to-earliest | --to-latest | --to-offset N) [--execute]

The share-group requests (ListGroups with a type filter, ShareGroupDescribe,
DescribeShareGroupOffsets, AlterShareGroupOffsets) go through
:class:`riverbed.queue.admin.ShareGroupAdmin`, since confluent-kafka 2.16's AdminClient has
none of them; partitions and earliest/latest offsets come from confluent-kafka's
AdminClient (Metadata, ListOffsets).  So these work against Apache Kafka 4.2+ and Riverbed.

Output, text rows or with ``--output json`` one JSON document:

- ``list``: ``GROUP STATE`` rows; JSON ``[{"group", "state"}]``;
- ``describe``: JSON ``{"group", "state", "group_epoch", "assignment_epoch", "assignor",
  "members": [{"member_id", "client_id", "host", "member_epoch", "subscribed_topics",
  "assignment": [{"topic", "partition"}]}], "offsets": [{"topic", "partition",
  "start_offset", "lag"}]}``.  ``start_offset`` is the share-partition start offset (every
  record below it is done for the group); ``lag`` counts records at or above it not yet
  acknowledged (``-1`` where the broker does not say).  ``offsets`` is null, with a warning
  on stderr, where the broker lacks DescribeShareGroupOffsets.

``reset-offsets`` prints the plan (``TOPIC PARTITION NEW-START-OFFSET``) and changes
nothing unless ``--execute`` is given, as ``kafka-share-groups.sh`` does.  Kafka refuses
while the group has members; so does this command, before asking.  ``--to-offset`` is
clamped to each partition's [earliest, latest] range.  Errors are one line, exit 1.
"""

from __future__ import annotations

from typing import Any

import click

from riverbed.cli.kafka_admin import (
    TIMEOUT_S,
    admin_client,
    bootstrap_option,
    check_reachable,
    echo_json,
    output_option,
)
from riverbed.errors import RiverbedError
from riverbed.queue.admin import (
    ShareAdminError,
    ShareAdminUnsupportedError,
    ShareGroupAdmin,
    ShareGroupDescription,
    SharePartitionOffset,
)


class ShareGroupCommandError(RiverbedError):
    """A ``riverbed share-groups`` command failed (message is for the user)."""


def _admin(bootstrap: str) -> ShareGroupAdmin:
    check_reachable(bootstrap)
    return ShareGroupAdmin(bootstrap, timeout_s=TIMEOUT_S)


@click.group("share-groups")
def share_groups() -> None:
    """Share groups (queues, KIP-932): list, describe, reset start offsets."""


@share_groups.command("list")
@bootstrap_option
@output_option
def list_command(bootstrap: str, output: str) -> None:
    """List the share groups of the cluster."""
    with _admin(bootstrap) as admin:
        listed = admin.list_groups()
    if output == "json":
        echo_json([{"group": g.group_id, "state": g.state} for g in listed])
        return
    for g in listed:
        click.echo(f"{g.group_id} {g.state}")


def _description_json(
    described: ShareGroupDescription, offsets: list[SharePartitionOffset] | None
) -> dict[str, Any]:
    return {
        "group": described.group_id,
        "state": described.state,
        "group_epoch": described.group_epoch,
        "assignment_epoch": described.assignment_epoch,
        "assignor": described.assignor,
        "members": [
            {
                "member_id": m.member_id,
                "client_id": m.client_id,
                "host": m.client_host,
                "member_epoch": m.member_epoch,
                "subscribed_topics": list(m.subscribed_topics),
                "assignment": [{"topic": t, "partition": p} for t, p in m.assignment],
            }
            for m in described.members
        ],
        "offsets": [
            {
                "topic": o.topic,
                "partition": o.partition,
                "start_offset": o.start_offset,
                "lag": o.lag,
            }
            for o in offsets
        ]
        if offsets is not None
        else None,
    }


@share_groups.command("describe")
@click.argument("group")
@bootstrap_option
@output_option
def describe_command(group: str, bootstrap: str, output: str) -> None:
    """Show a share group's state, members and start offsets."""
    with _admin(bootstrap) as admin:
        described = admin.describe_group(group)
        offsets: list[SharePartitionOffset] | None
        try:
            offsets = admin.describe_offsets(group)
        except ShareAdminUnsupportedError as exc:
            offsets = None  # members are still worth showing
            click.echo(f"riverbed: warning: no start offsets: {exc}", err=True)
    document = _description_json(described, offsets)
    if output == "json":
        echo_json(document)
        return
    click.echo(
        f"GROUP {described.group_id} STATE {described.state} "
        f"EPOCH {described.group_epoch} ASSIGNOR {described.assignor or '-'}"
    )
    click.echo("MEMBER CLIENT-ID HOST ASSIGNMENT")
    for m in document["members"]:
        parts = ",".join(f"{a['topic']}-{a['partition']}" for a in m["assignment"]) or "-"
        click.echo(f"{m['member_id']} {m['client_id']} {m['host']} {parts}")
    click.echo("TOPIC PARTITION START-OFFSET LAG")
    for o in offsets or ():
        start = o.start_offset if o.start_offset >= 0 else "-"
        lag = o.lag if o.lag >= 0 else "-"
        click.echo(f"{o.topic} {o.partition} {start} {lag}")


def _partition_offsets(bootstrap: str, topic: str) -> tuple[dict[int, int], dict[int, int]]:
    """``(earliest, latest)`` offset per partition of ``topic``."""
    from confluent_kafka import KafkaException, TopicPartition
    from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]

    admin = admin_client(bootstrap)
    metadata = admin.list_topics(topic=topic, timeout=TIMEOUT_S).topics.get(topic)
    if metadata is None or metadata.error is not None or not metadata.partitions:
        raise ShareGroupCommandError(f"topic {topic} does not exist")
    partitions = sorted(metadata.partitions)

    def offsets(spec: Any) -> dict[int, int]:
        futures = admin.list_offsets(
            {TopicPartition(topic, p): spec for p in partitions}, request_timeout=TIMEOUT_S
        )
        try:
            return {tp.partition: f.result(timeout=TIMEOUT_S).offset for tp, f in futures.items()}
        except KafkaException as exc:
            raise ShareGroupCommandError(f"listing offsets failed: {exc.args[0].str()}") from None

    earliest = offsets(OffsetSpec.earliest())  # type: ignore[no-untyped-call]
    latest = offsets(OffsetSpec.latest())  # type: ignore[no-untyped-call]
    return earliest, latest


@share_groups.command("reset-offsets")
@click.argument("group")
@click.option("--topic", required=True, help="The topic whose start offsets are reset.")
@click.option("--to-earliest", is_flag=True, help="Each partition's log start offset.")
@click.option("--to-latest", is_flag=True, help="Each partition's log end offset.")
@click.option("--to-offset", type=click.IntRange(0), default=None, help="An offset (clamped).")
@click.option("--execute", is_flag=True, help="Apply the plan (without it: dry run).")
@bootstrap_option
@output_option
def reset_offsets_command(
    group: str,
    topic: str,
    to_earliest: bool,
    to_latest: bool,
    to_offset: int | None,
    execute: bool,
    bootstrap: str,
    output: str,
) -> None:
    """Move a share group's start offsets on TOPIC (the group must have no members)."""
    if sum([to_earliest, to_latest, to_offset is not None]) != 1:
        raise ShareGroupCommandError(
            "choose exactly one of --to-earliest, --to-latest, --to-offset"
        )
    with _admin(bootstrap) as admin:
        try:
            members = len(admin.describe_group(group).members)
        except ShareAdminError as exc:
            if "GROUP_ID_NOT_FOUND" not in str(exc):
                raise
            members = 0
        if members:
            raise ShareGroupCommandError(
                f"share group {group} has {members} member(s); stop its consumers first"
            )
        earliest, latest = _partition_offsets(bootstrap, topic)
        if to_earliest:
            target = earliest
        elif to_latest:
            target = latest
        else:
            assert to_offset is not None
            target = {p: min(max(to_offset, earliest[p]), latest[p]) for p in earliest}
        if execute:
            admin.alter_offsets(group, {(topic, p): o for p, o in target.items()})
    plan = [{"topic": topic, "partition": p, "start_offset": o} for p, o in sorted(target.items())]
    if output == "json":
        echo_json({"group": group, "executed": execute, "offsets": plan})
        return
    click.echo("TOPIC PARTITION NEW-START-OFFSET")
    for row in plan:
        click.echo(f"{row['topic']} {row['partition']} {row['start_offset']}")
    if not execute:
        click.echo("(dry run: add --execute to apply)")
