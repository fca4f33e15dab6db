"""The transaction API adapters against in-memory fakes over a real (unpersisted)
transaction coordinator: version mappings, topic checks, produce verification."""

from __future__ import annotations

import uuid
from typing import Any

from handler_fakes import FakeBroker, answer, ctx

from riverbed.broker.handlers import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    describe_transactions,
    end_txn,
    find_coordinator,
    init_producer_id,
    list_transactions,
    offset_fetch,
    produce,
    txn_offset_commit,
)
from riverbed.broker.transactions import PendingOffset
from riverbed.coordinator import OFFSETS_TOPIC_NAME, OffsetFetchPartition
from riverbed.coordinator import OffsetFetchResponse as Fetched
from riverbed.coordinator.consumer_group import ConsumerGroup
from riverbed.coordinator.testing import CoordinatorDriver
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    DescribeTransactionsRequest,
    EndTxnRequest,
    FindCoordinatorRequest,
    InitProducerIdRequest,
    ListTransactionsRequest,
    OffsetFetchRequest,
    ProduceRequest,
    TxnOffsetCommitRequest,
)
from riverbed.protocol.record_build import build_batch
from riverbed.protocol.topic_partition import TopicPartition


def _init(broker: FakeBroker, txn: str = "tx") -> tuple[int, int]:
    r = answer(
        init_producer_id.handle,
        broker,
        ctx(init_producer_id.API_KEY, 4),
        InitProducerIdRequest(
            transactional_id=txn, transaction_timeout_ms=60_000, producer_id=-1, producer_epoch=-1
        ),
    )
    assert r.error_code == ErrorCode.NONE
    return r.producer_id, r.producer_epoch


def _add(broker: FakeBroker, version: int, pid: int, epoch: int, *tps: tuple[str, int]) -> Any:
    topics: dict[str, list[int]] = {}
    for name, p in tps:
        topics.setdefault(name, []).append(p)
    request = AddPartitionsToTxnRequest(
        transactions=[],
        v3_and_below_transactional_id="tx",
        v3_and_below_producer_id=pid,
        v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[
            AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=n, partitions=ps)
            for n, ps in topics.items()
        ],
    )
    r = answer(
        add_partitions_to_txn.handle, broker, ctx(add_partitions_to_txn.API_KEY, version), request
    )
    return {
        (t.name, p.partition_index): p.partition_error_code
        for t in r.results_by_topic_v3_and_below
        for p in t.results_by_partition
    }


def test_find_coordinator_for_a_transaction_answers_this_node() -> None:
    broker = FakeBroker()
    r = answer(
        find_coordinator.handle,
        broker,
        ctx(find_coordinator.API_KEY, 4),
        FindCoordinatorRequest(key="", key_type=1, coordinator_keys=["a", "b"]),
    )
    assert [(c.key, c.node_id, c.error_code) for c in r.coordinators] == [
        ("a", 7, ErrorCode.NONE),
        ("b", 7, ErrorCode.NONE),
    ]
    broker.transactions.unavailable = True
    r = answer(
        find_coordinator.handle,
        broker,
        ctx(find_coordinator.API_KEY, 3),
        FindCoordinatorRequest(key="a", key_type=1),
    )
    assert (r.error_code, r.node_id) == (ErrorCode.COORDINATOR_NOT_AVAILABLE, -1)


