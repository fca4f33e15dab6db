"""The start-up recovery rule (:mod:`riverbed.coordinator.transactions.orphans`): open
transactions in data partitions that the replayed coordinator does not list are aborted,
never committed in part.

Each test plays the broker with :class:`TransactionDriver`, "loses" the records a crash
could lose (an Ongoing record is answered once appended, not durable) by cutting the log
back to a prefix, restarts by replay, and hands the coordinator the open transactions the
data partitions' producer state would hold."""

from __future__ import annotations

from riverbed.coordinator.transactions import (
    OpenTransaction,
    TransactionCoordinatorConfig,
    TransactionResult,
    TransactionState,
)
from riverbed.coordinator.transactions.orphans import DIRECT
from riverbed.coordinator.transactions.transaction_driver import TransactionDriver
from riverbed.protocol.error_codes import ErrorCode as E
from riverbed.protocol.topic_partition import TopicPartition as TP

S = TransactionState
A0, A1, B0 = TP("a", 0), TP("a", 1), TP("b", 0)
TV1 = TransactionCoordinatorConfig(transaction_version=1)


def _crash(d: TransactionDriver, keep: int) -> None:
    """Lose every record after the first ``keep`` (never fsynced), then restart."""
    del d.log[keep:]
    d.restart()


def _orphans(d: TransactionDriver, *open_txns: OpenTransaction) -> None:
    d.take(d.coordinator.abort_unlisted(open_txns, d.now))


def _committed_once(d: TransactionDriver, pid: int, epoch: int = 0, tv: int = 0) -> None:
    d.add("tx", pid, epoch, A0, tv=tv)
    d.end("tx", pid, epoch, commit=True, tv=tv)
    d.write_markers()


def test_ongoing_records_are_answered_without_waiting_and_decisions_wait() -> None:
    d = TransactionDriver(TV1)
    pid = d.init("tx").producer_id
    d.add("tx", pid, 0, A0)
    d.end("tx", pid, 0, commit=True)
    d.write_markers()
    # Empty, Ongoing, PrepareCommit, CompleteCommit
    assert [r.answer_waits for r in d.log] == [True, False, True, True]


def test_a_whole_lost_registration_is_aborted_and_the_producer_fenced_tv1() -> None:
    d = TransactionDriver(TV1)
    pid = d.init("tx").producer_id
    _committed_once(d, pid)
    durable = len(d.log)
    d.add("tx", pid, 0, A0, A1)  # answered; its Ongoing record never reached the disk
    _crash(d, durable)
    meta = d.coordinator.transaction("tx")
    assert meta is not None and meta.state is S.COMPLETE_COMMIT
    _orphans(d, OpenTransaction(A0, pid, 0), OpenTransaction(A1, pid, 0))
    [marker] = d.markers
    assert (marker.result, marker.producer_epoch, marker.partitions) == (
        TransactionResult.ABORT,
        1,
        frozenset({A0, A1}),
    )
    assert d.log[-1].answer_waits  # the PrepareAbort: durable before any marker
    d.write_markers()
    meta = d.coordinator.transaction("tx")
    assert meta is not None and (meta.state, meta.producer_epoch) == (S.COMPLETE_ABORT, 1)
    # the producer's commit of what it never registered durably: refused, nothing written
    before = len(d.log)
    assert d.end("tx", pid, 0, commit=True).error_code is E.PRODUCER_FENCED
    assert len(d.log) == before
    # a new instance with the same transactional id starts cleanly
    again = d.init("tx")
    assert (again.error_code, again.producer_epoch) == (E.NONE, 2)


def test_a_partition_missing_from_an_ongoing_transaction_aborts_all_of_it() -> None:
    # the first AddPartitions (a-0) is durable, the second (b-0) was lost: committing
    # a-0 alone would be a partial commit, so the whole transaction is aborted
    d = TransactionDriver(TV1)
    pid = d.init("tx").producer_id
    d.add("tx", pid, 0, A0)
    durable = len(d.log)
    d.add("tx", pid, 0, B0)
    _crash(d, durable)
    _orphans(d, OpenTransaction(A0, pid, 0), OpenTransaction(B0, pid, 0))
    [marker] = d.markers
    assert (marker.result, marker.partitions) == (TransactionResult.ABORT, frozenset({A0, B0}))
    d.write_markers()
    assert d.end("tx", pid, 0, commit=True).error_code is E.PRODUCER_FENCED


