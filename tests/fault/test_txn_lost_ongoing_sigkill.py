"""kill -9 of a real ``riverbed broker`` after AddPartitionsToTxn was answered and the
transaction's data was acknowledged, but before the Ongoing record in
``__transaction_state`` was durable (the broker answers it once appended: see
:mod:`riverbed.coordinator.transactions.orphans`).

How the lost record is made: the broker runs under a launcher that blocks every fsync of
``__transaction_state`` once a trigger file exists (failure point ``segment.fsync``), so
the Ongoing record stays in the page cache; after the kill the test cuts that partition's
``.log`` back to its size when the trigger was set (everything up to there was fsynced:
the test waited for the flush mark to cover it) and empties its indexes, as losing the
page cache would.  The data partitions keep the producer's acknowledged, fsynced batches.

After the restart: the partitions' last stable offset reaches their end (the start-up
rule aborted the transaction the coordinator no longer listed), read_committed sees none
of its records, the old producer's commit is refused, and a new producer with the same
``transactional.id`` commits normally.  Without the rule (``_abort_unlisted`` removed)
the LSO stays at the orphan's first offset and the first assertion times out."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from riverbed.coordinator import TRANSACTION_STATE_TOPIC_NAME
from riverbed.coordinator.partitioning import partition_for
from riverbed.coordinator.transactions import TransactionState
from riverbed.coordinator.transactions.transaction_log import decode_key, decode_value
from riverbed.protocol.record_decode import iter_batches_with_records
from riverbed.storage.flush_mark import read_flush_mark
from riverbed.testing import broker_process
from riverbed.testing.broker_process import BrokerProcess, free_port, wait_until
from riverbed.testing.log_contents import batches_end
from riverbed.testing.scenarios.transactions import end_offsets, read_all

TXN_ID = "lost-ongoing"
TOPIC = "k"

LAUNCHER = textwrap.dedent("""
    import os, sys
    from riverbed.storage import faults
    trigger = sys.argv.pop(1)

    def txn_state_after_trigger(path):
        return "__transaction_state" in str(path) and os.path.exists(trigger)

    with faults.inject("segment.fsync", block=True, match=txn_state_after_trigger):
        from riverbed.cli.main import main
        main()
""")


def _producer(bootstrap: str) -> Producer:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": TXN_ID,
            "transaction.timeout.ms": 60_000,  # no timeout may do the rule's work
            "linger.ms": 0,
            "message.timeout.ms": 30_000,
        }
    )
    producer.init_transactions(30)
    return producer


def _produce(producer: Producer, tag: str) -> None:
    for i in range(4):
        producer.produce(TOPIC, value=f"{tag}-{i}".encode(), partition=i % 2)
    assert producer.flush(30) == 0


def _state_dir(data_dir: Path) -> Path:
    return data_dir / f"{TRANSACTION_STATE_TOPIC_NAME}-{partition_for(TXN_ID, 50)}"


def _last_state(segment: Path) -> TransactionState | None:
    state = None
    data = segment.read_bytes()
    data = data[: batches_end(data)]
    for header, records in iter_batches_with_records(data, allow_partial_tail=True):
        if header.is_control:
            continue
        for record in records:
            if record.key is not None and record.value is not None:
                state = decode_value(decode_key(record.key), record.value).state
    return state


def _committed_values(bootstrap: str) -> list[str]:
    """read_committed from the start; waits until both partitions reach their end."""
    records = read_all(bootstrap, TOPIC, "read_committed", timeout_s=60)
    return sorted(value.decode() for _, _, value in records)


@pytest.fixture
def process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    trigger = tmp_path / "block-txn-state-fsync"
    monkeypatch.setattr(
        broker_process, "CLI", [broker_process.CLI[0], "-c", LAUNCHER, str(trigger), "broker"]
    )
    broker = BrokerProcess(tmp_path / "data", free_port(), tmp_path / "broker.log")
    broker.start()
    broker.trigger = trigger  # type: ignore[attr-defined]
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    for fut in admin.create_topics([NewTopic(TOPIC, 2, 1)]).values():
        fut.result(30)
    yield broker
    broker.close()


def test_lost_ongoing_record_is_aborted_at_restart(
    process: BrokerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    bootstrap = process.bootstrap_servers
    producer = _producer(bootstrap)
    producer.begin_transaction()
    _produce(producer, "c")
    producer.commit_transaction(30)
    state_dir = _state_dir(process.data_dir)
    [segment] = sorted(state_dir.glob("*.log"))

    def complete_and_fsynced() -> bool:
        mark = read_flush_mark(state_dir)
        return (
            _last_state(segment) is TransactionState.COMPLETE_COMMIT
            and mark is not None
            and mark.position == batches_end(segment.read_bytes())
        )

    wait_until(complete_and_fsynced, 60, "CompleteCommit appended and fsynced")
    mark = read_flush_mark(state_dir)
    assert mark is not None
    durable_size = mark.position  # the logical end: zeros may follow it in the file
    process.trigger.touch()  # type: ignore[attr-defined]  # from here: no txn-state fsync

    producer.begin_transaction()
    _produce(producer, "lost")  # AddPartitionsToTxn answered, the data acknowledged
    wait_until(
        lambda: _last_state(segment) is TransactionState.ONGOING,
        30,
        "the Ongoing record appended (not durable)",
    )
    process.kill()
    data = segment.read_bytes()
    with open(segment, "r+b") as f:  # the page cache is lost: back to the fsynced bytes
        if batches_end(data) < len(data):  # pre-zeroed space: its zeros were fsynced
            f.seek(durable_size)
            f.write(bytes(len(data) - durable_size))
        else:
            f.truncate(durable_size)
    for index in (*state_dir.glob("*.index"), *state_dir.glob("*.timeindex")):
        index.write_bytes(b"")
    monkeypatch.undo()  # restart as a plain broker
    process.start()

    def stable() -> bool:
        ends = end_offsets(bootstrap, TOPIC, committed=False)
        return end_offsets(bootstrap, TOPIC, committed=True) == ends

    wait_until(stable, 60, "the partitions' LSO to reach their end (orphan aborted)")
    assert _committed_values(bootstrap) == [f"c-{i}" for i in range(4)]

    # the old producer cannot commit what it never registered durably
    with pytest.raises(KafkaException):
        producer.commit_transaction(30)
    assert _committed_values(bootstrap) == [f"c-{i}" for i in range(4)]

    # a new instance with the same transactional.id works
    fresh = _producer(bootstrap)
    fresh.begin_transaction()
    _produce(fresh, "after")
    fresh.commit_transaction(30)
    expected = sorted([f"c-{i}" for i in range(4)] + [f"after-{i}" for i in range(4)])
    wait_until(lambda: _committed_values(bootstrap) == expected, 60, "the new commit visible")
