"""The group coordinator facade: every group API the broker calls, timers, and replay.

One :class:`GroupCoordinator` serves every group (a single-node broker leads every
``__consumer_offsets`` partition).  Pure and synchronous: no I/O, no threads, no clock
reads — time comes in as ``now_ms``.  How the broker drives it::

    reply = coordinator.join_group(request, now_ms)      # Reply(response | Pending, records)
    append(reply.records)                                 # to partition_for(record.group_id)
    send(reply.response) unless it is Pending(token)      # keep token -> waiting request
    for c in coordinator.poll_completions(): send c.response to the request holding c.token

    # on a timer, at the latest at coordinator.next_deadline_ms():
    append(coordinator.tick(now_ms)); then drain poll_completions() the same way

    # on start: for each (key, value) in __consumer_offsets, in log order:
    coordinator.replay(key, value); then coordinator.on_loaded(now_ms)

Crash behaviour: state is rebuilt only from appended records, so a crash loses in-flight
joins (clients rejoin) but never a committed offset, an installed classic assignment or a
KIP-848 member's epoch and assignment (persisted after every heartbeat that changes them,
:mod:`riverbed.coordinator.consumer_persistence`).  Not thread-safe: call it from one
thread or event loop.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

from riverbed.coordinator.api import (
    ConsumerGroupDescription,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    DeletedGroup,
    DescribedGroup,
    DescribedGroupMember,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListedGroup,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    Pending,
    SyncGroupRequest,
    SyncGroupResponse,
)
from riverbed.coordinator.classic import (
    ClassicGroupManager,
    group_from_metadata,
    group_metadata_value,
    on_loaded,
)
from riverbed.coordinator.classic_group import ClassicGroup
from riverbed.coordinator.config import GroupCoordinatorConfig
from riverbed.coordinator.consumer import ConsumerGroupManager, TopicMetadata
from riverbed.coordinator.consumer_group import ConsumerGroup
from riverbed.coordinator.consumer_group_records import ConsumerGroupRecordKey
from riverbed.coordinator.consumer_persistence import ConsumerGroupPersistence
from riverbed.coordinator.context import Completion, CoordinatorContext, Reply, default_member_id
from riverbed.coordinator.offsets import OffsetManager
from riverbed.coordinator.offsets_topic_records import (
    CoordinatorRecord,
    GroupMetadataKey,
    OffsetCommitKey,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
)
from riverbed.coordinator.state import ClassicGroupState
from riverbed.protocol.error_codes import ErrorCode

E = ErrorCode
S = ClassicGroupState
R = TypeVar("R")


class _NoTopics:
    def partition_count(self, topic: str) -> int | None:
        return None

    def topic_names(self) -> Iterable[str]:
        return ()

    def topic_id(self, topic: str) -> uuid.UUID | None:
        return None

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return None


class GroupCoordinator:
    """Consumer groups (classic and KIP-848) and committed offsets of one broker."""

    def __init__(
        self,
        config: GroupCoordinatorConfig | None = None,
        topics: TopicMetadata | None = None,
        new_member_id: Callable[[str], str] = default_member_id,
        group_overrides: Callable[[str], Mapping[str, str]] | None = None,
    ) -> None:
        self.config = config or GroupCoordinatorConfig()
        self._ctx = CoordinatorContext(self.config, new_member_id)
        if group_overrides is not None:
            self._ctx.group_overrides = group_overrides
        self._classic = ClassicGroupManager(self._ctx)
        self._topics: TopicMetadata = topics or _NoTopics()
        self._consumer = ConsumerGroupManager(self._ctx, self._topics)
        self._consumer_store = ConsumerGroupPersistence(self._ctx, self._topics)
        self._offsets = OffsetManager(self._ctx)
        self._next_offsets_check_ms: int | None = None

    # -- classic protocol --------------------------------------------------------------

    def join_group(self, req: JoinGroupRequest, now_ms: int) -> Reply[JoinGroupResponse | Pending]:
        # may convert an empty consumer group: its records become tombstones
        return self._with_consumer_records(self._classic.join_group(req, now_ms), (req.group_id,))

    def sync_group(self, req: SyncGroupRequest, now_ms: int) -> Reply[SyncGroupResponse | Pending]:
        return self._classic.sync_group(req, now_ms)

    def heartbeat(self, req: HeartbeatRequest, now_ms: int) -> Reply[HeartbeatResponse]:
        return self._classic.heartbeat(req, now_ms)

    def leave_group(self, req: LeaveGroupRequest, now_ms: int) -> Reply[LeaveGroupResponse]:
        return self._classic.leave_group(req, now_ms)

    # -- KIP-848 -----------------------------------------------------------------------

    def consumer_group_heartbeat(
        self, req: ConsumerGroupHeartbeatRequest, now_ms: int
    ) -> Reply[ConsumerGroupHeartbeatResponse]:
        return self._with_consumer_records(self._consumer.heartbeat(req, now_ms), (req.group_id,))

    def _with_consumer_records(self, reply: Reply[R], group_ids: Iterable[str]) -> Reply[R]:
        """``reply`` plus the records persisting the consumer groups it may have changed."""
        extra = self._consumer_store.records_for(group_ids)
        return Reply(reply.response, reply.records + tuple(extra)) if extra else reply

    def consumer_group_describe(self, group_ids: Iterable[str]) -> list[ConsumerGroupDescription]:
        return [self._consumer.describe(g) for g in group_ids]

    # -- offsets -----------------------------------------------------------------------

    def offset_commit(self, req: OffsetCommitRequest, now_ms: int) -> Reply[OffsetCommitResponse]:
        return self._offsets.commit(req, now_ms)

    def offset_fetch(self, req: OffsetFetchRequest) -> OffsetFetchResponse:
        return self._offsets.fetch(req)

    def offset_delete(self, req: OffsetDeleteRequest) -> Reply[OffsetDeleteResponse]:
        return self._offsets.delete(req)

    # -- group administration ----------------------------------------------------------

    def list_groups(
        self, states_filter: Iterable[str] = (), types_filter: Iterable[str] = ()
    ) -> list[ListedGroup]:
        """Groups, optionally filtered by state and type names (case-insensitive)."""
        states = {s.lower() for s in states_filter}
        types = {t.lower() for t in types_filter}
        out = []
        for group_id, group in sorted(self._ctx.groups.items()):
            if isinstance(group, ClassicGroup):
                listed = ListedGroup(
                    group_id, group.protocol_type or "", group.state.wire_name, "classic"
                )
            else:
                listed = ListedGroup(group_id, "consumer", group.state.value, "consumer")
            if (not states or listed.group_state.lower() in states) and (
                not types or listed.group_type in types
            ):
                out.append(listed)
        return out

    def describe_groups(self, group_ids: Iterable[str]) -> list[DescribedGroup]:
        out = []
        for group_id in group_ids:
            group = self._ctx.groups.get(group_id)
            if group is None:
                out.append(DescribedGroup(group_id, E.NONE, "Dead"))
            elif isinstance(group, ConsumerGroup):
                out.append(DescribedGroup(group_id, E.NONE, group.state.value, "consumer"))
            else:
                stable = group.is_in(S.STABLE)
                protocol = group.protocol_name or ""
                out.append(
                    DescribedGroup(
                        group_id,
                        E.NONE,
                        group.state.wire_name,
                        group.protocol_type or "",
                        protocol if stable else "",
                        tuple(
                            DescribedGroupMember(
                                m.member_id,
                                m.group_instance_id,
                                m.client_id,
                                m.client_host,
                                m.metadata(protocol) if stable else b"",
                                m.assignment if stable else b"",
                            )
                            for m in group.members.values()
                        ),
                    )
                )
        return out

    def delete_groups(self, group_ids: Iterable[str], now_ms: int) -> Reply[list[DeletedGroup]]:
        group_ids = list(group_ids)
        results, records = [], []
        for group_id in group_ids:
            group = self._ctx.groups.get(group_id)
            if group is None:
                results.append(DeletedGroup(group_id, E.GROUP_ID_NOT_FOUND))
            elif not group.is_empty or (
                isinstance(group, ClassicGroup) and not group.is_in(S.EMPTY)
            ):
                results.append(DeletedGroup(group_id, E.NON_EMPTY_GROUP))
            else:
                records += self._offsets.delete_all(group_id)
                records += self._offsets.drop_group(group_id, now_ms)
                results.append(DeletedGroup(group_id, E.NONE))
        records += self._consumer_store.records_for(group_ids)
        return Reply(results, tuple(records))

    # -- time --------------------------------------------------------------------------

    def tick(self, now_ms: int) -> list[CoordinatorRecord]:
        """Fire every timer due at ``now_ms``; returns records to append.  Deferred answers
        it produces are in :meth:`poll_completions`."""
        records: list[CoordinatorRecord] = []
        for group in list(self._ctx.groups.values()):
            if isinstance(group, ClassicGroup):
                self._classic.tick(group, now_ms, records)
            else:
                self._consumer.tick(group, now_ms)
        if self._next_offsets_check_ms is None:
            self._next_offsets_check_ms = now_ms + self.config.offsets_retention_check_interval_ms
        elif now_ms >= self._next_offsets_check_ms:
            records += self._offsets.expire(now_ms)
            self._next_offsets_check_ms = now_ms + self.config.offsets_retention_check_interval_ms
        consumer_groups = {
            g for g, group in self._ctx.groups.items() if isinstance(group, ConsumerGroup)
        }
        records += self._consumer_store.records_for(
            consumer_groups | self._consumer_store.tracked_group_ids()
        )
        return records

    def next_deadline_ms(self) -> int | None:
        """The earliest time :meth:`tick` has something to do (None: only the periodic
        offsets expiration, every ``offsets_retention_check_interval_ms``)."""
        deadlines = [self._next_offsets_check_ms] if self._next_offsets_check_ms else []
        for group in self._ctx.groups.values():
            d = (
                self._classic.next_deadline_ms(group)
                if isinstance(group, ClassicGroup)
                else self._consumer.next_deadline_ms(group)
            )
            if d is not None:
                deadlines.append(d)
        return min(deadlines, default=None)

    def poll_completions(self) -> list[Completion]:
        """Deferred answers ready to send (drained)."""
        done, self._ctx.outbox = self._ctx.outbox, []
        return done

    # -- persistence -------------------------------------------------------------------

    def replay(self, key: bytes, value: bytes | None) -> None:
        """Apply one ``__consumer_offsets`` record, in log order (load on start)."""
        decoded = decode_key(key)
        if isinstance(decoded, ConsumerGroupRecordKey):
            self._consumer_store.replay(decoded, key, value)
        elif isinstance(decoded, OffsetCommitKey):
            self._offsets.replay(
                decoded.group,
                decoded.topic,
                decoded.partition,
                None if value is None else decode_offset_commit_value(value),
            )
        elif isinstance(decoded, GroupMetadataKey):
            if value is None:
                if isinstance(self._ctx.groups.get(decoded.group), ClassicGroup):
                    self._ctx.groups.pop(decoded.group, None)
                self._offsets.offsets.pop(decoded.group, None)
            else:
                self._ctx.groups[decoded.group] = group_from_metadata(
                    decoded.group, decode_group_metadata_value(value)
                )

    def on_loaded(self, now_ms: int) -> None:
        """After the last :meth:`replay`: start members' sessions and the expiry timer."""
        for group in self._ctx.groups.values():
            if isinstance(group, ClassicGroup):
                on_loaded(group, now_ms)
        self._consumer_store.on_loaded(now_ms)
        self._next_offsets_check_ms = now_ms + self.config.offsets_retention_check_interval_ms

    def snapshot(self) -> dict[str, object]:
        """What survives a restart, as plain values (replay tests compare these)."""
        groups: dict[str, object] = {}
        for group_id, group in sorted(self._ctx.groups.items()):
            # generation 0: never completed a join, so nothing was persisted (a simple
            # group's offsets are listed below)
            if (
                isinstance(group, ClassicGroup)
                and group.is_in(S.STABLE, S.EMPTY)
                and group.generation_id > 0
            ):
                groups[group_id] = group_metadata_value(group)
            elif isinstance(group, ConsumerGroup):
                groups[group_id] = self._consumer_store.encode_group(group)
        offsets = {g: dict(sorted(o.items())) for g, o in sorted(self._offsets.offsets.items())}
        return {"groups": groups, "offsets": offsets}

    # -- introspection for tests and tools -----------------------------------------------

    def group(self, group_id: str) -> ClassicGroup | ConsumerGroup | None:
        return self._ctx.groups.get(group_id)

    def group_ids(self) -> list[str]:
        return sorted(self._ctx.groups)
