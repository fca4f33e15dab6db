"""InitProducerId with a transactional id: epochs, fencing, rotation, bad input."""

from __future__ import annotations

from riverbed.coordinator.transactions import (
    MAX_PRODUCER_EPOCH,
    TransactionCoordinatorConfig,
    TransactionState,
)
from riverbed.coordinator.transactions.transaction_driver import TransactionDriver
from riverbed.protocol.error_codes import ErrorCode as E
from riverbed.protocol.topic_partition import TopicPartition as TP

T0 = TP("orders", 0)


def test_first_init_creates_the_id_at_epoch_0_and_writes_one_empty_record() -> None:
    d = TransactionDriver()
    r = d.init("tx", timeout_ms=30_000)
    assert (r.error_code, r.producer_id, r.producer_epoch) == (E.NONE, 1000, 0)
    assert len(d.log) == 1 and d.log[0].transactional_id == "tx"
    meta = d.coordinator.transaction("tx")
    assert meta is not None
    assert (meta.state, meta.timeout_ms, meta.start_ms) == (TransactionState.EMPTY, 30_000, -1)


def test_each_new_instance_bumps_the_epoch_and_fences_the_last() -> None:
    d = TransactionDriver()
    first = d.init("tx")
    second = d.init("tx")
    assert (second.producer_id, second.producer_epoch) == (first.producer_id, 1)
    # the zombie (epoch 0) can do nothing
    assert d.add("tx", first.producer_id, 0, T0).errors[T0] is E.PRODUCER_FENCED
    assert d.end("tx", first.producer_id, 0, commit=True).error_code is E.PRODUCER_FENCED
    assert d.add_offsets("tx", first.producer_id, 0, "g").error_code is E.PRODUCER_FENCED


def test_init_during_an_ongoing_transaction_aborts_it_first_tv1() -> None:
    d = TransactionDriver(TransactionCoordinatorConfig(transaction_version=1))
    r = d.init("tx")
    d.add("tx", r.producer_id, r.producer_epoch, T0)
    log_before = len(d.log)
    again = d.init("tx")
    assert again.error_code is E.CONCURRENT_TRANSACTIONS
    meta = d.coordinator.transaction("tx")
    assert meta is not None and meta.state is TransactionState.PREPARE_ABORT
    assert meta.producer_epoch == 1  # fenced: epoch + 1, written with the abort
    assert len(d.log) == log_before + 1
    [marker] = d.markers
    assert (marker.producer_epoch, marker.result.name, marker.partitions) == (
        1,
        "ABORT",
        frozenset({T0}),
    )
    # while the markers are written the retry is told to wait again
    assert d.init("tx").error_code is E.CONCURRENT_TRANSACTIONS
    d.write_markers()
    assert d.coordinator.transaction("tx").state is TransactionState.COMPLETE_ABORT  # type: ignore[union-attr]
    retry = d.init("tx")
    assert (retry.error_code, retry.producer_epoch) == (E.NONE, 2)


def test_init_during_an_ongoing_transaction_tv2_bumps_once() -> None:
    d = TransactionDriver()  # transaction.version 2
    r = d.init("tx")
    d.add("tx", r.producer_id, r.producer_epoch, T0, tv=2)
    assert d.init("tx").error_code is E.CONCURRENT_TRANSACTIONS
    [marker] = d.markers
    assert marker.producer_epoch == 1  # as Kafka 4.1.1 (test_txn_kafka_reference.py)
    d.write_markers()
    assert d.init("tx").producer_epoch == 2


def test_reinit_with_the_current_epoch_bumps_and_a_retry_of_it_does_not() -> None:
    d = TransactionDriver()
    r = d.init("tx")
    bumped = d.init("tx", producer_id=r.producer_id, producer_epoch=r.producer_epoch)
    assert (bumped.error_code, bumped.producer_epoch) == (E.NONE, 1)
    retry = d.init("tx", producer_id=r.producer_id, producer_epoch=r.producer_epoch)
    assert (retry.error_code, retry.producer_epoch) == (E.NONE, 1)  # same answer, no bump
    other = d.init("tx", producer_id=r.producer_id, producer_epoch=7)
    assert other.error_code is E.PRODUCER_FENCED


def test_reinit_with_another_producer_id_is_fenced() -> None:
    d = TransactionDriver()
    d.init("tx")
    assert d.init("tx", producer_id=4242, producer_epoch=0).error_code is E.PRODUCER_FENCED


def test_exhausted_epoch_rotates_the_producer_id() -> None:
    d = TransactionDriver()
    r = d.init("tx")
    meta = d.coordinator.transaction("tx")
    assert meta is not None
    meta.producer_epoch = MAX_PRODUCER_EPOCH - 1  # as after 32766 bumps
    rotated = d.init("tx", producer_id=r.producer_id, producer_epoch=MAX_PRODUCER_EPOCH - 1)
    assert rotated.error_code is E.NONE
    assert (rotated.producer_id, rotated.producer_epoch) == (r.producer_id + 1, 0)
    assert meta.previous_producer_id == r.producer_id
    # a retry of the rotation with the old id and exhausted epoch is not fenced
    retry = d.init("tx", producer_id=r.producer_id, producer_epoch=MAX_PRODUCER_EPOCH - 1)
    assert retry.error_code is E.NONE


def test_bad_input_is_refused_with_kafkas_codes_and_nothing_written() -> None:
    d = TransactionDriver(TransactionCoordinatorConfig(transaction_max_timeout_ms=60_000))
    assert d.init("tx", timeout_ms=60_001).error_code is E.INVALID_TRANSACTION_TIMEOUT
    assert d.init("tx", timeout_ms=0).error_code is E.INVALID_TRANSACTION_TIMEOUT
    assert d.init("", timeout_ms=1000).error_code is E.INVALID_REQUEST
    assert d.init("tx", producer_id=5, producer_epoch=-1).error_code is E.INVALID_REQUEST
    assert d.log == [] and d.coordinator.transactional_ids() == []
    assert d.init("tx", timeout_ms=60_000).error_code is E.NONE


def test_idempotent_producer_gets_a_fresh_id_and_nothing_is_stored() -> None:
    d = TransactionDriver()
    a, b = d.init(None), d.init(None)
    assert (a.error_code, a.producer_epoch, b.producer_epoch) == (E.NONE, 0, 0)
    assert a.producer_id != b.producer_id
    assert d.log == []


def test_init_while_markers_are_written_is_concurrent_transactions() -> None:
    d = TransactionDriver()
    r = d.init("tx")
    d.add("tx", r.producer_id, 0, T0)
    d.end("tx", r.producer_id, 0, commit=True)
    n = len(d.log)
    assert d.init("tx").error_code is E.CONCURRENT_TRANSACTIONS
    assert len(d.log) == n