def test_add_partitions_unknown_topic_fails_the_request_without_the_coordinator() -> None:
    broker = FakeBroker()
    broker.topics.add("t", 1)
    pid, epoch = _init(broker)
    assert _add(broker, 3, pid, epoch, ("t", 0), ("nope", 0)) == {
        ("t", 0): ErrorCode.OPERATION_NOT_ATTEMPTED,
        ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    meta = broker.transactions.coordinator.transaction("tx")
    assert meta is not None and meta.partitions == frozenset()
    assert _add(broker, 3, pid, epoch, ("t", 0)) == {("t", 0): ErrorCode.NONE}


def test_fenced_epoch_is_invalid_producer_epoch_for_old_versions() -> None:
    broker = FakeBroker()
    broker.topics.add("t", 1)
    pid, epoch = _init(broker)
    _init(broker)  # a new instance: epoch + 1
    assert _add(broker, 1, pid, epoch, ("t", 0)) == {("t", 0): ErrorCode.INVALID_PRODUCER_EPOCH}
    assert _add(broker, 3, pid, epoch, ("t", 0)) == {("t", 0): ErrorCode.PRODUCER_FENCED}
    for version, code in ((1, ErrorCode.INVALID_PRODUCER_EPOCH), (3, ErrorCode.PRODUCER_FENCED)):
        r = answer(
            end_txn.handle,
            broker,
            ctx(end_txn.API_KEY, version),
            EndTxnRequest(
                transactional_id="tx", producer_id=pid, producer_epoch=epoch, committed=True
            ),
        )
        assert r.error_code == code


def _txn_commit(
    broker: FakeBroker,
    pid: int,
    epoch: int,
    version: int,
    member: str = "",
    generation: int = -1,
    partition: int = 0,
) -> int:
    r = answer(
        txn_offset_commit.handle,
        broker,
        ctx(txn_offset_commit.API_KEY, version),
        TxnOffsetCommitRequest(
            transactional_id="tx",
            group_id="g",
            producer_id=pid,
            producer_epoch=epoch,
            generation_id_or_member_epoch=generation,
            member_id=member,
            group_instance_id=None,
            topics=[
                TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(
                    name="t",
                    topic_id=uuid.UUID(int=0),
                    partitions=[
                        TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(
                            partition_index=partition,
                            committed_offset=5,
                            committed_leader_epoch=-1,
                            committed_metadata="m",
                        )
                    ],
                )
            ],
        ),
    )
    return int(r.topics[0].partitions[0].error_code)


def _add_offsets(broker: FakeBroker, pid: int, epoch: int) -> None:
    r = answer(
        add_offsets_to_txn.handle,
        broker,
        ctx(add_offsets_to_txn.API_KEY, 3),
        AddOffsetsToTxnRequest(
            transactional_id="tx", producer_id=pid, producer_epoch=epoch, group_id="g"
        ),
    )
    assert r.error_code == ErrorCode.NONE


def test_offsets_are_held_for_the_transaction_and_checked() -> None:
    broker = FakeBroker()
    broker.topics.add("t", 1)
    pid, epoch = _init(broker)

    def commit(version: int) -> int:
        return _txn_commit(broker, pid, epoch, version)

    broker.groups.coordinator.replies["group"] = None  # an unknown group: no member check
    assert commit(3) == ErrorCode.INVALID_TXN_STATE  # AddOffsetsToTxn not called yet
    _add_offsets(broker, pid, epoch)
    meta = broker.transactions.coordinator.transaction("tx")
    assert meta is not None and any(tp.topic == OFFSETS_TOPIC_NAME for tp in meta.partitions)
    assert commit(3) == ErrorCode.NONE
    assert [(p, g, o.offset) for p, g, o in broker.transactions.pending] == [(pid, "g", 5)]


def test_a_consumer_group_members_older_epoch_commits_only_what_it_was_assigned_then() -> None:
    """KIP-1251 through TxnOffsetCommit v3+: A owned t-0..3 at epoch 1, kept t-0 and t-1
    when B joined and is at epoch 2 now; B was assigned t-2 and t-3 at epoch 2."""
    broker = FakeBroker()
    broker.topics.add("t", 4)
    pid, epoch = _init(broker)
    _add_offsets(broker, pid, epoch)
    d = CoordinatorDriver(topics={"t": 4})
    d.cg_heartbeat("g", "A", 0, topics=("t",))
    d.cg_heartbeat("g", "B", 0, topics=("t",))
    d.cg_heartbeat("g", "A", 1, owned={"t": frozenset({0, 1, 2, 3})})
    d.cg_heartbeat("g", "A", 1, owned={"t": frozenset({0, 1})})
    d.cg_heartbeat("g", "B", 2)
    group = d.coordinator.group("g")
    assert isinstance(group, ConsumerGroup)
    assert (group.members["A"].member_epoch, group.members["B"].assigned) == (
        2,
        {"t": frozenset({2, 3})},
    )
    broker.groups.coordinator.replies["group"] = group

    def commit(member: str, generation: int, partition: int) -> int:
        return _txn_commit(broker, pid, epoch, 3, member, generation, partition)

    # Kafka 4.4 answers STALE_MEMBER_EPOCH from v6 only; v3-v5: ILLEGAL_GENERATION
    stale = ErrorCode.ILLEGAL_GENERATION
    assert commit("A", 2, 0) == ErrorCode.NONE
    assert commit("A", 1, 0) == ErrorCode.NONE  # t-0 assigned at 1 <= 1 <= 2
    assert commit("A", 1, 2) == stale  # revoked from A
    assert commit("A", 3, 0) == stale  # newer than A's epoch
    assert commit("B", 1, 2) == stale  # assigned to B at 2
    assert commit("Z", 2, 0) == ErrorCode.UNKNOWN_MEMBER_ID
    broker.groups.coordinator.replies["group"] = None  # a group that does not exist
    assert commit("A", 2, 0) == ErrorCode.ILLEGAL_GENERATION
    assert commit("", -1, 0) == ErrorCode.NONE  # a simple commit


def test_describe_and_list_transactions() -> None:
    broker = FakeBroker()
    pid, _ = _init(broker, "tx-a")
    r = answer(
        describe_transactions.handle,
        broker,
        ctx(describe_transactions.API_KEY, 0),
        DescribeTransactionsRequest(transactional_ids=["tx-a", "missing"]),
    )
    assert [
        (s.transactional_id, s.error_code, s.transaction_state, s.producer_id)
        for s in r.transaction_states
    ] == [
        ("tx-a", ErrorCode.NONE, "Empty", pid),
        ("missing", ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, "", -1),
    ]
    r = answer(
        list_transactions.handle,
        broker,
        ctx(list_transactions.API_KEY, 1),
        ListTransactionsRequest(
            state_filters=[],
            producer_id_filters=[],
            duration_filter=-1,
            transactional_id_pattern=None,
        ),
    )
    assert [(t.transactional_id, t.transaction_state) for t in r.transaction_states] == [
        ("tx-a", "Empty")
    ]


def _txn_produce(broker: FakeBroker, version: int) -> Any:
    batch = build_batch(
        [(None, b"v")], producer_id=9, producer_epoch=2, base_sequence=0, is_transactional=True
    )
    request = ProduceRequest(
        transactional_id="tx",
        acks=1,
        timeout_ms=1000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name="t",
                topic_id=uuid.UUID(int=0),
                partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch)],
            )
        ],
    )
    r = answer(produce.handle, broker, ctx(produce.API_KEY, version), request)
    return r.responses[0].partition_responses[0].error_code


