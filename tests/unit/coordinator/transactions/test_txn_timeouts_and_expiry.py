"""transaction.timeout.ms aborts (with an epoch bump) and transactional.id expiration.

Timeline of the timeout test (ms after the first AddPartitions)::

    0 [add]-------------------- 1000 (timeout) | 1001: tick aborts, epoch 0 -> 1
"""

from __future__ import annotations

from riverbed.coordinator.transactions import TransactionCoordinatorConfig, TransactionState
from riverbed.coordinator.transactions.transaction_driver import TransactionDriver
from riverbed.protocol.error_codes import ErrorCode as E
from riverbed.protocol.topic_partition import TopicPartition as TP

S = TransactionState
A0 = TP("a", 0)
TV1 = TransactionCoordinatorConfig(transaction_version=1)


def test_timed_out_transaction_is_aborted_with_an_epoch_bump_and_the_producer_fenced() -> None:
    d = TransactionDriver(TV1)
    r = d.init("tx", timeout_ms=1000)
    d.add("tx", r.producer_id, 0, A0)
    assert d.coordinator.next_deadline_ms() == d.now + 1001
    d.advance(1000)
    d.tick()
    assert d.markers == []  # not yet: Kafka aborts when start + timeout < now
    d.advance(1)
    d.tick()
    [marker] = d.markers
    assert (marker.result.name, marker.producer_epoch, marker.partitions) == (
        "ABORT",
        1,
        frozenset({A0}),
    )
    d.write_markers()
    meta = d.coordinator.transaction("tx")
    assert meta is not None and (meta.state, meta.producer_epoch) == (S.COMPLETE_ABORT, 1)
    # the producer, still at epoch 0, is fenced
    assert d.end("tx", r.producer_id, 0, commit=True).error_code is E.PRODUCER_FENCED
    assert d.add("tx", r.producer_id, 0, A0).errors[A0] is E.PRODUCER_FENCED


def test_timeout_under_tv2_lets_the_producer_abort_and_carry_on() -> None:
    # KIP-890: the abort bumps the epoch once; the producer's own EndTxn(abort) with its old
    # epoch is a retry of that bump and learns the new epoch; a commit is refused
    d = TransactionDriver()
    r = d.init("tx", timeout_ms=1000)
    d.add("tx", r.producer_id, 0, A0, tv=2)
    d.advance(1001)
    d.tick()
    [marker] = d.markers
    assert marker.producer_epoch == 1
    assert d.end("tx", r.producer_id, 0, commit=False, tv=2).error_code is E.CONCURRENT_TRANSACTIONS
    d.write_markers()
    assert d.end("tx", r.producer_id, 0, commit=True, tv=2).error_code is E.INVALID_TXN_STATE
    assert d.add("tx", r.producer_id, 0, A0, tv=2).errors[A0] is E.PRODUCER_FENCED
    resp = d.end("tx", r.producer_id, 0, commit=False, tv=2)
    assert (resp.error_code, resp.producer_epoch) == (E.NONE, 1)
    assert d.add("tx", r.producer_id, 1, A0, tv=2).errors[A0] is E.NONE


def test_no_timeout_while_completing_or_idle() -> None:
    d = TransactionDriver()
    r = d.init("tx", timeout_ms=1000)
    d.add("tx", r.producer_id, 0, A0)
    d.end("tx", r.producer_id, 0, commit=True)
    d.advance(5000)
    n = len(d.log)
    d.tick()
    assert len(d.log) == n and d.coordinator.transaction("tx").state is S.PREPARE_COMMIT  # type: ignore[union-attr]


def test_idle_transactional_id_expires_with_a_tombstone() -> None:
    d = TransactionDriver(TransactionCoordinatorConfig(transactional_id_expiration_ms=10_000))
    r = d.init("tx")
    d.init("busy")
    d.add("busy", r.producer_id + 1, 0, A0)
    d.advance(9_999)
    d.tick()
    assert d.coordinator.transactional_ids() == ["busy", "tx"]
    d.advance(1)
    d.tick()
    assert d.coordinator.transactional_ids() == ["busy"]  # Ongoing never expires
    assert d.log[-1].transactional_id == "tx" and d.log[-1].value is None
    d.restart()
    assert d.coordinator.transactional_ids() == ["busy"]
    # a new producer starts afresh with a new producer id
    again = d.init("tx")
    assert again.producer_id not in (r.producer_id, r.producer_id + 1)
    assert again.producer_epoch == 0


def test_expiry_deadline_moves_with_each_update() -> None:
    d = TransactionDriver(TransactionCoordinatorConfig(transactional_id_expiration_ms=10_000))
    d.init("tx")
    assert d.coordinator.next_deadline_ms() == d.now + 10_000
    d.advance(6_000)
    d.init("tx")
    assert d.coordinator.next_deadline_ms() == d.now + 10_000