def test_tv2_producer_is_refused_the_commit_then_aborts_and_carries_on() -> None:
    d = TransactionDriver()
    pid = d.init("tx").producer_id
    _committed_once(d, pid, 0, tv=2)  # the epoch is now 1
    durable = len(d.log)
    d.add("tx", pid, 1, A0, tv=2)
    _crash(d, durable)
    _orphans(d, OpenTransaction(A0, pid, 1))
    [marker] = d.markers
    assert (marker.result, marker.producer_epoch) == (TransactionResult.ABORT, 2)
    d.write_markers()
    assert d.end("tx", pid, 1, commit=True, tv=2).error_code is E.INVALID_TXN_STATE
    resp = d.end("tx", pid, 1, commit=False, tv=2)
    assert (resp.error_code, resp.producer_epoch) == (E.NONE, 2)
    assert d.add("tx", pid, 2, A0, tv=2).errors[A0] is E.NONE


def test_listed_transactions_are_left_alone() -> None:
    d = TransactionDriver(TV1)
    pid = d.init("tx").producer_id
    d.add("tx", pid, 0, A0)
    other = d.init("other").producer_id
    d.add("other", other, 0, B0)
    d.end("other", other, 0, commit=True)  # PrepareCommit durable, markers not written
    d.restart()
    assert [m.transactional_id for m in d.markers] == ["other"]  # recover re-sends them
    _orphans(d, OpenTransaction(A0, pid, 0), OpenTransaction(B0, other, 0))
    assert [m.transactional_id for m in d.markers] == ["other"]  # nothing added
    meta = d.coordinator.transaction("tx")
    assert meta is not None and meta.state is S.ONGOING
    d.write_markers()
    assert d.end("tx", pid, 0, commit=True).error_code is E.NONE


def test_tv2_prepared_transaction_lists_its_data_at_the_epoch_before_the_bump() -> None:
    d = TransactionDriver()
    pid = d.init("tx").producer_id
    d.add("tx", pid, 0, A0, tv=2)
    d.end("tx", pid, 0, commit=True, tv=2)  # PrepareCommit at epoch 1
    d.restart()
    _orphans(d, OpenTransaction(A0, pid, 0))
    [marker] = d.markers  # only recover's COMMIT: the data is its own
    assert (marker.result, marker.producer_epoch) == (TransactionResult.COMMIT, 1)


def test_unknown_or_older_producers_get_a_direct_abort_marker() -> None:
    d = TransactionDriver(TV1)
    pid = d.init("tx").producer_id
    d.init("tx")  # epoch 1: epoch 0 is a zombie
    _orphans(d, OpenTransaction(A0, 4242, 3), OpenTransaction(A1, pid, 0))
    direct = sorted((m.partitions, m.producer_id, m.producer_epoch) for m in d.markers)
    assert direct == [(frozenset({A0}), 4242, 3), (frozenset({A1}), pid, 1)]
    assert {m.transactional_id for m in d.markers} == {DIRECT}
    assert {m.result for m in d.markers} == {TransactionResult.ABORT}
    before = len(d.log)
    d.write_markers()  # no coordinator transaction to complete
    assert len(d.log) == before
    meta = d.coordinator.transaction("tx")
    assert meta is not None and (meta.state, meta.producer_epoch) == (S.EMPTY, 1)


def test_nothing_open_nothing_written() -> None:
    d = TransactionDriver(TV1)
    pid = d.init("tx").producer_id
    d.add("tx", pid, 0, A0)  # listed Ongoing, no data yet: the timeout path handles it
    before = len(d.log)
    _orphans(d)
    assert (len(d.log), d.markers) == (before, [])