def test_transactional_produce_is_verified_with_the_coordinator() -> None:
    broker = FakeBroker()
    broker.topics.add("t", 1)
    broker.transactions.produce_code = ErrorCode.INVALID_TXN_STATE
    assert _txn_produce(broker, 9) == ErrorCode.INVALID_TXN_STATE
    assert broker.topics.logs[("t", 0)].batches == []
    assert broker.transactions.verified == [("tx", 9, 2, [TopicPartition("t", 0)], False)]
    broker.transactions.produce_code = ErrorCode.NONE
    assert _txn_produce(broker, 12) == ErrorCode.NONE
    assert broker.transactions.verified[-1][4] is True  # v12: added implicitly (TV2)
    assert len(broker.topics.logs[("t", 0)].batches) == 1


def test_offset_fetch_require_stable_answers_unstable_for_pending_offsets() -> None:
    broker = FakeBroker()
    broker.topics.add("t", 2)
    broker.groups.coordinator.replies["offset_fetch"] = Fetched(
        ErrorCode.NONE,
        (OffsetFetchPartition("t", 0, 3, -1, ""), OffsetFetchPartition("t", 1, 4, -1, "")),
    )
    broker.transactions.pending.append((9, "g", PendingOffset("g", "t", 1, 8, -1, "")))

    def fetch(require_stable: bool) -> list[tuple[int, int, int]]:
        r = answer(
            offset_fetch.handle,
            broker,
            ctx(offset_fetch.API_KEY, 7),
            OffsetFetchRequest(group_id="g", topics=None, require_stable=require_stable),
        )
        return [
            (p.partition_index, p.committed_offset, p.error_code)
            for t in r.topics
            for p in t.partitions
        ]

    assert fetch(False) == [(0, 3, ErrorCode.NONE), (1, 4, ErrorCode.NONE)]
    assert fetch(True) == [(0, 3, ErrorCode.NONE), (1, -1, ErrorCode.UNSTABLE_OFFSET_COMMIT)]
