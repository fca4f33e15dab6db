"""AddPartitionsToTxn (v3 and v4+ batched / verify-only) and AddOffsetsToTxn."""

from __future__ import annotations

from riverbed.coordinator.partitioning import partition_for
from riverbed.coordinator.transactions import AddPartitionsToTxnRequest, TransactionState
from riverbed.coordinator.transactions.transaction_driver import TransactionDriver
from riverbed.protocol.error_codes import ErrorCode as E
from riverbed.protocol.topic_partition import TopicPartition as TP

A0, A1, B0 = TP("a", 0), TP("a", 1), TP("b", 0)


def test_first_add_starts_the_transaction_and_more_partitions_extend_it() -> None:
    d = TransactionDriver()
    r = d.init("tx")
    d.advance(5)
    start = d.now
    assert set(d.add("tx", r.producer_id, 0, A0, B0).errors.values()) == {E.NONE}
    meta = d.coordinator.transaction("tx")
    assert meta is not None
    assert (meta.state, meta.partitions, meta.start_ms) == (
        TransactionState.ONGOING,
        frozenset({A0, B0}),
        start,
    )
    d.advance(5)
    d.add("tx", r.producer_id, 0, A1)
    assert meta.partitions == {A0, A1, B0} and meta.start_ms == start
    assert len(d.log) == 3


def test_adding_partitions_already_in_the_transaction_writes_nothing() -> None:
    d = TransactionDriver()
    r = d.init("tx")
    d.add("tx", r.producer_id, 0, A0, B0)
    n = len(d.log)
    assert d.add("tx", r.producer_id, 0, A0).errors == {A0: E.NONE}
    assert len(d.log) == n


def test_wrong_id_producer_or_epoch() -> None:
    d = TransactionDriver()
    r = d.init("tx")
    assert d.add("nope", r.producer_id, 0, A0).errors[A0] is E.INVALID_PRODUCER_ID_MAPPING
    assert d.add("tx", r.producer_id + 7, 0, A0).errors[A0] is E.INVALID_PRODUCER_ID_MAPPING
    assert d.add("tx", r.producer_id, 3, A0).errors[A0] is E.PRODUCER_FENCED
    assert d.add("", r.producer_id, 0, A0).errors[A0] is E.INVALID_REQUEST
    assert len(d.log) == 1


def test_add_while_completing_is_concurrent_transactions() -> None:
    d = TransactionDriver()
    r = d.init("tx")
    d.add("tx", r.producer_id, 0, A0)
    d.end("tx", r.producer_id, 0, commit=False)
    assert d.add("tx", r.producer_id, 0, B0).errors[B0] is E.CONCURRENT_TRANSACTIONS
    d.write_markers()
    assert d.add("tx", r.producer_id, 0, B0).errors[B0] is E.NONE  # the next transaction


def test_verify_only_checks_membership_without_writing() -> None:
    d = TransactionDriver()
    r = d.init("tx")
    d.add("tx", r.producer_id, 0, A0)
    n = len(d.log)
    result = d.add("tx", r.producer_id, 0, A0, B0, verify_only=True)
    assert result.errors == {A0: E.NONE, B0: E.TRANSACTION_ABORTABLE}
    fenced = d.add("tx", r.producer_id, 9, A0, verify_only=True)
    assert fenced.errors == {A0: E.PRODUCER_FENCED}
    assert len(d.log) == n


def test_batched_v4_answers_each_transaction() -> None:
    d = TransactionDriver()
    r1, r2 = d.init("t1"), d.init("t2")
    reply = d.coordinator.add_partitions_to_txn_batch(
        [
            AddPartitionsToTxnRequest(
                "t1", r1.producer_id, 0, frozenset({A0}), transaction_version=2
            ),
            AddPartitionsToTxnRequest("t2", r2.producer_id, 5, frozenset({B0})),
            AddPartitionsToTxnRequest("t3", 1, 0, frozenset({A1})),
        ],
        d.now,
    )
    assert [r.errors for r in reply.response] == [
        {A0: E.NONE},
        {B0: E.PRODUCER_FENCED},
        {A1: E.INVALID_PRODUCER_ID_MAPPING},
    ]
    assert [rec.transactional_id for rec in reply.records] == ["t1"]


def test_add_offsets_adds_the_groups_consumer_offsets_partition() -> None:
    d = TransactionDriver()
    r = d.init("tx")
    assert d.add_offsets("tx", r.producer_id, 0, "my-group").error_code is E.NONE
    meta = d.coordinator.transaction("tx")
    assert meta is not None
    assert meta.partitions == {TP("__consumer_offsets", partition_for("my-group", 50))}
    d.end("tx", r.producer_id, 0, commit=True)
    [marker] = d.markers
    assert marker.partitions == meta.partitions and marker.result.name == "COMMIT"
    assert d.add_offsets("tx", r.producer_id, 0, "g").error_code is E.CONCURRENT_TRANSACTIONS
