"""A log whose deletion began refuses reads as a partition that is gone, not as a failure.

DeleteTopics takes the topic out of what requests see on the event loop, then (on the
topics worker) calls :meth:`PartitionLog.begin_deletion`, renames the directory and
later :meth:`PartitionLog.close_for_deletion`.  A fetch that found the log just before
may still read it, on a worker thread, after any of these steps: it must get
LogDeletedError (UNKNOWN_TOPIC_OR_PARTITION, as Kafka answers), never a storage error
(KAFKA_STORAGE_ERROR, kafka-go's TestReader saw it once), and the log is not taken offline.
A log re-created at the same path starts empty: offset 1 is out of range.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _batches import batch

from riverbed.errors import LogDeletedError, OffsetOutOfRangeError, error_code_for
from riverbed.protocol.error_codes import ErrorCode
from riverbed.storage import LogConfig, PartitionLog


def _two_segment_log(tmp_path: Path) -> PartitionLog:
    """A log with a sealed segment never opened by this process (lazy) and an active one."""
    plog = PartitionLog.open(tmp_path / "t-0", LogConfig())
    plog.append(batch(b"a"))
    plog.roll()
    plog.append(batch(b"b"))
    plog.close()
    return PartitionLog.open(tmp_path / "t-0", LogConfig())


def _refused_as_deleted(plog: PartitionLog) -> None:
    for offset in (0, 1, 2):
        with pytest.raises(LogDeletedError) as raised:
            plog.read(offset, 1 << 20)
        assert error_code_for(raised.value) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    with pytest.raises(LogDeletedError):
        plog.offset_for_timestamp(0)
    with pytest.raises(LogDeletedError):
        plog.append(batch(b"late"))
    assert plog.offline_error is None  # not taken offline


def test_reads_after_each_deletion_step_answer_unknown_partition(tmp_path: Path) -> None:
    plog = _two_segment_log(tmp_path)
    assert plog.read(0, 1 << 20).records  # readable before
    plog.begin_deletion()
    _refused_as_deleted(plog)
    (tmp_path / "t-0").rename(tmp_path / "t-0.x-delete")  # the lazy segment's file moved
    _refused_as_deleted(plog)
    plog.close_for_deletion()
    _refused_as_deleted(plog)


def test_a_log_recreated_at_the_same_path_is_empty(tmp_path: Path) -> None:
    plog = _two_segment_log(tmp_path)
    plog.begin_deletion()
    (tmp_path / "t-0").rename(tmp_path / "t-0.x-delete")
    recreated = PartitionLog.open(tmp_path / "t-0", LogConfig())
    with pytest.raises(OffsetOutOfRangeError):
        recreated.read(1, 1 << 20)
    _refused_as_deleted(plog)
    plog.close_for_deletion()
    assert recreated.read(0, 1 << 20).high_watermark == 0
    recreated.close()


def test_a_produce_waiting_on_the_fsync_is_answered_as_unknown_partition(
    tmp_path: Path,
) -> None:
    # no flusher thread, interval policy: the waiter pends until the deletion answers it
    config = LogConfig(flush_messages=1_000_000, flush_ms=3_600_000)
    plog = PartitionLog.open(tmp_path / "t-0", config)
    waiter = plog.flush_future(plog.append(batch(b"v")).last_offset)
    assert not waiter.done()
    plog.begin_deletion()
    plog.close_for_deletion()
    exc = waiter.exception(timeout=0)
    assert isinstance(exc, LogDeletedError)
    assert error_code_for(exc) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
