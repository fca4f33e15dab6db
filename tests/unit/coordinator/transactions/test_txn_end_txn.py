"""EndTxn under transaction versions 1 and 2: markers, completion, retries, bad input.

Kafka's table for transaction version 2 (TransactionCoordinator.scala), for the states with
no transaction in flight; "retry" is the epoch just before the current one::

                    Abort            Commit
                    retry  current   retry  current
    Empty           PF     EB        PF     ITS
    CompleteAbort   NONE   EB        ITS    ITS
    CompleteCommit  ITS    EB        NONE   ITS
"""

from __future__ import annotations

import pytest

from riverbed.coordinator.transactions import MAX_PRODUCER_EPOCH, TransactionState
from riverbed.coordinator.transactions.transaction_driver import TransactionDriver
from riverbed.protocol.error_codes import ErrorCode as E
from riverbed.protocol.topic_partition import TopicPartition as TP

S = TransactionState
A0, B0 = TP("a", 0), TP("b", 0)


def _ongoing(d: TransactionDriver, tv: int = 0) -> int:
    r = d.init("tx")
    d.add("tx", r.producer_id, r.producer_epoch, A0, B0, tv=tv)
    return r.producer_id


def _state(d: TransactionDriver) -> TransactionState:
    meta = d.coordinator.transaction("tx")
    assert meta is not None
    return meta.state


@pytest.mark.parametrize("commit", [True, False])
def test_tv1_end_prepares_then_markers_complete(commit: bool) -> None:
    d = TransactionDriver()
    pid = _ongoing(d)
    resp = d.end("tx", pid, 0, commit=commit)
    assert (resp.error_code, resp.producer_id, resp.producer_epoch) == (E.NONE, -1, -1)
    assert _state(d) is (S.PREPARE_COMMIT if commit else S.PREPARE_ABORT)
    [marker] = d.markers
    assert (marker.producer_id, marker.producer_epoch, marker.partitions) == (
        pid,
        0,
        frozenset({A0, B0}),
    )
    assert marker.result.name == ("COMMIT" if commit else "ABORT")
    # the same EndTxn while the markers are written: wait; the other result: invalid
    assert d.end("tx", pid, 0, commit=commit).error_code is E.CONCURRENT_TRANSACTIONS
    assert d.end("tx", pid, 0, commit=not commit).error_code is E.INVALID_TXN_STATE
    # markers reported partition by partition: complete after the last
    assert d.coordinator.markers_written("tx", pid, 0, [A0], d.now) == ()
    d.log += d.coordinator.markers_written("tx", pid, 0, [B0], d.now)
    assert _state(d) is (S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT)
    meta = d.coordinator.transaction("tx")
    assert meta is not None and meta.partitions == frozenset() and meta.producer_epoch == 0
    # a retry after completion succeeds without a record; the other result does not
    n = len(d.log)
    assert d.end("tx", pid, 0, commit=commit).error_code is E.NONE
    assert d.end("tx", pid, 0, commit=not commit).error_code is E.INVALID_TXN_STATE
    assert len(d.log) == n


def test_tv1_end_with_no_transaction_is_invalid_txn_state() -> None:
    # Kafka's endTransactionWithTV1: Empty accepts neither result (the Java producer does
    # not send EndTxn when it added no partitions)
    d = TransactionDriver()
    r = d.init("tx")
    assert d.end("tx", r.producer_id, 0, commit=True).error_code is E.INVALID_TXN_STATE
    assert d.end("tx", r.producer_id, 0, commit=False).error_code is E.INVALID_TXN_STATE
    assert len(d.log) == 1


def test_end_bad_input() -> None:
    d = TransactionDriver()
    pid = _ongoing(d)
    n = len(d.log)
    assert d.end("", pid, 0, commit=True).error_code is E.INVALID_REQUEST
    assert d.end("other", pid, 0, commit=True).error_code is E.INVALID_PRODUCER_ID_MAPPING
    assert d.end("tx", pid + 1, 0, commit=True).error_code is E.INVALID_PRODUCER_ID_MAPPING
    assert d.end("tx", pid, 1, commit=True).error_code is E.PRODUCER_FENCED
    assert d.end("tx", pid, 1, commit=True, tv=2).error_code is E.PRODUCER_FENCED
    assert len(d.log) == n and _state(d) is S.ONGOING


def test_tv2_commit_bumps_the_epoch_and_returns_it() -> None:
    d = TransactionDriver()
    pid = _ongoing(d, tv=2)
    resp = d.end("tx", pid, 0, commit=True, tv=2)
    assert (resp.error_code, resp.producer_id, resp.producer_epoch) == (E.NONE, pid, 1)
    [marker] = d.markers
    assert marker.producer_epoch == 1 and marker.transaction_version == 2
    # a retry with the old epoch while completing: CONCURRENT_TRANSACTIONS; the new epoch
    # (the *next* transaction ending early, franz-go's TestTxnEtl): CONCURRENT_TRANSACTIONS
    # too, where Kafka 4.1 fences; any other epoch: fenced; nothing written
    n = len(d.log)
    assert d.end("tx", pid, 0, commit=True, tv=2).error_code is E.CONCURRENT_TRANSACTIONS
    assert d.end("tx", pid, 1, commit=True, tv=2).error_code is E.CONCURRENT_TRANSACTIONS
    assert d.end("tx", pid, 1, commit=False, tv=2).error_code is E.CONCURRENT_TRANSACTIONS
    assert d.add("tx", pid, 1, A0, tv=2).errors[A0] is E.CONCURRENT_TRANSACTIONS
    assert d.end("tx", pid, 2, commit=False, tv=2).error_code is E.PRODUCER_FENCED
    assert len(d.log) == n
    d.write_markers()
    retry = d.end("tx", pid, 0, commit=True, tv=2)
    assert (retry.error_code, retry.producer_epoch) == (E.NONE, 1)
    # the next transaction uses epoch 1
    assert d.add("tx", pid, 1, A0, tv=2).errors[A0] is E.NONE
    assert d.end("tx", pid, 1, commit=False, tv=2).producer_epoch == 2


