"""What the coordinator's parts share: the group registry, the completion outbox, config.

How answers flow (the design every handler follows):

* A handler takes a request value and ``now_ms`` and returns a :class:`Reply`: the
  response (or :class:`~riverbed.coordinator.api.Pending` when it must wait) and the
  records to append to ``__consumer_offsets``.
* Answers that *other* requests were waiting for (every member's JoinGroup when a
  rebalance completes, followers' SyncGroup when the leader's arrives) go to the outbox
  as :class:`Completion` values, matched to their ``Pending.token``.
* :meth:`GroupCoordinator.tick` fires timers and also feeds the outbox.

The broker, after *every* call: (1) appends ``records`` (a no-op when empty) and waits
for the append, (2) sends the reply, (3) drains ``poll_completions()`` and sends those.
State is applied in memory before the append, as Kafka's coordinator does; if an append
fails the broker must rebuild the coordinator by replaying the partition (it holds no
partial state worth keeping).  Not thread-safe: one caller (the broker's event loop).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

from riverbed.coordinator.api import JoinGroupResponse, Pending, SyncGroupResponse
from riverbed.coordinator.config import GroupCoordinatorConfig
from riverbed.coordinator.offsets_topic_records import CoordinatorRecord

if TYPE_CHECKING:
    from riverbed.coordinator.classic_group import ClassicGroup
    from riverbed.coordinator.consumer_group import ConsumerGroup

R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Reply(Generic[R]):
    """A handler's answer: ``response`` (or Pending) plus records to append first."""

    response: R
    records: tuple[CoordinatorRecord, ...] = ()


@dataclass(frozen=True, slots=True)
class Completion:
    """A deferred answer: send ``response`` to the request that got ``Pending(token)``."""

    token: int
    group_id: str
    member_id: str
    response: JoinGroupResponse | SyncGroupResponse


def default_member_id(prefix: str) -> str:
    """Kafka's member ids: ``<client id or instance id>-<uuid>``."""
    return f"{prefix}-{uuid.uuid4()}"


def _no_overrides(group_id: str) -> Mapping[str, str]:
    return {}


class CoordinatorContext:
    """Shared mutable state of one coordinator.  Not thread-safe."""

    def __init__(
        self,
        config: GroupCoordinatorConfig,
        new_member_id: Callable[[str], str] = default_member_id,
    ) -> None:
        self.config = config
        self.new_member_id = new_member_id
        self.group_overrides: Callable[[str], Mapping[str, str]] = _no_overrides
        """A group's own GROUP configs (IncrementalAlterConfigs; riverbed.broker.group_configs)."""
        self.groups: dict[str, ClassicGroup | ConsumerGroup] = {}
        self.outbox: list[Completion] = []
        self._next_token = 0

    def session_timeout_ms(self, group_id: str) -> int:
        """KIP-848 session timeout of ``group_id``: its ``consumer.session.timeout.ms``,
        else the broker's ``group.consumer.session.timeout.ms``."""
        value = self.group_overrides(group_id).get("consumer.session.timeout.ms")
        return int(value) if value is not None else self.config.consumer_group_session_timeout_ms

    def heartbeat_interval_ms(self, group_id: str) -> int:
        """KIP-848 heartbeat interval of ``group_id`` (``consumer.heartbeat.interval.ms``)."""
        value = self.group_overrides(group_id).get("consumer.heartbeat.interval.ms")
        if value is not None:
            return int(value)
        return self.config.consumer_group_heartbeat_interval_ms

    def pending(self) -> Pending:
        self._next_token += 1
        return Pending(self._next_token)

    def complete(
        self,
        token: int,
        group_id: str,
        member_id: str,
        response: JoinGroupResponse | SyncGroupResponse,
    ) -> None:
        self.outbox.append(Completion(token, group_id, member_id, response))

    def take_completion(self, token: int) -> Completion | None:
        """Remove and return the completion for ``token`` if it is already in the outbox
        (a request whose own arrival completed it is answered directly)."""
        for i, c in enumerate(self.outbox):
            if c.token == token:
                return self.outbox.pop(i)
        return None
