"""Persisting KIP-848 consumer groups: state -> records, and records -> state on load.

Writing is a *diff*: :meth:`ConsumerGroupPersistence.records_for` encodes a group's whole
persistent state as ``key -> value`` bytes (:mod:`riverbed.coordinator.consumer_group_records`),
compares it with what was last written for that group, and returns records for the keys
whose value changed, then tombstones for keys that are gone (members before group-level
keys, so a replayed member tombstone never meets a group that was already removed).  A
heartbeat that changes nothing writes nothing.  The coordinator calls it after every call
that can change a consumer group (heartbeat, timers, DeleteGroups, a classic JoinGroup
converting an empty consumer group).

What is persisted: group epoch (3), the partition counts the epoch was computed with (4),
each member's subscription and identity (5), the target assignment epoch (6) and each
member's target (7), each member's epoch, previous epoch, reconciliation state, assigned
partitions and partitions pending revocation with the epoch each was assigned at (8).
Not persisted, as in Kafka: session and revocation deadlines (restarted from "now" on
load) and the partition owner index (rebuilt from the members' partitions).

Loading: :meth:`replay` applies records in log order (a record for a group id held by a
classic group replaces it: the later record wins, as the log is in time order);
:meth:`on_loaded` then rebuilds the owner index and starts the timers.  Partitions of a
topic id the broker no longer knows are dropped.  Not thread-safe.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Protocol

from riverbed.coordinator.consumer_group import ConsumerGroup, ConsumerGroupMember, Partitions
from riverbed.coordinator.consumer_group_records import (
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
    CONSUMER_GROUP_MEMBER_METADATA,
    CONSUMER_GROUP_METADATA,
    CONSUMER_GROUP_PARTITION_METADATA,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA,
    AssignmentEpochs,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupRecordKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataValue,
    ConsumerGroupValue,
    TopicMetadataEntry,
    TopicPartitionsById,
    decode_value,
    encode_key,
    encode_value,
)
from riverbed.coordinator.context import CoordinatorContext
from riverbed.coordinator.offsets_topic_records import CoordinatorRecord
from riverbed.coordinator.state import MemberState

MEMBER_STATE_CODES: dict[MemberState, int] = {
    MemberState.STABLE: 0,
    MemberState.UNREVOKED_PARTITIONS: 1,
    MemberState.UNRELEASED_PARTITIONS: 2,
}
"""Kafka's ``MemberState`` byte values."""
_STATE_OF_CODE = {code: state for state, code in MEMBER_STATE_CODES.items()}


class TopicIds(Protocol):
    """Topic name <-> topic id, as the broker knows them now."""

    def topic_id(self, topic: str) -> uuid.UUID | None: ...

    def topic_name(self, topic_id: uuid.UUID) -> str | None: ...


