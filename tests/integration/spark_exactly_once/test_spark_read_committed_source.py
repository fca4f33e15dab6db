"""The source under ``kafka.isolation.level=read_committed``: planned up to the last stable
offset, never past it, and no record of an aborted transaction read.

Input (per partition, offsets grow to the right)::

    [committed txn][marker][aborted txn][marker][committed txn][marker] ... [open txn -->
                                                                            ^ LSO    ^ HW

No Spark here: the driver-side planner (``OffsetLookup``) and the task-side reader
(``read_offset_range``) are called directly; the Spark-level path is exercised by the
crash tests, whose driver reads the same kind of input with read_committed.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from riverbed.protocol.topic_partition import TopicPartition
from riverbed.spark.offset_lookup import OffsetLookup
from riverbed.spark.partition_reader import read_offset_range
from riverbed.spark.planning import OffsetRange

from .conftest import TransactionalInput, transactional_input


@pytest.fixture(scope="module")
def data(any_cluster: str) -> Iterator[TransactionalInput]:
    made = transactional_input(any_cluster, partitions=2, transactions=6, per_txn=10)
    yield made
    made.close()


def _read(cluster: str, topic: str, level: str) -> tuple[dict[int, int], list[bytes]]:
    config = {"bootstrap.servers": cluster, "isolation.level": level}
    lookup = OffsetLookup(config, 30_000)
    try:
        partitions = [TopicPartition(topic, p) for p in range(2)]
        latest = {tp.partition: o for tp, o in lookup.latest(partitions).items()}
    finally:
        lookup.close()
    values: list[bytes] = []
    for partition, until in latest.items():
        for batch in read_offset_range(
            config,
            OffsetRange(topic, partition, 0, until),
            include_headers=False,
            fail_on_data_loss=True,
            poll_timeout_ms=30_000,
        ):
            values.extend(batch.column("value").to_pylist())
    return latest, values


def test_read_committed_stops_at_lso_and_skips_aborted(
    any_cluster: str, data: TransactionalInput
) -> None:
    stable, values = _read(any_cluster, data.topic, "read_committed")
    high, raw = _read(any_cluster, data.topic, "read_uncommitted")
    # The open transaction holds the LSO below the high watermark in every partition.
    assert all(stable[p] < high[p] for p in stable)
    assert sorted(values) == sorted(v for _, v, _, _ in data.committed)
    assert not set(values) & (data.aborted_values | data.open_values)
    # read_uncommitted (Spark's default) does see the aborted and open records.
    assert data.aborted_values <= set(raw) and data.open_values <= set(raw)


def test_read_committed_range_ending_in_aborted_records_completes(
    any_cluster: str, data: TransactionalInput
) -> None:
    """A range whose tail is an aborted transaction and its marker ends at its until offset
    without waiting for kafkaConsumer.pollTimeoutMs (nothing readable remains)."""
    config = {"bootstrap.servers": any_cluster, "isolation.level": "read_committed"}
    # Transaction 2 (aborted, 5 records per partition) ends just before offset 3 * 6 = 18
    # (two committed transactions of 5 records + marker precede it, then 5 + marker).
    until = 18
    values = [
        v
        for batch in read_offset_range(
            config,
            OffsetRange(data.topic, 0, 0, until),
            include_headers=False,
            fail_on_data_loss=True,
            poll_timeout_ms=5_000,
        )
        for v in batch.column("value").to_pylist()
    ]
    expected = [v for _, v, p, o in data.committed if p == 0 and o < until]
    assert values == expected and len(expected) == 10


def test_range_past_the_lso_fails_naming_the_open_transaction(
    any_cluster: str, data: TransactionalInput
) -> None:
    """A range planned past the LSO (e.g. under read_uncommitted, then resumed with
    read_committed) cannot complete while the transaction is open: the task fails after
    kafkaConsumer.pollTimeoutMs, saying why."""
    high, _ = _read(any_cluster, data.topic, "read_uncommitted")
    config = {"bootstrap.servers": any_cluster, "isolation.level": "read_committed"}
    with pytest.raises(TimeoutError, match="open transaction holds the last stable offset"):
        for _batch in read_offset_range(
            config,
            OffsetRange(data.topic, 0, 0, high[0]),
            include_headers=False,
            fail_on_data_loss=True,
            poll_timeout_ms=2_000,
        ):
            pass
