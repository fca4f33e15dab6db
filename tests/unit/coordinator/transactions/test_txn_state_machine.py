"""Random sequences of InitProducerId / AddPartitions / AddOffsets / EndTxn / timeouts /
marker completion / restart-by-replay, checked against the coordinator's invariants:

* replaying the records appended so far reproduces the state exactly;
* an epoch never decreases for a (transactional id, producer id);
* one transaction per id at a time: a queued marker request exists exactly for the ids
  in PrepareCommit/PrepareAbort, at their producer id and epoch; partitions only while a
  transaction is in progress; no two live ids share a producer id;
* a superseded producer (a newer instance of its id initialized, or the id expired)
  never gets a successful answer; one whose transaction the coordinator aborted (timeout,
  or a new instance's InitProducerId) gets none either, except -- transaction version 2,
  KIP-890 -- for an EndTxn(abort) or its own InitProducerId, which hand it the bumped
  epoch to carry on with (until another instance initializes).
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from riverbed.coordinator.transactions import (
    TransactionCoordinator,
    TransactionCoordinatorConfig,
    TransactionState,
)
from riverbed.coordinator.transactions.transaction_driver import TransactionDriver
from riverbed.protocol.error_codes import ErrorCode as E
from riverbed.protocol.topic_partition import TopicPartition as TP

S = TransactionState
IDS = ("t1", "t2", "t3")
PARTITIONS = [TP("a", 0), TP("a", 1), TP("b", 0)]


@dataclass
class Producer:
    transactional_id: str
    producer_id: int
    epoch: int
    superseded: bool = False
    aborted: bool = False

    @property
    def fenced(self) -> bool:
        return self.superseded or self.aborted


class TransactionMachine(RuleBasedStateMachine):
    transaction_version = 2

    def __init__(self) -> None:
        super().__init__()
        self.d = TransactionDriver(
            TransactionCoordinatorConfig(
                transactional_id_expiration_ms=60_000, transaction_version=self.transaction_version
            )
        )
        self.producers: list[Producer] = []
        self.max_epoch: dict[tuple[str, int], int] = {}

    # -- helpers -------------------------------------------------------------------------

    def _supersede(self, transactional_id: str, except_: Producer | None = None) -> None:
        for p in self.producers:
            if p.transactional_id == transactional_id and p is not except_:
                p.superseded = True

    def _abort(self, transactional_id: str) -> None:
        for p in self.producers:
            if p.transactional_id == transactional_id:
                p.aborted = True

    def _state(self, transactional_id: str) -> TransactionState | None:
        meta = self.d.coordinator.transaction(transactional_id)
        return None if meta is None else meta.state

    # -- rules ---------------------------------------------------------------------------

    @rule(transactional_id=st.sampled_from(IDS), timeout=st.integers(500, 3000))
    def new_instance(self, transactional_id: str, timeout: int) -> None:
        was_ongoing = self._state(transactional_id) is S.ONGOING
        r = self.d.init(transactional_id, timeout_ms=timeout)
        if r.error_code is E.NONE:
            producer = Producer(transactional_id, r.producer_id, r.producer_epoch)
            self._supersede(transactional_id)
            self.producers.append(producer)
        elif r.error_code is E.CONCURRENT_TRANSACTIONS and was_ongoing:
            self._abort(transactional_id)  # its transaction is being aborted

    @precondition(lambda self: self.producers)
    @rule(data=st.data())
    def reinit(self, data: st.DataObject) -> None:
        p = data.draw(st.sampled_from(self.producers))
        was_ongoing = self._state(p.transactional_id) is S.ONGOING
        r = self.d.init(p.transactional_id, 2000, p.producer_id, p.epoch)
        if r.error_code is E.NONE:
            assert not p.superseded, r
            if p.aborted:
                # TV2: the abort's bump left the old epoch as the last one, so the producer
                # re-initializing with it (KIP-360) is a retry and gets the abort's epoch
                assert self.transaction_version >= 2, r
                event("aborted producer recovers by re-initializing (TV2)")
                p.aborted = False
            p.producer_id, p.epoch = r.producer_id, r.producer_epoch
            self._supersede(p.transactional_id, except_=p)
        elif r.error_code is E.CONCURRENT_TRANSACTIONS and was_ongoing:
            self._abort(p.transactional_id)

    @precondition(lambda self: self.producers)
    @rule(
        data=st.data(), parts=st.sets(st.sampled_from(PARTITIONS), min_size=1), verify=st.booleans()
    )
    def add(self, data: st.DataObject, parts: set[TP], verify: bool) -> None:
        p = data.draw(st.sampled_from(self.producers))
        meta = self.d.coordinator.transaction(p.transactional_id)
        usable = (
            meta is not None
            and not p.fenced
            and meta.producer_id == p.producer_id
            and meta.producer_epoch == p.epoch
            and not meta.state.is_prepare
        )
        result = self.d.add(
            p.transactional_id,
            p.producer_id,
            p.epoch,
            *parts,
            tv=self.transaction_version,
            verify_only=verify,
        )
        if p.fenced:
            assert E.NONE not in result.errors.values(), result
        elif usable and not verify:
            assert set(result.errors.values()) == {E.NONE}, result

    @precondition(lambda self: self.producers)
    @rule(data=st.data(), group=st.sampled_from(["g1", "g2"]))
    def add_offsets(self, data: st.DataObject, group: str) -> None:
        p = data.draw(st.sampled_from(self.producers))
        resp = self.d.add_offsets(p.transactional_id, p.producer_id, p.epoch, group)
        if p.fenced:
            assert resp.error_code is not E.NONE

    @precondition(lambda self: self.producers)
    @rule(data=st.data(), commit=st.booleans())
    def end(self, data: st.DataObject, commit: bool) -> None:
        p = data.draw(st.sampled_from(self.producers))
        resp = self.d.end(
            p.transactional_id, p.producer_id, p.epoch, commit, tv=self.transaction_version
        )
        event(f"EndTxn {'fenced ' if p.fenced else ''}{resp.error_code.name}")
        if resp.error_code is not E.NONE:
            return
        assert not p.superseded, resp
        if p.aborted:
            assert self.transaction_version >= 2 and not commit, resp
            event("aborted producer recovers by aborting (TV2)")
            p.aborted = False
        if resp.producer_id != -1:
            p.producer_id, p.epoch = resp.producer_id, resp.producer_epoch

    @rule(ms=st.integers(0, 4000))
    def time_passes(self, ms: int) -> None:
        self.d.advance(ms)
        before = {t: self._state(t) for t in IDS}
        self.d.tick()
        for t in IDS:
            after = self._state(t)
            if after is None:
                event("expired")
                self._supersede(t)
            elif before[t] is S.ONGOING and after is not S.ONGOING:
                event("timed out")
                self._abort(t)

    @precondition(lambda self: self.d.markers)
    @rule(data=st.data())
    def write_markers(self, data: st.DataObject) -> None:
        self.d.write_markers([data.draw(st.sampled_from(self.d.markers))])

    @precondition(lambda self: self.d.markers)
    @rule(data=st.data())
    def write_some_markers(self, data: st.DataObject) -> None:
        """The broker reports a marker request's partitions a few at a time."""
        m = data.draw(st.sampled_from(self.d.markers))
        some = data.draw(st.sets(st.sampled_from(sorted(m.partitions))))
        records = self.d.coordinator.markers_written(
            m.transactional_id, m.producer_id, m.producer_epoch, some, self.d.now
        )
        if records:  # that was the last one missing
            event("transaction completed by partial marker reports")
            self.d.log += records
            self.d.markers.remove(m)

    @rule()
    def restart(self) -> None:
        before = self.d.coordinator.snapshot()
        event(f"restart with {len(self.d.markers)} marker request(s) queued")
        self.d.restart()
        assert self.d.coordinator.snapshot() == before

    # -- invariants ----------------------------------------------------------------------

    @invariant()
    def replay_reproduces_state(self) -> None:
        fresh = TransactionCoordinator(lambda: 0, self.d.config)
        for record in self.d.log:
            fresh.replay(record.key, record.value)
        assert fresh.snapshot() == self.d.coordinator.snapshot()

    @invariant()
    def epochs_never_decrease(self) -> None:
        for t in self.d.coordinator.transactional_ids():
            meta = self.d.coordinator.transaction(t)
            assert meta is not None
            key = (t, meta.producer_id)
            assert meta.producer_epoch >= self.max_epoch.get(key, -1)
            self.max_epoch[key] = meta.producer_epoch

    @invariant()
    def one_transaction_per_id(self) -> None:
        queued = {}
        for m in self.d.markers:
            assert m.transactional_id not in queued, "two marker requests for one id"
            queued[m.transactional_id] = m
        producer_ids = set()
        for t in self.d.coordinator.transactional_ids():
            meta = self.d.coordinator.transaction(t)
            assert meta is not None
            assert meta.producer_id not in producer_ids
            producer_ids.add(meta.producer_id)
            if meta.state.is_prepare:
                m = queued.pop(t)
                assert (m.producer_id, m.producer_epoch, m.partitions) == (
                    meta.producer_id,
                    meta.producer_epoch,
                    meta.partitions,
                )
            else:
                assert meta.next_producer_id == -1
            if meta.state.is_complete_or_empty:
                assert meta.partitions == frozenset()
            if meta.state is S.EMPTY:
                assert meta.start_ms == -1
        assert queued == {}, "markers for a transaction not being completed"


class TransactionMachineTV1(TransactionMachine):
    transaction_version = 1


_SETTINGS = settings(
    max_examples=60,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestTransactionMachineTV2 = TransactionMachine.TestCase
TestTransactionMachineTV2.settings = _SETTINGS
TestTransactionMachineTV1 = TransactionMachineTV1.TestCase
TestTransactionMachineTV1.settings = _SETTINGS
