"""Committed offsets: OffsetCommit, OffsetFetch, OffsetDelete, and their expiration.

Offsets live per group id as ``(topic, partition) -> OffsetAndMetadata`` and are persisted
as ``OffsetCommitKey``/``OffsetCommitValue`` records (tombstones on delete and expiry).
Commit validation, as Kafka's:

* classic group, generation >= 0 (or a member id / instance id given): the member must
  exist (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID) and the generation match
  (ILLEGAL_GENERATION); during CompletingRebalance: REBALANCE_IN_PROGRESS;
* classic group, generation -1 and no member: a *simple* commit, allowed only while the
  group is Empty (else UNKNOWN_MEMBER_ID); a commit to an unknown group id creates an
  Empty simple group;
* KIP-848 group: the member must exist (UNKNOWN_MEMBER_ID) and the epoch be its current
  one, or an older one at or after the assignment epoch of every partition committed
  (KIP-1251; else STALE_MEMBER_EPOCH, :meth:`ConsumerGroup.commit_error`); commits with a
  negative epoch only while the group has no members.

Expiration (:meth:`OffsetManager.expire`, run by ``tick`` every
``offsets_retention_check_interval_ms``): offsets of an Empty group expire
``offsets_retention_ms`` after the group became Empty (after the commit for simple groups
that never had members); offsets of topics a non-empty consumer group no longer
subscribes to expire after the commit.  An Empty group left with no offsets is deleted.
Not thread-safe.
"""

from __future__ import annotations

from dataclasses import dataclass

from riverbed.coordinator.api import (
    UNKNOWN_MEMBER_ID,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchPartition,
    OffsetFetchRequest,
    OffsetFetchResponse,
    PartitionResult,
)
from riverbed.coordinator.classic import validate_member
from riverbed.coordinator.classic_group import ClassicGroup
from riverbed.coordinator.consumer_group import ConsumerGroup
from riverbed.coordinator.context import CoordinatorContext, Reply
from riverbed.coordinator.errors import GroupCoordinatorError
from riverbed.coordinator.offsets_topic_records import (
    CoordinatorRecord,
    OffsetCommitValue,
    group_metadata_record,
    offset_commit_record,
)
from riverbed.coordinator.state import ClassicGroupState
from riverbed.protocol.error_codes import ErrorCode

E = ErrorCode
S = ClassicGroupState


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int


