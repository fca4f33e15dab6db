"""Topics: names, ids, partition counts and per-topic config overrides.

State file ``<data_dir>/topics.json`` (atomic JSON, see :mod:`riverbed.broker.state_file`)::

    {"version": 1,
     "topics": {"<name>": {"topic_id": "<uuid hex>", "partitions": 3,
                           "configs": {"retention.ms": "60000", ...}}}}

Only *explicit* topic overrides are stored; the effective config is the broker's topic
defaults overlaid with them (:meth:`TopicManager.log_config`).  Partition data lives in the
storage layer's ``<topic>-<partition>`` directories.

Changes: one queue of commands, one worker.  Every change -- create, grow, delete,
alter configs -- is checked against the published state on the caller's side, then
queued as a command to :class:`_DiskState` on the single worker thread
(``riverbed-topics``), which applies the commands one at a time in queue order to
``topics.json`` and the partition directories; its result is then *published* on the
event loop by a callback on the command's future -- even if the request that asked is
gone (a closed connection), so what requests see always follows the disk.  The
synchronous API (start-up, tests) wraps the asynchronous one: it runs it to completion
on a private event loop, so there is one path.  The loop never waits on a disk.

Visibility: a created topic (or new partitions, or new configs) becomes visible to every
connection at once, on the loop, after its logs (files) exist; a deleted topic
disappears at once, before its directories go.  A name being created is taken: a second
create is TOPIC_ALREADY_EXISTS; :meth:`TopicManager.ensure_topic_async` waits for it,
Metadata's :meth:`TopicManager.begin_auto_create` leaves it be.  Commands reach the disk in
queue order, so a delete and a re-create of one name do too, and a grow queued before a
delete is deleted with the rest.  Requests on one connection see each change in
request order through :class:`~riverbed.broker.barrier.Barrier`.

Crash behaviour: ``topics.json`` is the source of truth and is written *before* logs are
created and *before* logs are deleted.  A delete renames every partition directory to
``<topic>-<p>.<hex>-delete`` before releasing and removing any
(:meth:`LogManager.detach_partitions`).  On start, ``-delete`` directories are removed,
partitions named in the file but missing on disk are created empty, and partition
directories of topics no longer in the file (a crash half-way through a delete) are
deleted.

Threads: :class:`TopicManager` is event-loop state (not thread-safe); :class:`_DiskState`
is touched only by the worker (and by the constructor, before the worker exists); they
share no mutable object.  ``partition_log`` answers from a cache on the loop, never taking
the storage layer's lock (which the worker creating partitions may hold).
"""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from collections.abc import Callable, Coroutine, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from riverbed.broker.config import BrokerConfig
from riverbed.broker.state_file import read_json, write_json_atomic
from riverbed.broker.topic_configs import storage_props
from riverbed.errors import (
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    InvalidTopicError,
    RiverbedError,
    TopicAlreadyExistsError,
    TopicDeletionDisabledError,
    TopicPolicyViolationError,
    UnknownTopicOrPartitionError,
)
from riverbed.storage.config import LogConfig
from riverbed.storage.log import PartitionLog
from riverbed.storage.manager import DetachedPartition, LogManager

log = logging.getLogger(__name__)

TOPICS_FILE = "topics.json"
MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
"""Kafka's internal topics (``Topic.INTERNAL_TOPICS``): Metadata lists them with
``is_internal``; they cannot be deleted, grown, or have records deleted."""
T = TypeVar("T")
R = TypeVar("R")
ConfigChange = Callable[[dict[str, str]], dict[str, str]]
"""New overrides from the current ones (AlterConfigs: replace; incremental: edit)."""


def is_internal_topic(name: str) -> bool:
    return name in INTERNAL_TOPICS


@dataclass(slots=True)
class Topic:
    """One topic's metadata (mutable only through :class:`TopicManager`)."""

    name: str
    topic_id: uuid.UUID
    partitions: int
    configs: dict[str, str] = field(default_factory=dict)

    def copy(self) -> Topic:
        return replace(self, configs=dict(self.configs))


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


@dataclass(slots=True)
class _Creation:
    """A name taken by a creation not yet visible: its partition count (for the cap) and
    the future an auto-create of the same name waits on."""

    partitions: int
    done: asyncio.Future[Topic]


