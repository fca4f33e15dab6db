"""Topic metadata: create/delete/grow/alter, persisted ids, crash leftovers."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from riverbed.broker.config import BrokerConfig
from riverbed.broker.topics import TopicManager
from riverbed.errors import (
    ConfigError,
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    InvalidTopicError,
    StorageError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from riverbed.storage.config import LogConfig
from riverbed.storage.log import PartitionLog
from riverbed.storage.manager import DELETE_SUFFIX, LogManager


@pytest.fixture
def logs(tmp_path: Path) -> Iterator[LogManager]:
    manager = LogManager(tmp_path, start_background=False)
    yield manager
    manager.close()


def test_create_persists_ids_and_partitions(tmp_path: Path, logs: LogManager) -> None:
    topics = TopicManager(tmp_path, logs, BrokerConfig.from_props({"num.partitions": "2"}))
    created = topics.create_topic("orders", configs={"retention.ms": "1000"})
    assert created.partitions == 2
    assert topics.partition_log("orders", 1).config.retention_ms == 1000
    with pytest.raises(UnknownTopicOrPartitionError):
        topics.partition_log("orders", 2)
    logs.close()
    reopened_logs = LogManager(tmp_path, start_background=False)
    try:
        again = TopicManager(tmp_path, reopened_logs, BrokerConfig())
        topic = again.get("orders")
        assert topic is not None and topic.topic_id == created.topic_id
        assert again.by_id(created.topic_id) is topic
        assert topic.configs == {"retention.ms": "1000"}
    finally:
        reopened_logs.close()


@pytest.mark.parametrize("name", ["", ".", "..", "a" * 250, "has space", "slash/x"])
def test_illegal_names(tmp_path: Path, logs: LogManager, name: str) -> None:
    topics = TopicManager(tmp_path, logs, BrokerConfig())
    with pytest.raises(InvalidTopicError):
        topics.create_topic(name)


def test_create_errors_and_validate_only(tmp_path: Path, logs: LogManager) -> None:
    topics = TopicManager(tmp_path, logs, BrokerConfig())
    topics.create_topic("t", 1, validate_only=True)
    assert topics.get("t") is None and not logs.logs()
    topics.create_topic("t", 1)
    with pytest.raises(TopicAlreadyExistsError):
        topics.create_topic("t")
    with pytest.raises(InvalidReplicationFactorError):
        topics.create_topic("r", 1, 3)
    with pytest.raises(InvalidPartitionsError):
        topics.create_topic("p", 0)
    with pytest.raises(ConfigError, match=r"nonsense\.key"):
        topics.create_topic("c", configs={"nonsense.key": "1"})
    with pytest.raises(ConfigError, match=r"min\.insync\.replicas"):
        topics.create_topic("c", configs={"min.insync.replicas": "0"})
    assert topics.get("c") is None


def test_grow_alter_delete(tmp_path: Path, logs: LogManager) -> None:
    topics = TopicManager(tmp_path, logs, BrokerConfig())
    topics.create_topic("t", 1)
    topics.create_partitions("t", 3, validate_only=True)
    assert topics.get("t").partitions == 1  # type: ignore[union-attr]
    topics.create_partitions("t", 3)
    assert ("t", 2) in logs.logs()
    with pytest.raises(InvalidPartitionsError):
        topics.create_partitions("t", 2)
    topics.set_configs("t", {"cleanup.policy": "compact", "compression.type": "zstd"})
    assert topics.partition_log("t", 0).config.cleanup_policy == "compact"
    topics.delete_topic("t")
    assert topics.get("t") is None and not logs.logs()
    with pytest.raises(UnknownTopicOrPartitionError):
        topics.delete_topic("t")


def test_orphan_partitions_are_removed_on_load(tmp_path: Path, logs: LogManager) -> None:
    topics = TopicManager(tmp_path, logs, BrokerConfig())
    topics.create_topic("keep", 1)
    logs.get_or_create("gone", 0, topics.default_log_config)  # as if a delete half-finished
    TopicManager(tmp_path, logs, BrokerConfig())
    assert set(logs.logs()) == {("keep", 0)}


class FailingLogs(LogManager):
    """A LogManager whose creation of partition 1 fails once (a full disk, say)."""

    def __init__(self, data_dir: Path) -> None:
        super().__init__(data_dir, start_background=False)
        self.fail = True

    def get_or_create_many(
        self, topic: str, partitions: Iterable[int], config: LogConfig
    ) -> list[PartitionLog]:
        wanted = list(partitions)
        if 1 in wanted and self.fail:
            self.fail = False
            super().get_or_create_many(topic, [p for p in wanted if p < 1], config)
            raise StorageError("injected: no space left on device")
        return super().get_or_create_many(topic, wanted, config)


def test_a_failed_creation_leaves_nothing_behind(tmp_path: Path) -> None:
    logs = FailingLogs(tmp_path)
    try:
        topics = TopicManager(tmp_path, logs, BrokerConfig())
        with pytest.raises(StorageError):
            topics.create_topic("t", 3)
        assert topics.get("t") is None and not logs.logs()
        assert not [p for p in tmp_path.iterdir() if p.name.startswith("t-")]
        assert TopicManager(tmp_path, logs, BrokerConfig()).get("t") is None  # not in the file
        assert topics.create_topic("t", 3).partitions == 3  # the name is free again
        topics.close()
    finally:
        logs.close()


def test_delete_renames_every_partition_before_closing_any(tmp_path: Path) -> None:
    logs = LogManager(tmp_path, start_background=False)
    try:
        topics = TopicManager(tmp_path, logs, BrokerConfig())
        topics.create_topic("t", 3)
        seen: list[list[str]] = []
        for p in range(3):
            plog = topics.partition_log("t", p)

            def close_for_deletion(plog: PartitionLog = plog) -> None:
                seen.append(sorted(d.name for d in tmp_path.iterdir() if d.name.startswith("t-")))
                raise RuntimeError("injected close failure")

            plog.close_for_deletion = close_for_deletion  # type: ignore[method-assign]
        topics.delete_topic("t")
        # The first close already saw all three directories renamed; no error stopped the
        # others: all three were tried and every directory is gone.
        assert len(seen) == 3 and len(seen[0]) == 3
        assert all(name.endswith(DELETE_SUFFIX) for names in seen for name in names)
        assert not [d for d in tmp_path.iterdir() if d.name.startswith("t-")]
        topics.close()
    finally:
        logs.close()
