"""Topics: names, ids, partition counts and per-topic config overrides.

State file ``<data_dir>/topics.json`` (atomic JSON, see :mod:`riverbed.broker.state_file`)::

    {"version": 1,
     "topics": {"<name>": {"topic_id": "<uuid hex>", "partitions": 3,
                           "configs": {"retention.ms": "60000", ...}}}}

Only *explicit* topic overrides are stored; the effective config is the broker's topic
defaults overlaid with them (:meth:`TopicManager.log_config`).  Partition data lives in the
storage layer's ``<topic>-<partition>`` directories.

Crash behaviour: ``topics.json`` is the source of truth and is written *before* logs are
created and *before* logs are deleted.  On start, partitions named in the file but missing
on disk are created empty, and partition directories of topics no longer in the file
(a crash half-way through a delete) are deleted.

Threads: the metadata is event-loop state (not thread-safe).  The disk work of a topic
change (``topics.json`` and the partition directories: a few fsyncs per partition) runs
on one worker thread, so the loop never waits on a disk (``create_topic_async``,
``ensure_topic_async``, ``create_partitions_async``, ``begin_delete_topic``).  The worker
runs the jobs in submission order, so a delete and a re-create of one name reach the disk
in order; every job writes the *intended* state (:attr:`_intended`: published topics plus
pending changes), so a later job never drops an earlier pending one from the file.
Visibility: a created topic (or new partitions) becomes visible to every connection at
once, on the loop, after its logs exist; a deleted topic disappears at once, before its
directories go.  A name being created is taken: a second create is TOPIC_ALREADY_EXISTS,
an auto-create waits for it.  The synchronous methods do the same work inline (start-up,
tests).  ``partition_log`` answers from a cache on the loop, never taking the storage
layer's lock (which a worker creating partitions may hold).
"""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from riverbed.broker.state_file import read_json, write_json_atomic
from riverbed.broker.topic_configs import storage_props
from riverbed.config import BrokerConfig
from riverbed.errors import (
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    InvalidTopicError,
    TopicAlreadyExistsError,
    TopicDeletionDisabledError,
    TopicPolicyViolationError,
    UnknownTopicOrPartitionError,
)
from riverbed.storage.config import LogConfig
from riverbed.storage.log import PartitionLog
from riverbed.storage.manager import LogManager

log = logging.getLogger(__name__)

TOPICS_FILE = "topics.json"
MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
"""Kafka's internal topics (``Topic.INTERNAL_TOPICS``): Metadata lists them with
``is_internal``; they cannot be deleted, grown, or have records deleted."""
T = TypeVar("T")


def is_internal_topic(name: str) -> bool:
    return name in INTERNAL_TOPICS


@dataclass(slots=True)
class Topic:
    """One topic's metadata (mutable only through :class:`TopicManager`)."""

    name: str
    topic_id: uuid.UUID
    partitions: int
    configs: dict[str, str] = field(default_factory=dict)


def validate_topic_name(name: str) -> None:
    """Kafka's rules: 1-249 chars of ``[a-zA-Z0-9._-]``, not ``.`` or ``..``."""
    if not name or name in (".", ".."):
        raise InvalidTopicError(f"topic name {name!r} is illegal")
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise InvalidTopicError(
            f"topic name is {len(name)} chars long, the limit is {MAX_TOPIC_NAME_LENGTH}"
        )
    if not _LEGAL_NAME.match(name):
        raise InvalidTopicError(f"topic name {name!r} has characters outside [a-zA-Z0-9._-]")