class ConsumerGroupPersistence:
    """Diffs consumer groups into records and replays records into groups."""

    def __init__(self, ctx: CoordinatorContext, topics: TopicIds) -> None:
        self.ctx = ctx
        self.topics = topics
        self.written: dict[str, dict[bytes, bytes]] = {}
        """group id -> key -> value last written (or replayed) for that group."""

    # -- writing -----------------------------------------------------------------------

    def _by_id(self, partitions: Partitions) -> TopicPartitionsById:
        out = []
        for topic, ps in partitions.items():
            topic_id = self.topics.topic_id(topic)
            if topic_id is not None and ps:
                out.append((topic_id, tuple(sorted(ps))))
        return tuple(sorted(out, key=lambda item: item[0].bytes))

    def _assignment_value(
        self, m: ConsumerGroupMember
    ) -> ConsumerGroupCurrentMemberAssignmentValue:
        assigned, pending = self._by_id(m.assigned), self._by_id(m.pending_revocation)

        def epochs(by_id: TopicPartitionsById) -> AssignmentEpochs:
            out = []
            for topic_id, ps in by_id:
                name = self.topics.topic_name(topic_id)
                out.append(
                    tuple(m.assignment_epochs.get((name or "", p), m.member_epoch) for p in ps)
                )
            return tuple(out)

        return ConsumerGroupCurrentMemberAssignmentValue(
            m.member_epoch,
            m.previous_member_epoch,
            MEMBER_STATE_CODES[m.state],
            assigned,
            pending,
            epochs(assigned),
            epochs(pending),
        )

    def encode_group(self, group: ConsumerGroup) -> dict[bytes, bytes]:
        """Every record value that persists ``group``, keyed by encoded key, in the order
        they are written."""
        gid = group.group_id
        values: list[tuple[ConsumerGroupRecordKey, ConsumerGroupValue]] = []
        values.append(
            (
                ConsumerGroupRecordKey(CONSUMER_GROUP_METADATA, gid),
                ConsumerGroupMetadataValue(group.group_epoch),
            )
        )
        topics = []
        for name, count in sorted(group.subscription_metadata.items()):
            topic_id = self.topics.topic_id(name)
            if topic_id is not None:
                topics.append(TopicMetadataEntry(topic_id, name, count))
        values.append(
            (
                ConsumerGroupRecordKey(CONSUMER_GROUP_PARTITION_METADATA, gid),
                ConsumerGroupPartitionMetadataValue(tuple(topics)),
            )
        )
        for m in group.members.values():
            values.append(
                (
                    ConsumerGroupRecordKey(CONSUMER_GROUP_MEMBER_METADATA, gid, m.member_id),
                    ConsumerGroupMemberMetadataValue(
                        m.instance_id,
                        m.rack_id,
                        m.client_id,
                        m.client_host,
                        m.subscribed_topic_names,
                        m.subscribed_topic_regex,
                        m.rebalance_timeout_ms,
                        m.server_assignor,
                    ),
                )
            )
        values.append(
            (
                ConsumerGroupRecordKey(CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, gid),
                ConsumerGroupTargetAssignmentMetadataValue(group.assignment_epoch),
            )
        )
        for member_id, target in group.target.items():
            values.append(
                (
                    ConsumerGroupRecordKey(CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER, gid, member_id),
                    ConsumerGroupTargetAssignmentMemberValue(self._by_id(target)),
                )
            )
        for m in group.members.values():
            values.append(
                (
                    ConsumerGroupRecordKey(
                        CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, gid, m.member_id
                    ),
                    self._assignment_value(m),
                )
            )
        return {encode_key(k): encode_value(v) for k, v in values}

    def records_for(self, group_ids: Iterable[str]) -> list[CoordinatorRecord]:
        """Records bringing the log up to date with the groups ``group_ids`` (a group id
        that is no longer a consumer group gets tombstones for what it had written)."""
        records: list[CoordinatorRecord] = []
        for gid in sorted(set(group_ids)):
            group = self.ctx.groups.get(gid)
            desired = self.encode_group(group) if isinstance(group, ConsumerGroup) else {}
            written = self.written.get(gid, {})
            for key, value in desired.items():
                if written.get(key) != value:
                    records.append(CoordinatorRecord(gid, key, value))
            gone = [k for k in written if k not in desired]
            gone.sort(key=lambda k: -int.from_bytes(k[:2], "big", signed=True))
            records += [CoordinatorRecord(gid, k, None) for k in gone]
            if desired:
                self.written[gid] = desired
            else:
                self.written.pop(gid, None)
        return records

    def tracked_group_ids(self) -> set[str]:
        """Groups with something written (timers diff these and every live group)."""
        return set(self.written)

    # -- loading -----------------------------------------------------------------------

    def _by_name(self, partitions: TopicPartitionsById) -> Partitions:
        out: Partitions = {}
        for topic_id, ps in partitions:
            name = self.topics.topic_name(topic_id)
            if name is not None and ps:
                out[name] = frozenset(ps)
        return out

    def replay(self, key: ConsumerGroupRecordKey, raw_key: bytes, value: bytes | None) -> None:
        """Apply one record (in log order)."""
        gid = key.group
        written = self.written.setdefault(gid, {})
        if value is None:
            written.pop(raw_key, None)
            if not written:
                del self.written[gid]
        else:
            written[raw_key] = value
        group = self.ctx.groups.get(gid)
        if value is None:
            if isinstance(group, ConsumerGroup):
                self._replay_tombstone(group, key)
            return
        if not isinstance(group, ConsumerGroup):
            group = ConsumerGroup(gid, assignor_name=self.ctx.config.consumer_group_assignors[0])
            self.ctx.groups[gid] = group
        self._replay_value(group, key, decode_value(key.version, value))

    def _replay_tombstone(self, group: ConsumerGroup, key: ConsumerGroupRecordKey) -> None:
        if key.version == CONSUMER_GROUP_METADATA:
            del self.ctx.groups[group.group_id]
        elif key.version == CONSUMER_GROUP_MEMBER_METADATA and key.member_id is not None:
            member = group.members.pop(key.member_id, None)
            if (
                member is not None
                and member.instance_id is not None
                and group.static_members.get(member.instance_id) == key.member_id
            ):
                del group.static_members[member.instance_id]
        elif key.version == CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER and key.member_id:
            group.target.pop(key.member_id, None)

    def _member(self, group: ConsumerGroup, member_id: str) -> ConsumerGroupMember:
        member = group.members.get(member_id)
        if member is None:
            member = ConsumerGroupMember(member_id, None, None, "", "", -1)
            group.members[member_id] = member
        return member

    def _replay_value(
        self, group: ConsumerGroup, key: ConsumerGroupRecordKey, value: ConsumerGroupValue
    ) -> None:
        if isinstance(value, ConsumerGroupMetadataValue):
            group.group_epoch = value.epoch
        elif isinstance(value, ConsumerGroupPartitionMetadataValue):
            counts = {}
            for t in value.topics:
                name = self.topics.topic_name(t.topic_id)
                if name is not None:
                    counts[name] = t.num_partitions
            group.subscription_metadata = counts
        elif isinstance(value, ConsumerGroupTargetAssignmentMetadataValue):
            group.assignment_epoch = value.assignment_epoch
        elif isinstance(value, ConsumerGroupTargetAssignmentMemberValue):
            assert key.member_id is not None
            group.target[key.member_id] = self._by_name(value.partitions)
        elif isinstance(value, ConsumerGroupMemberMetadataValue):
            assert key.member_id is not None
            m = self._member(group, key.member_id)
            m.instance_id, m.rack_id = value.instance_id, value.rack_id
            m.client_id, m.client_host = value.client_id, value.client_host
            m.subscribed_topic_names = value.subscribed_topic_names
            m.subscribed_topic_regex = value.subscribed_topic_regex
            m.rebalance_timeout_ms = value.rebalance_timeout_ms
            m.server_assignor = value.server_assignor
            if m.instance_id is not None:
                group.static_members[m.instance_id] = m.member_id
        else:
            assert key.member_id is not None
            m = self._member(group, key.member_id)
            m.member_epoch, m.previous_member_epoch = (
                value.member_epoch,
                value.previous_member_epoch,
            )
            m.state = _STATE_OF_CODE.get(value.state, MemberState.STABLE)
            m.assigned = self._by_name(value.assigned)
            m.pending_revocation = self._by_name(value.pending_revocation)
            m.assignment_epochs = {}
            for by_id, epochs in (
                (value.assigned, value.assigned_epochs),
                (value.pending_revocation, value.pending_revocation_epochs),
            ):
                for i, (topic_id, ps) in enumerate(by_id):
                    name = self.topics.topic_name(topic_id)
                    topic_epochs = epochs[i] if i < len(epochs) else None
                    if name is None:
                        continue
                    for j, p in enumerate(ps):
                        m.assignment_epochs[(name, p)] = (
                            value.member_epoch if topic_epochs is None else topic_epochs[j]
                        )

    def on_loaded(self, now_ms: int) -> None:
        """After the last replay: owner index, assignor, sessions and revocation timers."""
        for group in self.ctx.groups.values():
            if not isinstance(group, ConsumerGroup):
                continue
            session = self.ctx.session_timeout_ms(group.group_id)
            group.partition_owner = {}
            for m in group.members.values():
                held: dict[str, set[int]] = {t: set(ps) for t, ps in m.assigned.items()}
                for t, ps in m.pending_revocation.items():
                    held.setdefault(t, set()).update(ps)
                for t, held_ps in held.items():
                    for p in held_ps:
                        group.partition_owner.setdefault((t, p), m.member_id)
                m.session_deadline_ms = now_ms + session
                m.revocation_deadline_ms = (
                    now_ms + max(m.rebalance_timeout_ms, 0)
                    if m.state is MemberState.UNREVOKED_PARTITIONS
                    else None
                )
                if m.server_assignor is not None:
                    group.assignor_name = m.server_assignor
