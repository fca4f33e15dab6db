"""A driver for tests: a :class:`TransactionCoordinator` plus the broker's side of the contract.

:class:`TransactionDriver` plays the broker: it keeps every record "appended" (so a test
can replay them, or restart the coordinator from them), keeps the marker requests it was
given until a test writes them (:meth:`write_markers`), hands out producer ids from a
counter and owns a :class:`~riverbed.clock.ManualClock`.  Shipped with the library so the
broker's own tests can reuse it.  Not thread-safe.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from riverbed.clock import ManualClock
from riverbed.coordinator.transactions.transaction_api import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResult,
    EndTxnRequest,
    EndTxnResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    MarkerRequest,
)
from riverbed.coordinator.transactions.transaction_config import TransactionCoordinatorConfig
from riverbed.coordinator.transactions.transaction_context import TxnReply
from riverbed.coordinator.transactions.transaction_coordinator import TransactionCoordinator
from riverbed.coordinator.transactions.transaction_log import TransactionRecord
from riverbed.protocol.topic_partition import TopicPartition

R = TypeVar("R")


class CountingProducerIds:
    """Producer ids 1000, 1001, ... (deterministic, never reused)."""

    def __init__(self, start: int = 1000) -> None:
        self.next = start

    def __call__(self) -> int:
        self.next += 1
        return self.next - 1


class TransactionDriver:
    def __init__(self, config: TransactionCoordinatorConfig | None = None) -> None:
        self.config = config or TransactionCoordinatorConfig()
        self.clock = ManualClock(now_ms=1_000_000)
        self.producer_ids = CountingProducerIds()
        self.coordinator = TransactionCoordinator(self.producer_ids, self.config)
        self.log: list[TransactionRecord] = []
        self.markers: list[MarkerRequest] = []
        self.markers_written: list[MarkerRequest] = []

    @property
    def now(self) -> int:
        return self.clock.now_ms()

    def take(self, reply: TxnReply[R]) -> R:
        """Do what the broker does with a reply: append its records, queue its markers."""
        self.log += reply.records
        self.markers += reply.markers
        return reply.response

    # -- the APIs, with the driver's clock ----------------------------------------------

    def init(
        self,
        transactional_id: str | None,
        timeout_ms: int = 60_000,
        producer_id: int = -1,
        producer_epoch: int = -1,
    ) -> InitProducerIdResponse:
        return self.take(
            self.coordinator.init_producer_id(
                InitProducerIdRequest(transactional_id, timeout_ms, producer_id, producer_epoch),
                self.now,
            )
        )

    def add(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        *partitions: TopicPartition,
        tv: int = 0,
        verify_only: bool = False,
    ) -> AddPartitionsToTxnResult:
        return self.take(
            self.coordinator.add_partitions_to_txn(
                AddPartitionsToTxnRequest(
                    transactional_id,
                    producer_id,
                    producer_epoch,
                    frozenset(partitions),
                    verify_only,
                    tv,
                ),
                self.now,
            )
        )

    def add_offsets(
        self, transactional_id: str, producer_id: int, producer_epoch: int, group_id: str
    ) -> AddOffsetsToTxnResponse:
        return self.take(
            self.coordinator.add_offsets_to_txn(
                AddOffsetsToTxnRequest(transactional_id, producer_id, producer_epoch, group_id),
                self.now,
            )
        )

    def end(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        tv: int = 0,
    ) -> EndTxnResponse:
        return self.take(
            self.coordinator.end_txn(
                EndTxnRequest(transactional_id, producer_id, producer_epoch, commit, tv), self.now
            )
        )

    def tick(self) -> None:
        self.take(self.coordinator.tick(self.now))

    def advance(self, ms: int) -> None:
        self.clock.advance(ms)

    # -- the broker's side ----------------------------------------------------------------

    def write_markers(self, only: Iterable[MarkerRequest] | None = None) -> None:
        """Write queued markers (all, or ``only``) and report them to the coordinator."""
        chosen = list(self.markers) if only is None else list(only)
        for m in chosen:
            self.markers.remove(m)
            self.markers_written.append(m)
            self.log += self.coordinator.markers_written(
                m.transactional_id, m.producer_id, m.producer_epoch, m.partitions, self.now
            )

    def restart(self) -> None:
        """A crash and restart: a new coordinator rebuilt from the log; queued markers are
        lost and re-sent by ``recover``."""
        self.coordinator = TransactionCoordinator(self.producer_ids, self.config)
        for record in self.log:
            self.coordinator.replay(record.key, record.value)
        self.markers = []
        self.take(self.coordinator.recover(self.now))
