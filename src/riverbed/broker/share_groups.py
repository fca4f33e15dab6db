"""The broker's share groups (KIP-932): membership, share sessions, share partitions.

:class:`ShareGroupService` lives on the broker's event loop and owns

* the **membership** coordinator (:class:`~riverbed.coordinator.share_group.
  ShareGroupManager`) and its session-timeout timer (``loop.call_later`` at the earliest
  member deadline); a member that rejoins from scratch has its share session closed and
  the records it holds released; one that times out is fenced but keeps its locks until
  they expire (Kafka 4.4 on the wire); one that leaves keeps its share session until it
  closes it (its final acknowledgements still apply);
* the **share sessions** (:mod:`riverbed.broker.share_sessions`): one closed by its
  member (final epoch) or by its connection dropping (:meth:`ShareGroupService.
  connection_closed`) releases the member's records there, delivery counts kept, as
  Kafka 4.4 does;
* the **share partitions** (:mod:`riverbed.broker.share_partitions`), persisted in
  ``__share_group_state`` and replayed by :meth:`ShareGroupService.load` at start;
* the **dead letters** (:mod:`riverbed.broker.share_dead_letters`, KIP-1191): archived
  records copied to the group's dead-letter topic before their state is persisted.

Event-loop only (not thread-safe).  Memory only for membership and sessions: a restart
forgets them and clients rejoin.  Group configs are saved in ``share_group_configs.json``
(:data:`GROUP_CONFIGS_FILE`) before IncrementalAlterConfigs answers.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from riverbed.broker.share_dead_letters import DeadLetters
from riverbed.broker.share_partitions import Flushes, SharePartitions, SharePartitionsHost
from riverbed.broker.share_sessions import ShareSessionCache
from riverbed.broker.state_file import read_json, write_json_atomic
from riverbed.coordinator.api import LEAVE_GROUP_MEMBER_EPOCH
from riverbed.coordinator.share_config import ShareGroupConfig, share_config_from_props
from riverbed.coordinator.share_group import (
    ShareGroupDescription,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
    ShareGroupManager,
)
from riverbed.errors import ConfigError
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.topic_partition import TopicPartition

if TYPE_CHECKING:
    from riverbed.broker.groups import GroupService

log = logging.getLogger(__name__)

GROUP_CONFIGS_FILE = "share_group_configs.json"
"""Per-group share settings (IncrementalAlterConfigs on GROUP resources): a JSON object
``{group id: {config name: value}}`` in the data dir, replaced atomically."""


class ShareGroupHost(SharePartitionsHost, Protocol):
    """What the service needs of the broker (the Broker satisfies it)."""

    @property
    def groups(self) -> GroupService: ...

    data_dir: Path


class MemberReleaser(Protocol):
    """Who is told that a member is gone (the share partitions release its records)."""

    def release_member(self, group_id: str, member_id: str) -> None: ...


class ShareGroupService:
    """Share group membership and timers on the broker's loop (see the module docstring)."""

    def __init__(
        self,
        host: ShareGroupHost,
        config: ShareGroupConfig | None = None,
    ) -> None:
        self._host = host
        self.config = config or share_config_from_props(host.config.source)
        self._clock = host.clock
        self.manager = ShareGroupManager(self.config, self._partition_count, self._foreign_group)
        self.sessions = ShareSessionCache()
        self.partitions = SharePartitions(host, self.config)
        self.manager.group_overrides = self.partitions.group_config  # share.session.timeout.ms
        self.dead_letters = DeadLetters(host, self.partitions)
        self.partitions.add_archive_listener(self.dead_letters.on_archived)
        self._releasers: list[MemberReleaser] = [self]
        self._timer: asyncio.TimerHandle | None = None
        self._timer_deadline_ms: int | None = None
        self._configs_path = Path(host.data_dir) / GROUP_CONFIGS_FILE
        self._saving = asyncio.Lock()
        self.closed = False

    def _partition_count(self, topic: str) -> int | None:
        found = self._host.topics.get(topic)
        return None if found is None else found.partitions

    def _foreign_group(self, group_id: str) -> str | None:
        group = self._host.groups.coordinator.group(group_id)
        return None if group is None else str(group.protocol_type or "classic")

    async def load(self) -> None:
        """Read the group configs, replay ``__share_group_state`` (if it exists); its
        groups exist again, empty."""
        loop = asyncio.get_running_loop()
        saved = await loop.run_in_executor(None, read_json, self._configs_path)
        for group_id, configs in (saved or {}).items():
            try:
                self.partitions.set_group_config(group_id, configs)
            except (ValueError, ConfigError) as exc:
                log.warning("share group %s: ignoring saved configs: %s", group_id, exc)
        for group_id in await self.partitions.load():
            self.manager.ensure_group(group_id)

    async def save_group_configs(self) -> None:
        """Write every group's share configs to ``share_group_configs.json`` (atomic
        replace, off the loop); writes are serialised and each takes the latest state."""
        async with self._saving:
            snapshot = self.partitions.group_configs()
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(None, write_json_atomic, self._configs_path, snapshot)

    def release_member(self, group_id: str, member_id: str) -> None:
        """A member is gone: its share session closes, its locks are released."""
        self.sessions.close(group_id, member_id)
        self.partitions.release_member(group_id, member_id)

    def connection_closed(self, connection_id: int) -> None:
        """A client disconnected: its share sessions close and release their records
        (Kafka 4 does the same; a SIGKILLed consumer's records come back at once)."""
        for session in self.sessions.close_connection(connection_id):
            self.partitions.release_member_in(
                session.group_id, session.member_id, session.partitions
            )

    def add_releaser(self, releaser: MemberReleaser) -> None:
        self._releasers.append(releaser)

    def is_share_group(self, group_id: str) -> bool:
        return group_id in self.manager.groups

    # -- membership ------------------------------------------------------------------
    def heartbeat(self, req: ShareGroupHeartbeatRequest) -> ShareGroupHeartbeatResponse:
        beat = self.manager.heartbeat(req, self._clock.now_ms())
        if req.member_epoch != LEAVE_GROUP_MEMBER_EPOCH:
            # A rejoin from scratch releases what the old incarnation held.  A leave does
            # not: clients leave, then close their share session with a final
            # ShareAcknowledge (librdkafka), whose acknowledgements must still apply;
            # the session's close (or the locks' expiry) releases the rest.
            for member_id in beat.removed:
                self._released(req.group_id, member_id)
        self._rearm()
        return beat.response

    def describe(self, group_id: str) -> ShareGroupDescription:
        return self.manager.describe(group_id)

    def list_groups(
        self, states_filter: Iterable[str] = (), types_filter: Iterable[str] = ()
    ) -> list[tuple[str, str]]:
        return self.manager.list_groups(states_filter, types_filter)

    def delete_group(self, group_id: str) -> ErrorCode:
        code = self.manager.delete_group(group_id)
        if code == ErrorCode.NONE:
            self.sessions.close_group(group_id)
            self.partitions.delete_group(group_id)
        return code

    def set_group_config(self, group_id: str, configs: Mapping[str, str | None]) -> None:
        """Share settings of one group (IncrementalAlterConfigs on a GROUP resource);
        raises ValueError / ConfigError for an unknown name or a bad value."""
        self.partitions.set_group_config(group_id, configs)

    def group_config(self, group_id: str) -> Mapping[str, str]:
        return self.partitions.group_config(group_id)

    def default_group_config(self) -> Mapping[str, str]:
        """Every per-group share setting with the broker's default."""
        c = self.config
        return {
            "share.record.lock.duration.ms": str(c.record_lock_duration_ms),
            "share.delivery.count.limit": str(c.delivery_count_limit),
            "share.partition.max.record.locks": str(c.partition_max_record_locks),
            "share.auto.offset.reset": "latest",
            "share.isolation.level": "read_uncommitted",
            "errors.deadletterqueue.topic.name": "",  # KIP-1191: no dead-letter topic
            "errors.deadletterqueue.copy.record.enable": "false",
        }

    # -- the surface of the share group offsets APIs ---------------------------------
    def start_offsets(self, group_id: str) -> list[tuple[TopicPartition, int, int]]:
        """``(tp, start offset, delivery complete count)`` of every share partition of
        the group (DescribeShareGroupOffsets; lag = HWM - start - complete count)."""
        return [
            (tp, sp.start_offset, sp.delivery_complete_count)
            for tp, sp in self.partitions.partitions_of(group_id)
        ]

    async def alter_start_offset(
        self, group_id: str, tp: TopicPartition, offset: int
    ) -> tuple[ErrorCode, Flushes]:
        """AlterShareGroupOffsets: restart ``tp`` at ``offset`` (NON_EMPTY_GROUP while the
        group has members, as Kafka requires); the fsyncs to await before answering."""
        group = self.manager.groups.get(group_id)
        if group is not None and group.members:
            return ErrorCode.NON_EMPTY_GROUP, ()
        await self.partitions.ensure_topic()
        self.manager.ensure_group(group_id)
        return ErrorCode.NONE, self.partitions.reset_start_offset(group_id, tp, offset)

    def has_members(self, group_id: str) -> bool | None:
        """None for an unknown share group id, else whether it has members."""
        group = self.manager.groups.get(group_id)
        return None if group is None else bool(group.members)

    async def delete_start_offsets(self, group_id: str, topic: str) -> tuple[ErrorCode, Flushes]:
        """DeleteShareGroupOffsets of one topic: GROUP_ID_NOT_FOUND for an unknown group,
        NON_EMPTY_GROUP while it has members; else the tombstones' fsyncs to await."""
        members = self.has_members(group_id)
        if members is None:
            return ErrorCode.GROUP_ID_NOT_FOUND, ()
        if members:
            return ErrorCode.NON_EMPTY_GROUP, ()
        await self.partitions.ensure_topic()
        return ErrorCode.NONE, self.partitions.delete_topic_state(group_id, topic)

    def _released(self, group_id: str, member_id: str) -> None:
        for releaser in self._releasers:
            try:
                releaser.release_member(group_id, member_id)
            except Exception:
                log.exception("releasing member %s of share group %s failed", member_id, group_id)

    # -- timers ----------------------------------------------------------------------
    def _rearm(self) -> None:
        if self.closed:
            return
        deadline = self.manager.next_deadline_ms()
        if deadline == self._timer_deadline_ms and self._timer is not None:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_deadline_ms = deadline
        if deadline is not None:
            delay_s = max(deadline - self._clock.now_ms(), 0) / 1000
            self._timer = asyncio.get_running_loop().call_later(delay_s, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_deadline_ms = None
        if self.closed:
            return
        for group_id, member_id in self.manager.tick(self._clock.now_ms()):
            # Fenced, but its records stay locked until their locks expire (then they come
            # back with their delivery count kept), as Kafka 4.4 does on the wire
            # (test_share_group_wire.py: the next member sees delivery count 2, after the
            # lock, not at the session timeout).  Its share session closes with its
            # connection or stays unused.
            log.info("share group %s: member %s session timed out", group_id, member_id)
        self._rearm()

    def close(self) -> None:
        self.closed = True
        self.partitions.close()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