@pytest.mark.parametrize(
    ("state", "commit", "retry", "expected"),
    [
        (S.EMPTY, False, True, E.PRODUCER_FENCED),
        (S.EMPTY, False, False, "EB"),
        (S.EMPTY, True, True, E.PRODUCER_FENCED),
        (S.EMPTY, True, False, E.INVALID_TXN_STATE),
        (S.COMPLETE_ABORT, False, True, E.NONE),
        (S.COMPLETE_ABORT, False, False, "EB"),
        (S.COMPLETE_ABORT, True, True, E.INVALID_TXN_STATE),
        (S.COMPLETE_ABORT, True, False, E.INVALID_TXN_STATE),
        (S.COMPLETE_COMMIT, False, True, E.INVALID_TXN_STATE),
        (S.COMPLETE_COMMIT, False, False, "EB"),
        (S.COMPLETE_COMMIT, True, True, E.NONE),
        (S.COMPLETE_COMMIT, True, False, E.INVALID_TXN_STATE),
    ],
)
def test_tv2_table_for_states_without_a_transaction(
    state: TransactionState, commit: bool, retry: bool, expected: object
) -> None:
    d = TransactionDriver()
    r = d.init("tx")
    d.init("tx")  # epoch 1, so that "retry" (epoch 0) exists in Empty too
    pid, epoch = r.producer_id, 1
    if state is not S.EMPTY:
        d.add("tx", pid, epoch, A0, tv=2)
        d.end("tx", pid, epoch, commit=state is S.COMPLETE_COMMIT, tv=2)
        d.write_markers()
        epoch += 1
    assert _state(d) is state
    n = len(d.log)
    resp = d.end("tx", pid, epoch - 1 if retry else epoch, commit=commit, tv=2)
    if expected == "EB":
        # an abort of nothing: epoch bump, PrepareAbort and CompleteAbort at once, no markers
        assert (resp.error_code, resp.producer_epoch) == (E.NONE, epoch + 1)
        assert len(d.log) == n + 2 and d.markers == []
        assert _state(d) is S.COMPLETE_ABORT
    else:
        assert resp.error_code is expected
        assert len(d.log) == n


def test_tv2_exhausted_epoch_rotates_the_producer_id_at_completion() -> None:
    d = TransactionDriver()
    pid = _ongoing(d, tv=2)
    meta = d.coordinator.transaction("tx")
    assert meta is not None
    meta.producer_epoch = MAX_PRODUCER_EPOCH - 1
    resp = d.end("tx", pid, MAX_PRODUCER_EPOCH - 1, commit=True, tv=2)
    new_pid = meta.next_producer_id
    assert new_pid not in (-1, pid)
    assert (resp.error_code, resp.producer_id, resp.producer_epoch) == (E.NONE, new_pid, 0)
    [marker] = d.markers
    assert (marker.producer_id, marker.producer_epoch) == (pid, MAX_PRODUCER_EPOCH)
    # the next transaction, with the new producer id, before the markers: it waits
    n = len(d.log)
    assert d.end("tx", new_pid, 0, commit=False, tv=2).error_code is E.CONCURRENT_TRANSACTIONS
    assert d.add("tx", new_pid, 0, A0, tv=2).errors[A0] is E.CONCURRENT_TRANSACTIONS
    init = d.init("tx", producer_id=new_pid, producer_epoch=0)
    assert init.error_code is E.CONCURRENT_TRANSACTIONS
    assert len(d.log) == n
    d.restart()  # the pending rotation survives a restart
    d.write_markers()
    meta = d.coordinator.transaction("tx")
    assert meta is not None
    assert (meta.producer_id, meta.producer_epoch, meta.previous_producer_id) == (new_pid, 0, pid)
    # a retry with the old id and epoch is recognised (retry on overflow)
    retry = d.end("tx", pid, MAX_PRODUCER_EPOCH - 1, commit=True, tv=2)
    assert (retry.error_code, retry.producer_id, retry.producer_epoch) == (E.NONE, new_pid, 0)


def test_stale_marker_reports_are_ignored() -> None:
    d = TransactionDriver()
    pid = _ongoing(d)
    d.end("tx", pid, 0, commit=True)
    assert d.coordinator.markers_written("tx", pid, 5, [A0, B0], d.now) == ()
    assert d.coordinator.markers_written("nope", pid, 0, [A0], d.now) == ()
    assert _state(d) is S.PREPARE_COMMIT
    assert [m.partitions for m in d.coordinator.outstanding_markers()] == [{A0, B0}]
    d.coordinator.markers_written("tx", pid, 0, [A0], d.now)
    assert [m.partitions for m in d.coordinator.outstanding_markers()] == [{B0}]
