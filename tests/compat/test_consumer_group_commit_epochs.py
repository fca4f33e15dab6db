"""Offset commits with an older member epoch in a KIP-848 consumer group (KIP-1251,
Kafka 4.3+), on Apache Kafka 4.4 and on Riverbed: the same raw requests, the same answers.

A commit racing the heartbeat that bumped its member's epoch is not refused for the
partitions the member still holds since that epoch (``assignment epoch <= commit epoch <=
member epoch``); it is STALE_MEMBER_EPOCH for a partition that left the member, for an epoch
newer than the member's, and for a partition assigned after the epoch it names.  franz-go's
group ETL test commits right after it lets a rebalance through and failed on the older,
stricter check (epoch must equal the member's), which Kafka 4.1 still has.

Scenario (one topic of 4 partitions, the uniform assignor of both brokers): A joins and
reaches its first epoch owning all four; B joins; A is told to revoke two, acknowledges, and
reaches a newer epoch keeping the other two (assigned at A's first epoch); B then owns the
two A gave up.  Partitions are named by what each member holds (the assignors may pick
different ones).  Both brokers' target assignment can lag a heartbeat (Kafka computes it at
most once per ``group.consumer.assignment.interval.ms``): every step heartbeats until the
state it waits for, with a deadline.  OffsetCommit v9 (names, member epochs).  Also: a
join heartbeat that is not Kafka's (owned partitions, no rebalance timeout) is refused with
Kafka's words.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from riverbed.protocol.error_codes import ErrorCode as E
from riverbed.protocol.messages import (
    ConsumerGroupHeartbeatRequest,
    FindCoordinatorRequest,
    OffsetCommitRequest,
)
from riverbed.testing.scenarios.admin import create_topic
from riverbed.testing.wire import WireClient

FIND_COORDINATOR, HEARTBEAT, OFFSET_COMMIT = 10, 68, 8
DEADLINE_S = 90.0
NOT_READY = {
    E.COORDINATOR_NOT_AVAILABLE,
    E.COORDINATOR_LOAD_IN_PROGRESS,
    E.NOT_COORDINATOR,
}


@dataclass
class Member:
    member_id: str
    epoch: int = 0
    owned: set[int] = field(default_factory=set)


class Group:
    """Raw ConsumerGroupHeartbeat / OffsetCommit for one group over one connection."""

    def __init__(self, wire: WireClient, group: str, topic: str) -> None:
        self.wire, self.group, self.topic = wire, group, topic
        self.topic_id: uuid.UUID | None = None

    def heartbeat(self, m: Member, *, join: bool = False) -> None:
        owned = (
            []
            if self.topic_id is None or join
            else [
                ConsumerGroupHeartbeatRequest.TopicPartitions(
                    topic_id=self.topic_id, partitions=sorted(m.owned)
                )
            ]
        )
        request = ConsumerGroupHeartbeatRequest(
            group_id=self.group,
            member_id=m.member_id,
            member_epoch=0 if join else m.epoch,
            rebalance_timeout_ms=60_000,
            subscribed_topic_names=[self.topic] if join else None,
            topic_partitions=owned,
        )
        deadline = time.monotonic() + DEADLINE_S
        while True:
            response = self.wire.call(HEARTBEAT, 1, request)
            if response.error_code not in NOT_READY or time.monotonic() > deadline:
                break
            self.wire.call(
                FIND_COORDINATOR, 4, FindCoordinatorRequest(coordinator_keys=[self.group])
            )
            time.sleep(0.2)
        assert response.error_code == E.NONE, (response.error_code, response.error_message)
        m.epoch = response.member_epoch
        if response.assignment is not None:
            m.owned = set()
            for tp in response.assignment.topic_partitions:
                self.topic_id = tp.topic_id
                m.owned |= set(tp.partitions)

    def until(self, members: list[Member], done: Callable[[], bool], what: str) -> None:
        """Heartbeat ``members`` in turn (each acknowledging what it holds) until ``done``."""
        deadline = time.monotonic() + DEADLINE_S
        while not done():
            assert time.monotonic() < deadline, f"not reached in {DEADLINE_S} s: {what}"
            for m in members:
                self.heartbeat(m)
            time.sleep(0.1)

    def refused_join(self, **fields: Any) -> tuple[int, str | None]:
        """Error code and message of a join heartbeat with ``fields`` changed."""
        request = ConsumerGroupHeartbeatRequest(
            group_id=self.group,
            member_id=str(uuid.uuid4()),
            member_epoch=0,
            rebalance_timeout_ms=60_000,
            subscribed_topic_names=[self.topic],
            topic_partitions=[],
        )
        for name, value in fields.items():
            setattr(request, name, value)
        response = self.wire.call(HEARTBEAT, 1, request)
        return response.error_code, response.error_message

    def commit(self, m: Member, epoch: int, partitions: set[int]) -> set[int]:
        """The error codes of one OffsetCommit v9 of ``partitions`` by ``m`` at ``epoch``."""
        request = OffsetCommitRequest(
            group_id=self.group,
            generation_id_or_member_epoch=epoch,
            member_id=m.member_id,
            topics=[
                OffsetCommitRequest.OffsetCommitRequestTopic(
                    name=self.topic,
                    partitions=[
                        OffsetCommitRequest.OffsetCommitRequestPartition(
                            partition_index=p, committed_offset=1, committed_metadata=""
                        )
                        for p in sorted(partitions)
                    ],
                )
            ],
        )
        response = self.wire.call(OFFSET_COMMIT, 9, request)
        return {p.error_code for t in response.topics for p in t.partitions}

    def leave(self, m: Member) -> None:
        m.epoch = -1
        self.heartbeat(m)


def test_an_older_member_epoch_commits_what_the_member_held_since(server44: Any) -> None:
    topic = f"kip1251-{uuid.uuid4().hex[:8]}"
    create_topic(server44.bootstrap_servers, topic, 4)
    with WireClient(server44.bootstrap_servers, client_id="riverbed-compat") as wire:
        g = Group(wire, f"kip1251-{uuid.uuid4().hex[:8]}", topic)
        a, b = Member(str(uuid.uuid4())), Member(str(uuid.uuid4()))
        g.heartbeat(a, join=True)
        g.until([a], lambda: len(a.owned) == 4, "A owns all four partitions")
        first = a.epoch
        g.heartbeat(b, join=True)
        g.until([a, b], lambda: len(a.owned) == 2 and a.epoch > first, "A gave up two")
        g.until([a, b], lambda: len(b.owned) == 2, "B owns the two A gave up")
        kept, gone = set(a.owned), set(b.owned)
        observed = {
            "current epoch, kept": g.commit(a, a.epoch, kept),
            "first epoch, kept": g.commit(a, first, kept),
            "first epoch, kept and one gone": g.commit(a, first, kept | {min(gone)}),
            "first epoch, one gone": g.commit(a, first, {min(gone)}),
            "newer than the member's": g.commit(a, a.epoch + 1, kept),
            "current epoch, one gone": g.commit(a, a.epoch, {min(gone)}),
            "B at A's first epoch": g.commit(b, first, gone),
            "B at its epoch": g.commit(b, b.epoch, gone),
        }
        assert g.topic_id is not None
        owning = [ConsumerGroupHeartbeatRequest.TopicPartitions(topic_id=g.topic_id)]
        refused = {
            "join owning a topic": g.refused_join(topic_partitions=owning),
            "join with null owned": g.refused_join(topic_partitions=None),
            "join without a rebalance timeout": g.refused_join(rebalance_timeout_ms=-1),
        }
        g.leave(a)
        g.leave(b)
    assert observed == {
        "current epoch, kept": {E.NONE},
        "first epoch, kept": {E.NONE},
        "first epoch, kept and one gone": {E.STALE_MEMBER_EPOCH},
        "first epoch, one gone": {E.STALE_MEMBER_EPOCH},
        "newer than the member's": {E.STALE_MEMBER_EPOCH},
        "current epoch, one gone": {E.NONE},
        "B at A's first epoch": {E.STALE_MEMBER_EPOCH},
        "B at its epoch": {E.NONE},
    }
    must_be_empty = (E.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining.")
    assert refused == {
        "join owning a topic": must_be_empty,
        "join with null owned": must_be_empty,
        "join without a rebalance timeout": (
            E.INVALID_REQUEST,
            "RebalanceTimeoutMs must be provided in first request.",
        ),
    }
