"""topic.properties is written once per topic, not once per partition (issue 17.2), and
data dirs written with one copy per partition still open with their settings."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from riverbed.clock import ManualClock
from riverbed.storage import LogConfig, LogManager, faults
from riverbed.storage.topic_properties import PROPERTIES_FILE, TOPIC_CONFIGS_DIR, render

PARTITIONS = 5


def _manager(data_dir: Path) -> LogManager:
    return LogManager(data_dir, clock=ManualClock(), start_background=False)


def _topic_file(data_dir: Path, topic: str) -> Path:
    return data_dir / TOPIC_CONFIGS_DIR / topic / PROPERTIES_FILE


def test_one_write_per_topic_on_create_and_on_change(tmp_path: Path) -> None:
    mgr = _manager(tmp_path)
    with faults.inject("file.fsync", match=PROPERTIES_FILE) as writes:
        for p in range(PARTITIONS):
            mgr.get_or_create("t", p, LogConfig(retention_ms=1000))
        assert writes.hits == 1
        mgr.update_config("t", LogConfig(retention_ms=2000))
        assert writes.hits == 2
        mgr.update_config("t", LogConfig(retention_ms=2000))  # unchanged: nothing written
        assert writes.hits == 2
    assert all(log.config.retention_ms == 2000 for log in mgr.logs().values())
    assert not list(tmp_path.glob(f"t-*/{PROPERTIES_FILE}"))
    mgr.close()
    reopened = _manager(tmp_path)
    assert [log.config.retention_ms for log in reopened.logs().values()] == [2000] * PARTITIONS
    reopened.close()


def test_a_data_dir_with_a_copy_per_partition_opens_and_migrates(tmp_path: Path) -> None:
    legacy = LogConfig(retention_ms=4242, segment_bytes=1 << 20)
    for p in range(PARTITIONS):  # the layout before one file per topic
        (tmp_path / f"t-{p}").mkdir()
        (tmp_path / f"t-{p}" / PROPERTIES_FILE).write_text(render(legacy))
    mgr = _manager(tmp_path)
    assert all(log.config == legacy for log in mgr.logs().values())
    assert not (tmp_path / TOPIC_CONFIGS_DIR).exists()  # opening alone writes nothing
    mgr.update_config("t", LogConfig(retention_ms=7))
    assert not list(tmp_path.glob(f"t-*/{PROPERTIES_FILE}"))  # legacy copies gone
    mgr.close()
    reopened = _manager(tmp_path)
    assert [log.config.retention_ms for log in reopened.logs().values()] == [7] * PARTITIONS
    reopened.close()


def test_a_new_partition_of_a_legacy_topic_migrates_it(tmp_path: Path) -> None:
    legacy = LogConfig(retention_ms=4242)
    (tmp_path / "t-0").mkdir()
    (tmp_path / "t-0" / PROPERTIES_FILE).write_text(render(legacy))
    mgr = _manager(tmp_path)
    mgr.get_or_create("t", 1, legacy)  # CreatePartitions
    assert _topic_file(tmp_path, "t").read_text() == render(legacy)
    assert not (tmp_path / "t-0" / PROPERTIES_FILE).exists()
    mgr.close()


def test_deleting_the_last_partition_removes_the_settings(tmp_path: Path) -> None:
    mgr = _manager(tmp_path)
    for p in range(2):
        mgr.get_or_create("t", p, LogConfig(retention_ms=1000))
    mgr.get_or_create("u", 0, LogConfig())
    mgr.delete_partition("t", 1)
    assert _topic_file(tmp_path, "t").exists()  # partition 0 still uses it
    mgr.remove_detached(mgr.detach_partitions("t", [0]))
    assert not (tmp_path / TOPIC_CONFIGS_DIR / "t").exists()
    assert _topic_file(tmp_path, "u").exists()
    mgr.delete_partition("u", 0)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".lock"]
    mgr.close()


def test_settings_left_by_a_crash_during_a_deletion_go_at_start(tmp_path: Path) -> None:
    mgr = _manager(tmp_path)
    mgr.get_or_create("t", 0, LogConfig(retention_ms=1000))
    mgr.get_or_create("u", 0, LogConfig())
    mgr.detach_partitions("t", [0])  # the process "dies" before remove_detached
    mgr.close()
    reopened = _manager(tmp_path)
    assert sorted(p.name for p in (tmp_path / TOPIC_CONFIGS_DIR).iterdir()) == ["u"]
    # a re-created topic of the same name starts from its own settings
    assert reopened.get_or_create("t", 0, LogConfig()).config == LogConfig()
    assert _topic_file(tmp_path, "t").read_text() == render(LogConfig())
    reopened.close()


def test_unreadable_settings_fall_back_to_the_defaults(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    mgr = _manager(tmp_path)
    mgr.get_or_create("t", 0, LogConfig(retention_ms=1000))
    mgr.close()
    _topic_file(tmp_path, "t").write_bytes(b"\xff\xfe binary \x00")
    with caplog.at_level(logging.WARNING):
        reopened = _manager(tmp_path)
    assert reopened.logs()[("t", 0)].config == reopened.default_config
    assert str(_topic_file(tmp_path, "t")) in caplog.text
    reopened.update_config("t", LogConfig(retention_ms=5))  # rewritable
    reopened.close()


def test_names_that_could_clash_or_overflow(tmp_path: Path) -> None:
    longest = "x" * 249  # Kafka's limit; "<name>.properties" would pass NAME_MAX
    mgr = _manager(tmp_path)
    mgr.get_or_create("a", 0, LogConfig(retention_ms=1))
    mgr.get_or_create("a.tmp", 0, LogConfig(retention_ms=2))  # "a"'s temporary file name
    mgr.get_or_create(longest, 0, LogConfig(retention_ms=3))
    mgr.update_config("a", LogConfig(retention_ms=11))
    mgr.close()
    reopened = _manager(tmp_path)
    got = {topic: log.config.retention_ms for (topic, _p), log in reopened.logs().items()}
    assert got == {"a": 11, "a.tmp": 2, longest: 3}
    reopened.close()
