"""The values of an event-sourced application and their JSON formats on the wire.

Topics of an application named ``<app>`` (:class:`AppTopics`)::

    <app>.commands   key = aggregate id   value = Command JSON       (clients, writers)
    <app>.events     key = aggregate id   value = Event JSON         (writers only; kept)
    <app>.snapshots  key = aggregate id   value = Snapshot JSON      (writers only; compacted)
    <app>.replies    key = command id     value = Reply JSON         (writers only; 1 partition)

``commands``, ``events`` and ``snapshots`` have the same partition count; an aggregate's
commands go to :func:`partition_for` and a writer puts its events and snapshots in the
partition its commands arrived on, so partition
``p`` of all three belongs to one aggregate set and to one writer at a time.

Formats (compact UTF-8 JSON)::

    Command   {"id": str, "aggregate": str, "type": str, "data": {...},
               "expected_version": int | null, "reply": bool}
    Event     {"aggregate": str, "version": int, "type": str, "data": {...},
               "command_id": str}                 version: 1 for an aggregate's first event
    Snapshot  {"aggregate": str, "version": int, "state": {...}, "events_from": int}
    Reply     {"command_id": str, "ok": bool, "error": str | null, "version": int}

An aggregate's *version* is the number of events it has; a command's ``expected_version``
(when not null) must equal it or the command is rejected.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from riverbed.errors import EventSourcingError

State = dict[str, Any]


def partition_for(aggregate_id: str, partitions: int) -> int:
    """The partition of ``aggregate_id``'s commands, events and snapshots: CRC-32 of the
    UTF-8 id modulo the partition count (librdkafka's ``consistent_random`` for a key).
    Clients and writers produce commands to this partition explicitly, and a writer rejects
    a command found on another one, so an aggregate never has two writers."""
    return zlib.crc32(aggregate_id.encode("utf-8")) % partitions


def dumps(document: Any) -> bytes:
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


@dataclass(frozen=True, slots=True)
class AppTopics:
    """The four topics of application ``app``."""

    app: str

    @property
    def commands(self) -> str:
        return f"{self.app}.commands"

    @property
    def events(self) -> str:
        return f"{self.app}.events"

    @property
    def snapshots(self) -> str:
        return f"{self.app}.snapshots"

    @property
    def replies(self) -> str:
        return f"{self.app}.replies"


@dataclass(frozen=True, slots=True)
class Command:
    id: str
    aggregate: str
    type: str
    data: Mapping[str, Any]
    expected_version: int | None = None
    reply: bool = True

    def encode(self) -> bytes:
        return dumps(
            {
                "id": self.id,
                "aggregate": self.aggregate,
                "type": self.type,
                "data": dict(self.data),
                "expected_version": self.expected_version,
                "reply": self.reply,
            }
        )

    @staticmethod
    def decode(value: bytes) -> Command:
        try:
            d = json.loads(value)
            return Command(
                str(d["id"]),
                str(d["aggregate"]),
                str(d["type"]),
                dict(d.get("data") or {}),
                d.get("expected_version"),
                bool(d.get("reply", True)),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise EventSourcingError(f"undecodable command: {exc!r}") from None


@dataclass(frozen=True, slots=True)
class Event:
    aggregate: str
    version: int
    type: str
    data: Mapping[str, Any]
    command_id: str = ""

    def encode(self) -> bytes:
        return dumps(
            {
                "aggregate": self.aggregate,
                "version": self.version,
                "type": self.type,
                "data": dict(self.data),
                "command_id": self.command_id,
            }
        )

    @staticmethod
    def decode(value: bytes) -> Event:
        d = json.loads(value)
        return Event(
            str(d["aggregate"]), int(d["version"]), str(d["type"]), d["data"], d["command_id"]
        )


@dataclass(frozen=True, slots=True)
class Snapshot:
    """An aggregate's state at ``version``.  ``events_from``: an offset of the aggregate's
    events partition at or below every event of a higher version (the end of that
    partition when the writer that wrote the snapshot loaded it), where a loader starts
    reading the events that follow the snapshot."""

    aggregate: str
    version: int
    state: State
    events_from: int = 0

    def encode(self) -> bytes:
        return dumps(
            {
                "aggregate": self.aggregate,
                "version": self.version,
                "state": self.state,
                "events_from": self.events_from,
            }
        )

    @staticmethod
    def decode(value: bytes) -> Snapshot:
        d = json.loads(value)
        return Snapshot(
            str(d["aggregate"]), int(d["version"]), dict(d["state"]), int(d.get("events_from", 0))
        )


@dataclass(frozen=True, slots=True)
class Reply:
    command_id: str
    ok: bool
    error: str | None
    version: int

    def encode(self) -> bytes:
        return dumps(
            {
                "command_id": self.command_id,
                "ok": self.ok,
                "error": self.error,
                "version": self.version,
            }
        )

    @staticmethod
    def decode(value: bytes) -> Reply:
        d = json.loads(value)
        return Reply(str(d["command_id"]), bool(d["ok"]), d.get("error"), int(d["version"]))


@dataclass(frozen=True, slots=True)
class NewEvent:
    """An event a decision produces (the writer numbers it)."""

    type: str
    data: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Decision:
    """What a command becomes: events of this aggregate and commands to others (sent in
    the same transaction, e.g. the credit half of a transfer)."""

    events: Sequence[NewEvent] = ()
    commands: Sequence[Command] = field(default_factory=tuple)


class Aggregate(Protocol):
    """The behaviour of one aggregate type, as pure functions over JSON-able states.

    ``decide`` validates ``command`` against ``state`` and returns a :class:`Decision`, or
    raises :class:`~riverbed.errors.CommandRejected` with a one-line reason; it must not
    change ``state``.  ``evolve`` applies one event and returns the new state; it never
    fails for an event ``decide`` produced (events are facts).  Both must be deterministic:
    replaying the events from offset 0 through ``evolve`` rebuilds the live state."""

    def initial_state(self) -> State: ...

    def decide(self, aggregate_id: str, state: State, command: Command) -> Decision: ...

    def evolve(self, state: State, event: Event) -> State: ...