class OffsetManager:
    def __init__(self, ctx: CoordinatorContext) -> None:
        self.ctx = ctx
        self.offsets: dict[str, dict[tuple[str, int], OffsetAndMetadata]] = {}

    # -- OffsetCommit ------------------------------------------------------------------

    def commit(self, req: OffsetCommitRequest, now_ms: int) -> Reply[OffsetCommitResponse]:
        try:
            self._validate_commit(req, now_ms)
        except GroupCoordinatorError as exc:
            return Reply(
                OffsetCommitResponse(
                    tuple(
                        PartitionResult(p.topic, p.partition, exc.error_code)
                        for p in req.partitions
                    )
                )
            )
        records: list[CoordinatorRecord] = []
        results = []
        group_offsets = self.offsets.setdefault(req.group_id, {})
        for p in req.partitions:
            metadata = p.committed_metadata or ""
            if self._metadata_too_large(p):
                results.append(PartitionResult(p.topic, p.partition, E.OFFSET_METADATA_TOO_LARGE))
                continue
            value = OffsetAndMetadata(
                p.committed_offset, p.committed_leader_epoch, metadata, now_ms
            )
            group_offsets[(p.topic, p.partition)] = value
            records.append(
                offset_commit_record(
                    req.group_id,
                    p.topic,
                    p.partition,
                    OffsetCommitValue(value.offset, value.leader_epoch, value.metadata, now_ms),
                )
            )
            results.append(PartitionResult(p.topic, p.partition, E.NONE))
        if not group_offsets:
            del self.offsets[req.group_id]
        return Reply(OffsetCommitResponse(tuple(results)), tuple(records))

    def _metadata_too_large(self, p: OffsetCommitPartition) -> bool:
        """OFFSET_METADATA_TOO_LARGE: such a partition is answered so and neither stored nor
        checked against the member's assignment epochs (as Kafka's commitOffset)."""
        limit = self.ctx.config.offset_metadata_max_bytes
        return len((p.committed_metadata or "").encode()) > limit

    def _validate_commit(self, req: OffsetCommitRequest, now: int) -> None:
        group = self.ctx.groups.get(req.group_id)
        generation = req.generation_id_or_member_epoch
        simple = (
            generation < 0 and req.member_id == UNKNOWN_MEMBER_ID and req.group_instance_id is None
        )
        if group is None:
            if generation >= 0:
                raise GroupCoordinatorError(E.ILLEGAL_GENERATION, "group not found")
            group = ClassicGroup(req.group_id)
            self.ctx.groups[req.group_id] = group
        if isinstance(group, ConsumerGroup):
            if generation < 0 and not group.members:
                return
            committed = (
                (p.topic, p.partition) for p in req.partitions if not self._metadata_too_large(p)
            )
            error = group.commit_error(req.member_id, generation, committed)
            if error is not E.NONE:
                raise GroupCoordinatorError(error)
            return
        if group.is_in(S.DEAD):
            raise GroupCoordinatorError(E.COORDINATOR_NOT_AVAILABLE)
        if generation < 0 and group.is_in(S.EMPTY):
            return
        if not simple:
            validate_member(group, req.member_id, req.group_instance_id)
            if generation != group.generation_id:
                raise GroupCoordinatorError(E.ILLEGAL_GENERATION)
        else:
            raise GroupCoordinatorError(E.UNKNOWN_MEMBER_ID, "simple commit to a live group")
        if group.is_in(S.COMPLETING_REBALANCE):
            raise GroupCoordinatorError(E.REBALANCE_IN_PROGRESS)
        classic_member = group.members[req.member_id]
        classic_member.heartbeat_deadline_ms = now + classic_member.session_timeout_ms

    # -- OffsetFetch / OffsetDelete ------------------------------------------------------

    def fetch(self, req: OffsetFetchRequest) -> OffsetFetchResponse:
        group_offsets = self.offsets.get(req.group_id, {})
        wanted = (
            sorted(group_offsets)
            if req.partitions is None
            else [(tp.topic, tp.partition) for tp in req.partitions]
        )
        out = []
        for topic, partition in wanted:
            o = group_offsets.get((topic, partition))
            if o is None:
                out.append(OffsetFetchPartition(topic, partition, -1, -1, ""))
            else:
                out.append(
                    OffsetFetchPartition(topic, partition, o.offset, o.leader_epoch, o.metadata)
                )
        return OffsetFetchResponse(E.NONE, tuple(out))

    def delete(self, req: OffsetDeleteRequest) -> Reply[OffsetDeleteResponse]:
        group = self.ctx.groups.get(req.group_id)
        if group is None:
            return Reply(OffsetDeleteResponse(E.GROUP_ID_NOT_FOUND))
        subscribed: frozenset[str] | None
        if isinstance(group, ConsumerGroup):
            subscribed = group.subscribed_topics()
        elif group.is_empty:
            subscribed = frozenset()
        else:
            subscribed = group.subscribed_topics()
            if subscribed is None:  # not the consumer protocol: can't tell what it reads
                return Reply(OffsetDeleteResponse(E.NON_EMPTY_GROUP))
        group_offsets = self.offsets.get(req.group_id, {})
        results, records = [], []
        for tp in req.partitions:
            if tp.topic in subscribed:
                results.append(PartitionResult(tp.topic, tp.partition, E.GROUP_SUBSCRIBED_TO_TOPIC))
                continue
            if group_offsets.pop((tp.topic, tp.partition), None) is not None:
                records.append(offset_commit_record(req.group_id, tp.topic, tp.partition, None))
            results.append(PartitionResult(tp.topic, tp.partition, E.NONE))
        return Reply(OffsetDeleteResponse(E.NONE, tuple(results)), tuple(records))

    def delete_all(self, group_id: str) -> list[CoordinatorRecord]:
        """Tombstones for every offset of ``group_id`` (DeleteGroups)."""
        group_offsets = self.offsets.pop(group_id, {})
        return [offset_commit_record(group_id, t, p, None) for t, p in sorted(group_offsets)]

    # -- replay and expiration -----------------------------------------------------------

    def replay(
        self, group_id: str, topic: str, partition: int, value: OffsetCommitValue | None
    ) -> None:
        if value is None:
            group_offsets = self.offsets.get(group_id, {})
            group_offsets.pop((topic, partition), None)
            if not group_offsets:
                self.offsets.pop(group_id, None)
            return
        self.offsets.setdefault(group_id, {})[(topic, partition)] = OffsetAndMetadata(
            value.offset, value.leader_epoch, value.metadata, value.commit_timestamp_ms
        )
        if group_id not in self.ctx.groups:
            self.ctx.groups[group_id] = ClassicGroup(group_id)  # a simple group

    def expire(self, now_ms: int) -> list[CoordinatorRecord]:
        records: list[CoordinatorRecord] = []
        retention = self.ctx.config.offsets_retention_ms
        for group_id, group in list(self.ctx.groups.items()):
            group_offsets = self.offsets.get(group_id, {})
            base_state_ts: int | None = None
            subscribed: frozenset[str] | None = None
            if isinstance(group, ClassicGroup):
                if group.is_in(S.EMPTY):
                    base_state_ts = group.state_timestamp_ms
                else:
                    subscribed = group.subscribed_topics()
                    if subscribed is None:
                        continue  # a live non-consumer group keeps its offsets
            elif not group.is_empty:
                subscribed = group.subscribed_topics()
            for (topic, partition), o in sorted(group_offsets.items()):
                if subscribed is not None and topic in subscribed:
                    continue
                base = o.commit_timestamp_ms if base_state_ts is None else base_state_ts
                if now_ms - base >= retention:
                    del group_offsets[(topic, partition)]
                    records.append(offset_commit_record(group_id, topic, partition, None))
            if not group_offsets:
                self.offsets.pop(group_id, None)
                if group.is_empty and (not isinstance(group, ClassicGroup) or group.is_in(S.EMPTY)):
                    records.extend(self.drop_group(group_id, now_ms))
        return records

    def drop_group(self, group_id: str, now_ms: int) -> list[CoordinatorRecord]:
        """Remove an Empty group: Dead, out of the registry, a GroupMetadata tombstone."""
        group = self.ctx.groups.pop(group_id)
        if isinstance(group, ClassicGroup):
            group.transition_to(S.DEAD, now_ms)
        return [group_metadata_record(group_id, None)]
