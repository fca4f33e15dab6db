"""Event sourcing on Kafka: commands decided against current state, events appended to a
keyed topic, state in compacted snapshots, optimistic concurrency, projections.

Public API (docs/event-sourcing.md)::

    model       AppTopics, Command, Event, Snapshot, Reply, Decision, NewEvent, Aggregate,
                partition_for
    client      create_topics, CommandClient (submit/send; thread-safe)
    writer      CommandWriter: one writer per partition (consumer group), one Kafka
                transaction per batch (events + snapshots + replies + offsets), fencing
    replay      replay (rebuild from offset 0), live_state / load_partition (snapshots +
                the events after them), all_snapshots, load_snapshots, read_to_end
    projection  SqliteProjection: read models idempotent by offset
    bank        BankAccount: the worked example, and its balances projection

Reaches Kafka only through confluent-kafka, so it works against any Kafka cluster with
transactions (Riverbed's broker or Apache Kafka).
"""

from riverbed.eventsourcing.client import CommandClient, create_topics
from riverbed.eventsourcing.model import (
    Aggregate,
    AppTopics,
    Command,
    Decision,
    Event,
    NewEvent,
    Reply,
    Snapshot,
    State,
    partition_for,
)
from riverbed.eventsourcing.projection import SqliteProjection
from riverbed.eventsourcing.replay import (
    all_snapshots,
    live_state,
    load_partition,
    load_snapshots,
    read_to_end,
    replay,
)
from riverbed.eventsourcing.writer import CommandWriter

__all__ = [
    "Aggregate",
    "AppTopics",
    "Command",
    "CommandClient",
    "CommandWriter",
    "Decision",
    "Event",
    "NewEvent",
    "Reply",
    "Snapshot",
    "SqliteProjection",
    "State",
    "all_snapshots",
    "create_topics",
    "live_state",
    "load_partition",
    "load_snapshots",
    "partition_for",
    "read_to_end",
    "replay",
]
