"""A driver for tests: a :class:`GroupCoordinator` plus the broker's side of the contract.

:class:`CoordinatorDriver` plays the broker: it keeps every record "appended" (so a test
can replay them), collects deferred answers by token, and owns a
:class:`~riverbed.clock.ManualClock`.  Shipped with the library so the broker's own tests
can reuse it.  Not thread-safe.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from riverbed.clock import ManualClock
from riverbed.coordinator.api import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    Pending,
    SyncGroupRequest,
    SyncGroupResponse,
)
from riverbed.coordinator.config import GroupCoordinatorConfig
from riverbed.coordinator.consumer_protocol import encode_subscription
from riverbed.coordinator.context import Reply
from riverbed.coordinator.coordinator import GroupCoordinator
from riverbed.coordinator.offsets_topic_records import CoordinatorRecord

R = TypeVar("R")


@dataclass
class StaticTopics:
    """A fixed topic -> partition count table (the broker's metadata, in tests)."""

    partitions: dict[str, int] = field(default_factory=dict)

    def partition_count(self, topic: str) -> int | None:
        return self.partitions.get(topic)

    def topic_names(self) -> list[str]:
        return sorted(self.partitions)

    def topic_id(self, topic: str) -> uuid.UUID | None:
        """A stable id per name (uuid5), like a broker's id of a topic never recreated."""
        return uuid.uuid5(uuid.NAMESPACE_URL, topic) if topic in self.partitions else None

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        for name in self.partitions:
            if uuid.uuid5(uuid.NAMESPACE_URL, name) == topic_id:
                return name
        return None


class CountingIds:
    """Deterministic member ids: ``<prefix>-1``, ``<prefix>-2``, ..."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}-{self.n}"


class CoordinatorDriver:
    def __init__(
        self, config: GroupCoordinatorConfig | None = None, topics: Mapping[str, int] | None = None
    ) -> None:
        self.clock = ManualClock(now_ms=1_000_000)
        self.topics = StaticTopics(dict(topics or {}))
        self.coordinator = GroupCoordinator(config, self.topics, CountingIds())
        self.log: list[CoordinatorRecord] = []
        self.answers: dict[int, JoinGroupResponse | SyncGroupResponse] = {}

    @property
    def now(self) -> int:
        return self.clock.now_ms()

    def _settle(self, records: tuple[CoordinatorRecord, ...] | list[CoordinatorRecord]) -> None:
        self.log.extend(records)
        for c in self.coordinator.poll_completions():
            assert c.token not in self.answers, "a token completed twice"
            self.answers[c.token] = c.response

    def handle(self, reply: Reply[R]) -> R:
        self._settle(reply.records)
        return reply.response

    def advance(self, ms: int) -> None:
        """Move time by ``ms``, ticking at every deadline on the way (as a broker timer
        armed with ``next_deadline_ms`` would) and at the end."""
        target = self.now + ms
        while (
            deadline := self.coordinator.next_deadline_ms()
        ) is not None and self.now < deadline <= target:
            self.clock.advance(deadline - self.now)
            self._settle(self.coordinator.tick(self.now))
        self.clock.advance(target - self.now)
        self._settle(self.coordinator.tick(self.now))

    def advance_to_next_deadline(self) -> None:
        deadline = self.coordinator.next_deadline_ms()
        assert deadline is not None
        self.advance(max(deadline - self.now, 0))

    def answer(self, pending: object) -> JoinGroupResponse | SyncGroupResponse | None:
        """The deferred answer for a Pending, if it has arrived."""
        assert isinstance(pending, Pending)
        return self.answers.get(pending.token)

    # -- classic shortcuts -------------------------------------------------------------

    def join(
        self,
        group_id: str,
        member_id: str = "",
        *,
        topics: tuple[str, ...] = ("t",),
        protocols: tuple[str, ...] = ("range",),
        instance_id: str | None = None,
        session_timeout_ms: int = 10_000,
        rebalance_timeout_ms: int = 30_000,
        client_id: str = "c",
        api_version: int = 9,
    ) -> JoinGroupResponse | Pending:
        meta = encode_subscription(list(topics))
        req = JoinGroupRequest(
            group_id,
            member_id,
            "consumer",
            tuple((p, meta) for p in protocols),
            session_timeout_ms,
            rebalance_timeout_ms,
            instance_id,
            client_id,
            "/127.0.0.1",
            api_version,
        )
        return self.handle(self.coordinator.join_group(req, self.now))

    def sync(
        self,
        group_id: str,
        member_id: str,
        generation_id: int,
        assignments: Mapping[str, bytes] | None = None,
        instance_id: str | None = None,
    ) -> SyncGroupResponse | Pending:
        req = SyncGroupRequest(
            group_id,
            generation_id,
            member_id,
            instance_id,
            "consumer",
            None,
            tuple((assignments or {}).items()),
        )
        return self.handle(self.coordinator.sync_group(req, self.now))

    # -- KIP-848 shortcut --------------------------------------------------------------

    def cg_heartbeat(
        self,
        group_id: str,
        member_id: str,
        member_epoch: int,
        *,
        topics: tuple[str, ...] | None = None,
        owned: Mapping[str, frozenset[int]] | None = None,
        instance_id: str | None = None,
        assignor: str | None = None,
        rebalance_timeout_ms: int = 30_000,
    ) -> ConsumerGroupHeartbeatResponse:
        req = ConsumerGroupHeartbeatRequest(
            group_id,
            member_id,
            member_epoch,
            instance_id,
            None,
            rebalance_timeout_ms,
            topics,
            None,
            assignor,
            owned,
        )
        return self.handle(self.coordinator.consumer_group_heartbeat(req, self.now))

    def replayed(self) -> GroupCoordinator:
        """A fresh coordinator rebuilt from every record appended so far."""
        fresh = GroupCoordinator(self.coordinator.config, self.topics, CountingIds())
        for record in self.log:
            fresh.replay(record.key, record.value)
        fresh.on_loaded(self.now)
        return fresh
