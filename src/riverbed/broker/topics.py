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

Not thread-safe: called from the broker's event loop only (state-file fsyncs block it
briefly; admin operations are rare).
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from riverbed.broker.state_file import read_json, write_json_atomic
from riverbed.broker.topic_configs import storage_props
from riverbed.config import BrokerConfig
from riverbed.errors import (
    ConfigError,
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    InvalidTopicError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from riverbed.storage.config import LogConfig
from riverbed.storage.log import PartitionLog
from riverbed.storage.manager import LogManager

log = logging.getLogger(__name__)

TOPICS_FILE = "topics.json"
MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_PARTITIONS = 10_000


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
        self._topics: dict[str, Topic] = {}
        self._by_id: dict[uuid.UUID, Topic] = {}
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
        topic = self._topics.get(name)
        if topic is None or not 0 <= partition < topic.partitions:
            raise UnknownTopicOrPartitionError(
                f"this server does not host topic-partition {name}-{partition}"
            )
        plog = self._logs.get(name, partition)
        if plog is None:
            plog = self._logs.get_or_create(name, partition, self.log_config(topic.configs))
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
        """Create a topic (Kafka's CreateTopics semantics; -1 = broker default)."""
        validate_topic_name(name)
        if name in self._topics:
            raise TopicAlreadyExistsError(f"topic {name!r} already exists")
        partitions = self._config.num_partitions if num_partitions == -1 else num_partitions
        if not 1 <= partitions <= MAX_PARTITIONS:
            raise InvalidPartitionsError(f"number of partitions must be >= 1, got {partitions}")
        if replication_factor not in (-1, 1):
            raise InvalidReplicationFactorError(
                f"replication factor {replication_factor} is larger than the 1 available broker"
            )
        overrides = dict(configs or {})
        log_config = self.log_config(overrides)  # ConfigError names the bad key
        topic = Topic(name, uuid.uuid4(), partitions, overrides)
        if validate_only:
            return topic
        self._topics[name] = topic
        self._by_id[topic.topic_id] = topic
        self._save()
        for p in range(partitions):
            self._logs.get_or_create(name, p, log_config)
        log.info("created topic %s with %d partition(s)", name, partitions)
        return topic

    def ensure_topic(self, name: str) -> Topic | None:
        """Auto-create ``name`` when auto.create.topics.enable; None when not allowed."""
        topic = self._topics.get(name)
        if topic is not None:
            return topic
        if not self._config.auto_create_topics_enable:
            return None
        return self.create_topic(name)

    def delete_topic(self, name: str) -> Topic:
        topic = self._topics.get(name)
        if topic is None:
            raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
        if not self._config.delete_topic_enable:
            raise ConfigError("topic deletion is disabled (delete.topic.enable=false)")
        del self._topics[name]
        self._by_id.pop(topic.topic_id, None)
        self._save()
        for p in range(topic.partitions):
            self._logs.delete_partition(name, p)
        log.info("deleted topic %s", name)
        return topic

    def create_partitions(self, name: str, count: int, *, validate_only: bool = False) -> Topic:
        """Grow ``name`` to ``count`` partitions (never shrinks, as in Kafka)."""
        topic = self._topics.get(name)
        if topic is None:
            raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
        if count <= topic.partitions:
            raise InvalidPartitionsError(
                f"topic {name!r} has {topic.partitions} partition(s); "
                f"the new count {count} must be larger"
            )
        if count > MAX_PARTITIONS:
            raise InvalidPartitionsError(f"{count} partitions is over the {MAX_PARTITIONS} limit")
        if validate_only:
            return topic
        old = topic.partitions
        topic.partitions = count
        self._save()
        config = self.log_config(topic.configs)
        for p in range(old, count):
            self._logs.get_or_create(name, p, config)
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
        self._save()
        self._logs.update_config(name, config)

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
        write_json_atomic(
            self._path,
            {
                "version": 1,
                "topics": {
                    t.name: {
                        "topic_id": t.topic_id.hex,
                        "partitions": t.partitions,
                        "configs": t.configs,
                    }
                    for t in self._topics.values()
                },
            },
        )
