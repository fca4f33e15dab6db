"""AddPartitionsToTxn (key 24): add partitions to a producer's transaction.

v0-3 (clients): one transaction, ``v3_and_below_*`` fields, answered per partition.  As
Kafka's ``KafkaApis`` does, partitions of unknown topics are answered
UNKNOWN_TOPIC_OR_PARTITION and then every other partition OPERATION_NOT_ATTEMPTED,
without reaching the coordinator.  v4-5 (partition leaders, KIP-890): a batch of
transactions, some ``verify_only``, one result each.  PRODUCER_FENCED is answered
INVALID_PRODUCER_EPOCH below v2.  A v0-3 request that arrives while the transaction's
previous markers are still being written (a client beginning its next transaction right
after EndTxn) waits for them instead of being answered CONCURRENT_TRANSACTIONS, which
would cost the client a 20-100 ms backoff.
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterable, Mapping

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.deps import TopicNames, TransactionDeps
from riverbed.broker.handlers.txn_common import call, call_after_markers, legacy_code
from riverbed.coordinator.transactions import TV_2
from riverbed.coordinator.transactions import AddPartitionsToTxnRequest as Add
from riverbed.coordinator.transactions import AddPartitionsToTxnResult as Added
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import AddPartitionsToTxnRequest, AddPartitionsToTxnResponse
from riverbed.protocol.topic_partition import TopicPartition

API_KEY = 24
FENCED_VERSION = 2
BATCHED_VERSION = 4
TV2_VERSION = 5

Response = AddPartitionsToTxnResponse
TopicResult = Response.AddPartitionsToTxnTopicResult
PartitionResult = Response.AddPartitionsToTxnPartitionResult


def handle(
    deps: TransactionDeps, ctx: RequestContext, request: AddPartitionsToTxnRequest
) -> AddPartitionsToTxnResponse | Awaitable[AddPartitionsToTxnResponse]:
    version = ctx.api_version
    if version >= BATCHED_VERSION:
        return _batched(deps, version, request)
    tps = _partitions(request.v3_and_below_topics)
    unknown = _unknown(deps.topics, tps)
    if unknown:
        return _v3(
            {
                tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                if tp in unknown
                else ErrorCode.OPERATION_NOT_ATTEMPTED
                for tp in tps
            }
        )
    req = Add(
        request.v3_and_below_transactional_id,
        request.v3_and_below_producer_id,
        request.v3_and_below_producer_epoch,
        frozenset(tps),
    )
    txns = deps.transactions

    def encode(answer: Added) -> AddPartitionsToTxnResponse:
        return _v3(
            {tp: legacy_code(code, version, FENCED_VERSION) for tp, code in answer.errors.items()}
        )

    return call_after_markers(
        txns,
        req.transactional_id,
        lambda now: txns.coordinator.add_partitions_to_txn(req, now),
        lambda answer: ErrorCode.CONCURRENT_TRANSACTIONS in answer.errors.values(),
        encode,
        lambda code: _v3(dict.fromkeys(tps, code)),
    )


def _batched(
    deps: TransactionDeps, version: int, request: AddPartitionsToTxnRequest
) -> AddPartitionsToTxnResponse | Awaitable[AddPartitionsToTxnResponse]:
    reqs = [
        Add(
            t.transactional_id,
            t.producer_id,
            t.producer_epoch,
            frozenset(_partitions(t.topics)),
            t.verify_only,
            TV_2 if version >= TV2_VERSION and not t.verify_only else 0,
        )
        for t in request.transactions
    ]
    txns = deps.transactions

    def encode(answers: list[Added]) -> AddPartitionsToTxnResponse:
        return Response(
            throttle_time_ms=0,
            error_code=ErrorCode.NONE,
            results_by_transaction=[
                Response.AddPartitionsToTxnResult(
                    transactional_id=a.transactional_id, topic_results=_topics(a.errors)
                )
                for a in answers
            ],
        )

    def error(code: ErrorCode) -> AddPartitionsToTxnResponse:
        return Response(throttle_time_ms=0, error_code=code, results_by_transaction=[])

    return call(
        txns, lambda now: txns.coordinator.add_partitions_to_txn_batch(reqs, now), encode, error
    )


def _partitions(
    topics: Iterable[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic],
) -> list[TopicPartition]:
    return [TopicPartition(t.name, p) for t in topics for p in t.partitions]


def _unknown(topics: TopicNames, tps: Iterable[TopicPartition]) -> set[TopicPartition]:
    out = set()
    for tp in tps:
        found = topics.get(tp.topic)
        if found is None or not 0 <= tp.partition < found.partitions:
            out.add(tp)
    return out


def _topics(errors: Mapping[TopicPartition, ErrorCode]) -> list[TopicResult]:
    by_topic: dict[str, list[PartitionResult]] = {}
    for tp, code in sorted(errors.items()):
        by_topic.setdefault(tp.topic, []).append(
            PartitionResult(partition_index=tp.partition, partition_error_code=code)
        )
    return [TopicResult(name=name, results_by_partition=parts) for name, parts in by_topic.items()]


def _v3(errors: dict[TopicPartition, ErrorCode]) -> AddPartitionsToTxnResponse:
    return Response(throttle_time_ms=0, results_by_topic_v3_and_below=_topics(errors))