class _DiskState:
    """What ``topics.json`` and the partition directories say, and the commands that
    change them.  Only the worker thread calls the commands, one at a time, in queue
    order; each saves the whole file before touching directories."""

    def __init__(
        self, path: Path, logs: LogManager, log_config: Callable[[Mapping[str, str]], LogConfig]
    ) -> None:
        self._path = path
        self._logs = logs
        self._log_config = log_config
        self.topics: dict[str, Topic] = {}

    def _save(self) -> None:
        write_json_atomic(
            self._path,
            {
                "version": 1,
                "topics": {
                    t.name: {
                        "topic_id": t.topic_id.hex,
                        "partitions": t.partitions,
                        "configs": dict(t.configs),
                    }
                    for t in self.topics.values()
                },
            },
        )

    def create(self, topic: Topic) -> list[PartitionLog]:
        """Save the file with ``topic``, then create its partitions; if that fails, the
        topic is taken out of the file and its partitions removed again."""
        self.topics[topic.name] = topic
        try:
            self._save()
        except BaseException:
            del self.topics[topic.name]
            raise
        config = self._log_config(topic.configs)
        try:
            return self._logs.get_or_create_many(topic.name, range(topic.partitions), config)
        except BaseException:
            del self.topics[topic.name]
            try:
                self._save()
                self.remove(self._logs.detach_partitions(topic.name, range(topic.partitions)))
            except Exception:
                log.exception("undoing the failed creation of %s failed", topic.name)
            raise

    def grow(self, name: str, count: int) -> tuple[int, list[PartitionLog]]:
        """Partitions up to ``count``; returns the first new index and the new logs."""
        topic = self.topics.get(name)
        if topic is None:  # deleted by a command queued before this one
            raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
        old = topic.partitions
        topic.partitions = max(old, count)
        try:
            self._save()
        except BaseException:
            topic.partitions = old
            raise
        config = self._log_config(topic.configs)
        return old, self._logs.get_or_create_many(name, range(old, count), config)

    def delete(self, name: str) -> list[DetachedPartition]:
        """Save the file without ``name``, then rename its directories out of the way
        (every partition on disk, including grows queued before the delete)."""
        topic = self.topics.pop(name)
        self._save()
        return self._logs.detach_partitions(name, range(topic.partitions))

    def remove(self, detached: list[DetachedPartition]) -> None:
        self._logs.remove_detached(detached)

    def alter_configs(self, name: str, change: ConfigChange) -> dict[str, str]:
        """Apply ``change`` to the current overrides (ConfigError names a bad key),
        save, then rewrite the topic's ``topic.properties`` and each log's settings."""
        topic = self.topics.get(name)
        if topic is None:
            raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
        overrides = change(dict(topic.configs))
        config = self._log_config(overrides)
        old, topic.configs = topic.configs, dict(overrides)
        try:
            self._save()
        except BaseException:
            topic.configs = old
            raise
        self._logs.update_config(name, config)
        return dict(overrides)


