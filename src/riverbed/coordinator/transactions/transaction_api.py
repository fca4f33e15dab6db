"""Request and response values of the transaction coordinator's handlers, and marker requests.

The coordinator's own frozen values, not wire messages: a broker adapter decodes a Kafka
request (any version), builds one of these, calls the handler and encodes the answer for
the version it speaks.  What depends on the request version is passed explicitly:
``transaction_version`` is the client's transaction version (2 for EndTxn v5+ and for a
KIP-890 part 2 implicit AddPartitions, else 0 or 1), as Kafka's ``KafkaApis`` derives it.
``-1`` is Kafka's NO_PRODUCER_ID / NO_PRODUCER_EPOCH.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.topic_partition import TopicPartition

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_PRODUCER_EPOCH = 32_767
"""``Short.MaxValue``: never handed to a client, kept so the coordinator can always fence."""


class TransactionResult(Enum):
    """What a marker says (Kafka's ``TransactionResult``; the control record type)."""

    ABORT = 0
    COMMIT = 1


# -- InitProducerId -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class InitProducerIdRequest:
    transactional_id: str | None
    """None: an idempotent producer (a fresh producer id, epoch 0, nothing stored)."""
    transaction_timeout_ms: int
    producer_id: int = NO_PRODUCER_ID
    """v3+: the producer's current id and epoch when it re-initializes (KIP-360)."""
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True, slots=True)
class InitProducerIdResponse:
    error_code: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


# -- AddPartitionsToTxn / AddOffsetsToTxn ---------------------------------------------


@dataclass(frozen=True, slots=True)
class AddPartitionsToTxnRequest:
    """One transaction of an AddPartitionsToTxn request (v0-3: the only one; v4+: one of
    a batch, sent by partition leaders, possibly ``verify_only``)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    partitions: frozenset[TopicPartition]
    verify_only: bool = False
    transaction_version: int = 0


@dataclass(frozen=True, slots=True)
class AddPartitionsToTxnResult:
    """Per-partition error codes of one transaction (v0-3 answer one code for all)."""

    transactional_id: str
    errors: Mapping[TopicPartition, ErrorCode]


@dataclass(frozen=True, slots=True)
class AddOffsetsToTxnRequest:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    group_id: str


@dataclass(frozen=True, slots=True)
class AddOffsetsToTxnResponse:
    error_code: ErrorCode


# -- EndTxn ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EndTxnRequest:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    committed: bool
    transaction_version: int = 0
    """2 (EndTxn v5+): the epoch is bumped and returned; 0/1: it is not."""


@dataclass(frozen=True, slots=True)
class EndTxnResponse:
    error_code: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    """v5+: the producer id and epoch the producer must use next (transaction version 2)."""
    producer_epoch: int = NO_PRODUCER_EPOCH


# -- administration -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DescribedTransaction:
    """One entry of a DescribeTransactions response."""

    transactional_id: str
    error_code: ErrorCode
    transaction_state: str = ""
    transaction_timeout_ms: int = 0
    transaction_start_time_ms: int = -1
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    topics: tuple[tuple[str, tuple[int, ...]], ...] = ()
    """(topic, partitions) pairs, sorted."""


@dataclass(frozen=True, slots=True)
class ListTransactionsRequest:
    state_filters: tuple[str, ...] = ()
    producer_id_filters: tuple[int, ...] = ()
    duration_filter_ms: int = -1
    """v1+: only transactions running longer than this (< 0: all)."""
    transactional_id_pattern: str | None = None
    """v2+ (KIP-1152): a regular expression the whole id must match (None or "": all)."""


@dataclass(frozen=True, slots=True)
class ListedTransaction:
    transactional_id: str
    producer_id: int
    transaction_state: str


@dataclass(frozen=True, slots=True)
class ListTransactionsResponse:
    error_code: ErrorCode
    unknown_state_filters: tuple[str, ...] = ()
    transactions: tuple[ListedTransaction, ...] = ()


# -- markers --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MarkerRequest:
    """Control markers the broker must write: a ``result`` control batch with this producer
    id and epoch in each of ``partitions`` (data partitions, and ``__consumer_offsets``
    partitions where the transaction committed offsets) -- Kafka's WriteTxnMarkers entry.

    When every marker is durable, the broker reports it with
    :meth:`TransactionCoordinator.markers_written`, which completes the transaction.
    Writing a marker twice is harmless (a restart re-sends them all, as Kafka does)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    result: TransactionResult
    partitions: frozenset[TopicPartition]
    coordinator_epoch: int
    transaction_version: int