class TopicManager:
    """Owns topic metadata and maps (topic, partition) to the storage layer's logs."""

    def __init__(self, data_dir: Path, logs: LogManager, config: BrokerConfig) -> None:
        self._path = data_dir / TOPICS_FILE
        self._logs = logs
        self._config = config
        self.default_log_config: LogConfig = LogConfig.from_kafka_props(
            storage_props(config.topic_defaults), LogConfig()
        )
        self._topics: dict[str, Topic] = {}  # published: what requests see
        self._by_id: dict[uuid.UUID, Topic] = {}
        self._intended: dict[str, Topic] = {}  # published + pending changes (copies)
        self._creating: dict[str, asyncio.Future[Topic]] = {}
        self._plogs: dict[tuple[str, int], PartitionLog] = {}
        self._worker: ThreadPoolExecutor | None = None
        self._load()

    # -- queries ---------------------------------------------------------------------
    def get(self, name: str) -> Topic | None:
        return self._topics.get(name)

    def by_id(self, topic_id: uuid.UUID) -> Topic | None:
        return self._by_id.get(topic_id)

    def topics(self) -> list[Topic]:
        return list(self._topics.values())

    def partition_log(self, name: str, partition: int) -> PartitionLog:
        """The log of ``name``/``partition``; UnknownTopicOrPartitionError if none."""
        plog = self._plogs.get((name, partition))
        if plog is not None:
            return plog
        topic = self._topics.get(name)
        if topic is None or not 0 <= partition < topic.partitions:
            raise UnknownTopicOrPartitionError(
                f"this server does not host topic-partition {name}-{partition}"
            )
        plog = self._logs.get(name, partition)
        if plog is None:  # only if a directory vanished under us: recreate it empty
            plog = self._logs.get_or_create(name, partition, self.log_config(topic.configs))
        self._plogs[(name, partition)] = plog
        return plog

    def log_config(self, overrides: Mapping[str, str]) -> LogConfig:
        """Effective LogConfig: broker topic defaults overlaid with ``overrides``."""
        if not overrides:
            return self.default_log_config
        return LogConfig.from_kafka_props(storage_props(overrides), self.default_log_config)

    # -- changes ---------------------------------------------------------------------
    def create_topic(
        self,
        name: str,
        num_partitions: int = -1,
        replication_factor: int = -1,
        configs: Mapping[str, str] | None = None,
        *,
        validate_only: bool = False,
    ) -> Topic:
        """Create a topic (Kafka's CreateTopics semantics; -1 = broker default), inline."""
        topic, log_config = self._check_create(name, num_partitions, replication_factor, configs)
        if validate_only:
            return topic
        self._intended[name] = replace(topic)
        try:
            plogs = self._inline(self._create_on_disk, self._snapshot(), topic, 0, log_config)
        except BaseException:
            self._intended.pop(name, None)
            raise
        self._publish(topic, plogs)
        log.info("created topic %s with %d partition(s)", name, topic.partitions)
        return topic

    async def create_topic_async(
        self,
        name: str,
        num_partitions: int = -1,
        replication_factor: int = -1,
        configs: Mapping[str, str] | None = None,
        *,
        validate_only: bool = False,
    ) -> Topic:
        """:meth:`create_topic` with the disk work on the worker thread (see the module
        docstring); the topic is visible once this returns."""
        topic, log_config = self._check_create(name, num_partitions, replication_factor, configs)
        if validate_only:
            return topic
        done: asyncio.Future[Topic] = asyncio.get_running_loop().create_future()
        self._creating[name] = done
        self._intended[name] = replace(topic)
        try:
            plogs = await self._submit(
                self._create_on_disk, self._snapshot(), topic, 0, log_config
            )
        except BaseException as exc:
            self._intended.pop(name, None)
            del self._creating[name]
            done.set_exception(exc)
            done.exception()  # retrieved: the waiters re-raise it, no "never retrieved"
            raise
        self._publish(topic, plogs)
        del self._creating[name]
        done.set_result(topic)
        log.info("created topic %s with %d partition(s)", name, topic.partitions)
        return topic

    def ensure_topic(self, name: str) -> Topic | None:
        """Auto-create ``name`` when auto.create.topics.enable; None when not allowed."""
        topic = self._topics.get(name)
        if topic is not None:
            return topic
        if not self._config.auto_create_topics_enable:
            return None
        return self.create_topic(name)

    async def ensure_topic_async(self, name: str) -> Topic | None:
        """:meth:`ensure_topic` off the loop; waits for a creation already under way."""
        topic = self._topics.get(name)
        if topic is not None:
            return topic
        pending = self._creating.get(name)
        if pending is not None:
            return await asyncio.shield(pending)
        if not self._config.auto_create_topics_enable:
            return None
        return await self.create_topic_async(name)

    def needs_creation(self, name: str) -> bool:
        """Whether :meth:`ensure_topic_async` would create ``name`` or wait for its creation."""
        return name not in self._topics and (
            name in self._creating or self._config.auto_create_topics_enable
        )

    def delete_topic(self, name: str) -> Topic:
        """Delete ``name`` inline (see :meth:`begin_delete_topic`)."""
        topic = self._unpublish(name)
        self._inline(self._delete_on_disk, self._snapshot(), topic)
        log.info("deleted topic %s", name)
        return topic

    def begin_delete_topic(self, name: str) -> asyncio.Future[Topic]:
        """Delete ``name``: gone for every request now (errors raise now); the future
        completes once its files are gone (worker thread)."""
        topic = self._unpublish(name)
        return asyncio.ensure_future(
            self._finish_delete(topic, self._submit(self._delete_on_disk, self._snapshot(), topic))
        )

    async def _finish_delete(self, topic: Topic, on_disk: asyncio.Future[None]) -> Topic:
        await on_disk
        log.info("deleted topic %s", topic.name)
        return topic

    def create_partitions(self, name: str, count: int, *, validate_only: bool = False) -> Topic:
        """Grow ``name`` to ``count`` partitions (never shrinks, as in Kafka), inline."""
        topic, old = self._check_partitions(name, count)
        if validate_only:
            return topic
        self._intended[name].partitions = count
        grown = replace(topic, partitions=count)
        config = self.log_config(topic.configs)
        plogs = self._inline(self._create_on_disk, self._snapshot(), grown, old, config)
        self._grow(topic, count, plogs)
        return topic

    async def create_partitions_async(
        self, name: str, count: int, *, validate_only: bool = False
    ) -> Topic:
        """:meth:`create_partitions` with the disk work on the worker thread."""
        topic, old = self._check_partitions(name, count)
        if validate_only:
            return topic
        self._intended[name].partitions = count
        config = self.log_config(topic.configs)
        try:
            grown = replace(topic, partitions=count)
            plogs = await self._submit(self._create_on_disk, self._snapshot(), grown, old, config)
        except BaseException:
            if name in self._intended:
                self._intended[name].partitions = max(old, topic.partitions)
            raise
        if self._topics.get(name) is topic:  # not deleted meanwhile
            self._grow(topic, count, plogs)
        return topic

    def set_configs(
        self, name: str, overrides: Mapping[str, str], *, validate_only: bool = False
    ) -> None:
        """Replace ``name``'s explicit overrides (AlterConfigs and the incremental form)."""
        topic = self._topics.get(name)
        if topic is None:
            raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
        config = self.log_config(overrides)
        if validate_only:
            return
        topic.configs = dict(overrides)
        self._intended[name].configs = dict(overrides)
        self._save()
        self._logs.update_config(name, config)

    def close(self) -> None:
        """Wait for the worker's queued disk work, then stop it (broker stop)."""
        if self._worker is not None:
            self._worker.shutdown(wait=True)
            self._worker = None

    # -- internals -------------------------------------------------------------------
    def _check_create(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        configs: Mapping[str, str] | None,
    ) -> tuple[Topic, LogConfig]:
        validate_topic_name(name)
        if name in self._intended:
            raise TopicAlreadyExistsError(f"topic {name!r} already exists")
        partitions = self._config.num_partitions if num_partitions == -1 else num_partitions
        if partitions < 1:
            raise InvalidPartitionsError(
                f"number of partitions must be at least 1 (or -1 for the broker's "
                f"num.partitions), got {partitions}"
            )
        if replication_factor == 0 or replication_factor < -1:
            raise InvalidReplicationFactorError(
                f"replication factor must be at least 1 (or -1 for the default), "
                f"got {replication_factor}"
            )
        if replication_factor > 1:
            raise InvalidReplicationFactorError(
                f"replication factor {replication_factor} is larger than the 1 available broker"
            )
        self._check_partition_cap(partitions, f"creating topic {name!r}")
        overrides = dict(configs or {})
        log_config = self.log_config(overrides)  # ConfigError names the bad key
        return Topic(name, uuid.uuid4(), partitions, overrides), log_config

    def _check_partition_cap(self, adding: int, doing: str) -> None:
        """Refuse ``adding`` partitions past ``max.broker.partitions`` (counting the
        ones being created): POLICY_VIOLATION with the numbers, as Kafka's own
        partitions-per-request limit answers."""
        cap = self._config.max_broker_partitions
        hosted = sum(t.partitions for t in self._intended.values())
        if hosted + adding > cap:
            raise TopicPolicyViolationError(
                f"{doing} adds {adding} partition(s) to the {hosted} this broker hosts, "
                f"over its limit of {cap} (max.broker.partitions)"
            )

    def _check_partitions(self, name: str, count: int) -> tuple[Topic, int]:
        topic = self._topics.get(name)
        intended = self._intended.get(name)
        if topic is None or intended is None:
            raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
        if is_internal_topic(name):
            # Kafka allows it, but group and transaction coordinators map ids to
            # partitions by hashing modulo the count: growing it moves their state.
            raise TopicPolicyViolationError(
                f"topic {name!r} is internal; its partition count cannot be changed"
            )
        if count <= intended.partitions:
            raise InvalidPartitionsError(
                f"topic {name!r} has {intended.partitions} partition(s); "
                f"the new count {count} must be larger"
            )
        self._check_partition_cap(count - intended.partitions, f"growing topic {name!r}")
        return topic, intended.partitions

    def _unpublish(self, name: str) -> Topic:
        if not self._config.delete_topic_enable:
            raise TopicDeletionDisabledError(
                "topic deletion is disabled on this broker (delete.topic.enable=false)"
            )
        topic = self._topics.get(name)
        if topic is None:
            raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
        if is_internal_topic(name):
            raise TopicPolicyViolationError(
                f"topic {name!r} is internal (the broker's own state) and cannot be deleted"
            )
        del self._topics[name]
        self._by_id.pop(topic.topic_id, None)
        intended = self._intended.pop(name, None)
        for p in range(topic.partitions):
            self._plogs.pop((name, p), None)
        if intended is not None and intended.partitions > topic.partitions:
            # partitions still being added: the queued delete must remove those too
            return replace(topic, partitions=intended.partitions)
        return topic

    def _publish(self, topic: Topic, plogs: list[PartitionLog]) -> None:
        self._topics[topic.name] = topic
        self._by_id[topic.topic_id] = topic
        for p, plog in enumerate(plogs):
            self._plogs[(topic.name, p)] = plog

    def _grow(self, topic: Topic, count: int, plogs: list[PartitionLog]) -> None:
        old = count - len(plogs)
        for i, plog in enumerate(plogs):
            self._plogs[(topic.name, old + i)] = plog
        topic.partitions = max(topic.partitions, count)

    def _snapshot(self) -> dict[str, Any]:
        """The state file's content for the intended topics (taken on the loop)."""
        return {
            "version": 1,
            "topics": {
                t.name: {
                    "topic_id": t.topic_id.hex,
                    "partitions": t.partitions,
                    "configs": dict(t.configs),
                }
                for t in self._intended.values()
            },
        }

    def _create_on_disk(
        self, snapshot: dict[str, Any], topic: Topic, first: int, config: LogConfig
    ) -> list[PartitionLog]:
        """Save ``snapshot``, then create partitions ``first..`` of ``topic``; any thread."""
        write_json_atomic(self._path, snapshot)
        return [
            self._logs.get_or_create(topic.name, p, config) for p in range(first, topic.partitions)
        ]

    def _delete_on_disk(self, snapshot: dict[str, Any], topic: Topic) -> None:
        """Save ``snapshot`` (without ``topic``), rename all its partition directories out
        of the way (a later re-create of the name starts empty, even after a crash), then
        release and remove them; an error on one partition does not stop the others."""
        write_json_atomic(self._path, snapshot)
        detached = self._logs.detach_partitions(topic.name, range(topic.partitions))
        self._logs.remove_detached(detached)

    def _inline(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` now, on this thread -- or, once the worker exists, behind the
        jobs already queued there (waiting for them), so the file never goes back."""
        if self._worker is None:
            return fn(*args)
        return self._worker.submit(fn, *args).result()

    def _submit(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """Queue ``fn(*args)`` on the worker now.  Jobs run in submission order and each
        carries the snapshot taken when it was queued, so the last one written is the
        newest intended state."""
        if self._worker is None:
            self._worker = ThreadPoolExecutor(1, thread_name_prefix="riverbed-topics")
        return asyncio.get_running_loop().run_in_executor(self._worker, fn, *args)

    # -- persistence -----------------------------------------------------------------
    def _load(self) -> None:
        state = read_json(self._path)
        if isinstance(state, dict):
            for name, entry in state.get("topics", {}).items():
                topic = Topic(
                    name,
                    uuid.UUID(entry["topic_id"]),
                    int(entry["partitions"]),
                    {str(k): str(v) for k, v in entry.get("configs", {}).items()},
                )
                self._topics[name] = topic
                self._by_id[topic.topic_id] = topic
                self._intended[name] = replace(topic, configs=dict(topic.configs))
        on_disk = self._logs.logs()
        for topic_name, partition in list(on_disk):
            owner = self._topics.get(topic_name)
            if owner is None or partition >= owner.partitions:
                log.warning("deleting orphan partition %s-%d", topic_name, partition)
                self._logs.delete_partition(topic_name, partition)
        for topic in list(self._topics.values()):
            config = self.log_config(topic.configs)
            for p in range(topic.partitions):
                if (topic.name, p) not in on_disk:
                    self._logs.get_or_create(topic.name, p, config)
                elif on_disk[(topic.name, p)].config != config:
                    self._logs.update_config(topic.name, config)

    def _save(self) -> None:
        self._inline(write_json_atomic, self._path, self._snapshot())