class TopicManager:
    """Owns topic metadata and maps (topic, partition) to the storage layer's logs."""

    def __init__(self, data_dir: Path, logs: LogManager, config: BrokerConfig) -> None:
        self._logs = logs
        self._config = config
        self.default_log_config: LogConfig = LogConfig.from_kafka_props(
            storage_props(config.topic_defaults), LogConfig()
        )
        self._disk = _DiskState(data_dir / TOPICS_FILE, logs, self.log_config)
        self._topics: dict[str, Topic] = {}  # published: what requests see
        self._by_id: dict[uuid.UUID, Topic] = {}
        self._creating: dict[str, _Creation] = {}  # names taken, not yet visible
        self._growing: dict[str, int] = {}  # partition count a queued grow will reach
        self._plogs: dict[tuple[str, int], PartitionLog] = {}
        self._auto_creations: set[asyncio.Future[Any]] = set()  # begin_auto_create's, held
        self._worker: ThreadPoolExecutor | None = None
        self._load(data_dir / TOPICS_FILE)

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

    # -- changes (event loop) --------------------------------------------------------
    async def create_topic_async(
        self,
        name: str,
        num_partitions: int = -1,
        replication_factor: int = -1,
        configs: Mapping[str, str] | None = None,
        *,
        validate_only: bool = False,
    ) -> Topic:
        """Create a topic (Kafka's CreateTopics semantics; -1 = broker default); it is
        visible to every request once this returns."""
        topic = self._check_create(name, num_partitions, replication_factor, configs)
        if validate_only:
            return topic
        return await self._begin_create(topic)

    def begin_auto_create(
        self, name: str, create: Callable[[], Coroutine[Any, Any, object]] | None = None
    ) -> bool:
        """Start creating ``name`` in the background, as Kafka's AutoTopicCreationManager
        does for Metadata: nothing waits for it, the asker learns of the topic by asking
        again.  ``create`` makes it instead of a plain default topic (the coordinators'
        internal topics, with their own partition counts and configs; they share one
        creation between callers).  Returns whether a creation started: not when
        ``auto.create.topics.enable`` is false, the topic exists or is being created, or
        it cannot be created (the partition cap, the name); a creation that fails later
        (disk, a concurrent CreateTopics) is logged, as Kafka's controller answer is."""
        if (
            not self._config.auto_create_topics_enable
            or name in self._topics
            or name in self._creating
        ):
            return False
        try:
            if create is not None:
                started: asyncio.Future[Any] = asyncio.ensure_future(create())
            else:
                started = self._begin_create(self._check_create(name, -1, -1, None))
        except RiverbedError as exc:
            log.info("not auto-creating topic %s: %s", name, exc)
            return False
        self._auto_creations.add(started)
        started.add_done_callback(partial(self._auto_created, name))
        return True

    def _auto_created(self, name: str, done: asyncio.Future[Any]) -> None:
        self._auto_creations.discard(done)
        if done.cancelled():
            return
        exc = done.exception()
        if exc is not None:
            log.info("auto-creation of topic %s failed: %s", name, exc)

    def _begin_create(self, topic: Topic) -> asyncio.Future[Topic]:
        """Take ``topic``'s name and queue its creation (checked by :meth:`_check_create`)."""
        name = topic.name
        done: asyncio.Future[Topic] = asyncio.get_running_loop().create_future()
        self._creating[name] = _Creation(topic.partitions, done)

        def publish(created: asyncio.Future[list[PartitionLog]]) -> Topic:
            del self._creating[name]
            try:
                plogs = created.result()
            except BaseException as exc:
                done.set_exception(exc)
                done.exception()  # retrieved: the waiters re-raise it, no "never retrieved"
                raise
            self._topics[name] = topic
            self._by_id[topic.topic_id] = topic
            for p, plog in enumerate(plogs):
                self._plogs[(name, p)] = plog
            done.set_result(topic)
            log.info("created topic %s with %d partition(s)", name, topic.partitions)
            return topic

        return self._command(publish, self._disk.create, topic.copy())

    async def ensure_topic_async(self, name: str) -> Topic | None:
        """Auto-create ``name`` when auto.create.topics.enable (None when not allowed);
        waits for a creation already under way."""
        topic = self._topics.get(name)
        if topic is not None:
            return topic
        pending = self._creating.get(name)
        if pending is not None:
            return await asyncio.shield(pending.done)
        if not self._config.auto_create_topics_enable:
            return None
        return await self.create_topic_async(name)

    async def create_partitions_async(
        self, name: str, count: int, *, validate_only: bool = False
    ) -> Topic:
        """Grow ``name`` to ``count`` partitions (never shrinks, as in Kafka)."""
        topic = self._check_grow(name, count)
        if validate_only:
            return topic
        self._growing[name] = count

        def publish(grown: asyncio.Future[tuple[int, list[PartitionLog]]]) -> Topic:
            if self._growing.get(name) == count:
                del self._growing[name]
            first, plogs = grown.result()
            if self._topics.get(name) is topic:  # not deleted meanwhile
                for i, plog in enumerate(plogs):
                    self._plogs[(name, first + i)] = plog
                topic.partitions = max(topic.partitions, count)
            return topic

        return await self._command(publish, self._disk.grow, name, count)

    def begin_delete_topic(self, name: str) -> asyncio.Future[Topic]:
        """Delete ``name``: gone for every request now (errors raise now); the future
        completes once ``topics.json`` no longer lists it and its directories are renamed
        out of the way; closing and removing them follows on the worker."""
        topic = self._check_delete(name)
        del self._topics[name]
        self._by_id.pop(topic.topic_id, None)
        self._growing.pop(name, None)
        for key in [k for k in self._plogs if k[0] == name]:
            del self._plogs[key]

        def publish(deleted: asyncio.Future[list[DetachedPartition]]) -> Topic:
            detached = deleted.result()
            self._executor().submit(self._disk.remove, detached)  # in the background
            log.info("deleted topic %s", name)
            return topic

        return self._command(publish, self._disk.delete, name)

    async def alter_configs_async(
        self, name: str, change: ConfigChange, *, validate_only: bool = False
    ) -> dict[str, str]:
        """Set ``name``'s explicit overrides to ``change(current)``; the new settings are
        in every partition log, and visible, once this returns."""
        topic = self._topics.get(name)
        if topic is None:
            raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
        if validate_only:
            overrides = change(dict(topic.configs))
            self.log_config(overrides)  # ConfigError names the bad key
            return overrides

        def publish(altered: asyncio.Future[dict[str, str]]) -> dict[str, str]:
            overrides = altered.result()
            if self._topics.get(name) is topic:
                topic.configs = dict(overrides)
            return overrides

        return await self._command(publish, self._disk.alter_configs, name, change)

    def close(self) -> None:
        """Wait for the queued commands, then stop the worker (broker stop)."""
        if self._worker is not None:
            self._worker.shutdown(wait=True)
            self._worker = None

    # -- the synchronous API: the asynchronous one, run to completion ------------------
    def create_topic(
        self,
        name: str,
        num_partitions: int = -1,
        replication_factor: int = -1,
        configs: Mapping[str, str] | None = None,
        *,
        validate_only: bool = False,
    ) -> Topic:
        return _wait(
            self.create_topic_async(
                name, num_partitions, replication_factor, configs, validate_only=validate_only
            )
        )

    def ensure_topic(self, name: str) -> Topic | None:
        return _wait(self.ensure_topic_async(name))

    def create_partitions(self, name: str, count: int, *, validate_only: bool = False) -> Topic:
        return _wait(self.create_partitions_async(name, count, validate_only=validate_only))

    def delete_topic(self, name: str) -> Topic:
        """Delete ``name`` and wait until its directories are gone too."""

        async def delete() -> Topic:
            topic = await self.begin_delete_topic(name)
            await self._queue(lambda: None)  # the removal was queued before this
            return topic

        return _wait(delete())

    def set_configs(
        self, name: str, overrides: Mapping[str, str], *, validate_only: bool = False
    ) -> None:
        """Replace ``name``'s explicit overrides."""
        new = dict(overrides)
        _wait(self.alter_configs_async(name, lambda _old: new, validate_only=validate_only))

    # -- checks (caller's side, against the published state) ---------------------------
    def _check_create(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        configs: Mapping[str, str] | None,
    ) -> Topic:
        validate_topic_name(name)
        if name in self._topics or name in self._creating:
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
        self.log_config(overrides)  # ConfigError names the bad key
        return Topic(name, uuid.uuid4(), partitions, overrides)

    def _check_grow(self, name: str, count: int) -> Topic:
        topic = self._topics.get(name)
        if topic is None:
            raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
        if is_internal_topic(name):
            # Kafka allows it, but group and transaction coordinators map ids to
            # partitions by hashing modulo the count: growing it moves their state.
            raise TopicPolicyViolationError(
                f"topic {name!r} is internal; its partition count cannot be changed"
            )
        current = self._growing.get(name, topic.partitions)
        if count <= current:
            raise InvalidPartitionsError(
                f"topic {name!r} has {current} partition(s); the new count {count} must be larger"
            )
        self._check_partition_cap(count - current, f"growing topic {name!r}")
        return topic

    def _check_partition_cap(self, adding: int, doing: str) -> None:
        """Refuse ``adding`` partitions past ``max.broker.partitions`` (counting the
        ones being created): POLICY_VIOLATION with the numbers, as Kafka's own
        partitions-per-request limit answers."""
        cap = self._config.max_broker_partitions
        hosted = sum(self._growing.get(t.name, t.partitions) for t in self._topics.values())
        hosted += sum(c.partitions for c in self._creating.values())
        if hosted + adding > cap:
            raise TopicPolicyViolationError(
                f"{doing} adds {adding} partition(s) to the {hosted} this broker hosts, "
                f"over its limit of {cap} (max.broker.partitions)"
            )

    def _check_delete(self, name: str) -> Topic:
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
        return topic

    # -- the queue -------------------------------------------------------------------
    def _command(
        self, publish: Callable[[asyncio.Future[T]], R], command: Callable[..., T], *args: Any
    ) -> asyncio.Future[R]:
        """Queue ``command(*args)`` for the worker; when it has run, ``publish`` gets its
        future on the loop -- whatever became of the request that asked (a closed
        connection cancels only the returned future), so the published state always
        follows the disk.  The returned future has what ``publish`` returns or raises."""
        outcome: asyncio.Future[R] = asyncio.get_running_loop().create_future()

        def settle(ran: asyncio.Future[T]) -> None:
            try:
                result = publish(ran)
            except BaseException as exc:
                if not outcome.cancelled():
                    outcome.set_exception(exc)
                return
            if not outcome.cancelled():
                outcome.set_result(result)

        self._queue(command, *args).add_done_callback(settle)
        return outcome

    def _queue(self, command: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """Queue ``command(*args)`` for the worker; commands run one at a time in queue
        order.  The future completes on the loop."""
        return asyncio.get_running_loop().run_in_executor(self._executor(), command, *args)

    def _executor(self) -> ThreadPoolExecutor:
        if self._worker is None:
            self._worker = ThreadPoolExecutor(1, thread_name_prefix="riverbed-topics")
        return self._worker

    # -- start-up --------------------------------------------------------------------
    def _load(self, path: Path) -> None:
        state = read_json(path)
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
                self._disk.topics[name] = topic.copy()
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


def _wait(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` to completion on a private event loop (the synchronous API).
    Never on an event loop's thread: there, await the ``*_async`` form."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    coroutine.close()
    raise RuntimeError("synchronous TopicManager call on an event loop: await the *_async form")
