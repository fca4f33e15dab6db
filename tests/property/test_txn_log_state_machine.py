"""PartitionLog with interleaved transactional producers against a model.

Rules: transactional appends by three producers, plain appends, COMMIT/ABORT markers (some
bumping the epoch as transaction version 2 does), stale markers (fenced, nothing
written), rolls, compaction (which also removes markers guarding nothing), clean
reopen and unclean reopen, the latter also losing what a kill -9 right after the rolls
loses (the later producer snapshots and the aborted-transaction
indexes written after the oldest one).  Invariants: the LSO is the model's, a
read_committed consumer sees exactly the committed records below it (once compacted: a
subset of them, in order, holding each key's latest committed value), nothing read under
read_committed reaches the LSO, and the open transactions are the model's.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from riverbed.clock import ManualClock
from riverbed.errors import InvalidProducerEpochError
from riverbed.protocol.records import build_batch, iter_batches_with_records
from riverbed.storage import LogConfig, PartitionLog
from riverbed.storage.cleaner import LogCleaner
from riverbed.storage.producer_state import SNAPSHOT_SUFFIX
from riverbed.storage.transactions import IsolationLevel
from riverbed.testing.read_committed import committed_records

CONFIG = LogConfig(
    segment_bytes=350,
    index_interval_bytes=100,
    retention_ms=-1,
    cleanup_policy="compact",
    min_cleanable_dirty_ratio=0.0,
    file_delete_delay_ms=0,
    delete_retention_ms=0,
)  # markers go at once
PIDS = st.sampled_from([1, 2, 3])
KEYS = [b"a", b"b", b"c", b"d"]
T0 = 1_700_000_000_000


@dataclass
class Producer:
    epoch: int = 0
    seq: int = 0
    open_first: int | None = None  # first offset of the open transaction
    open_values: list[tuple[int, bytes, bytes]] = field(default_factory=list)


class TxnLogMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="txnsm-"))
        self.clock = ManualClock(T0)
        self.log = self.open()
        self.producers = {pid: Producer() for pid in (1, 2, 3)}
        self.committed: list[tuple[int, bytes, bytes]] = []  # (offset, key, value) visible
        self.end = 0
        self.counter = 0
        self.compacted = False

    def open(self) -> PartitionLog:
        return PartitionLog.open(self.tmp / "t-0", CONFIG, clock=self.clock)

    def teardown(self) -> None:
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _values(self, n: int) -> list[tuple[bytes, bytes]]:
        out = []
        for _ in range(n):
            self.counter += 1
            out.append((KEYS[self.counter * 7 % 11 % 4], b"v%d" % self.counter))
        return out

    # -- rules ---------------------------------------------------------------------

    @rule(pid=PIDS, n=st.integers(1, 3))
    def transactional_append(self, pid: int, n: int) -> None:
        p = self.producers[pid]
        values = self._values(n)
        data = build_batch(
            [(k, v, T0) for k, v in values],
            producer_id=pid,
            producer_epoch=p.epoch,
            base_sequence=p.seq,
            is_transactional=True,
            base_timestamp=T0,
        )
        result = self.log.append(data)
        assert result.base_offset == self.end
        if p.open_first is None:
            p.open_first = self.end
        p.open_values += [(self.end + i, k, v) for i, (k, v) in enumerate(values)]
        p.seq += n
        self.end += n

    @rule(n=st.integers(1, 2))
    def plain_append(self, n: int) -> None:
        values = self._values(n)
        self.log.append(build_batch([(k, v, T0) for k, v in values], base_timestamp=T0))
        self.committed += [(self.end + i, k, v) for i, (k, v) in enumerate(values)]
        self.end += n

    @rule(pid=PIDS, commit=st.booleans(), bump=st.booleans())
    def end_transaction(self, pid: int, commit: bool, bump: bool) -> None:
        p = self.producers[pid]
        epoch = p.epoch + 1 if bump else p.epoch
        result = self.log.append_control_marker(pid, epoch, commit, 0)
        assert result.base_offset == self.end
        if commit:
            self.committed += p.open_values
        if bump:
            p.epoch, p.seq = epoch, 0
        p.open_first, p.open_values = None, []
        self.end += 1

    @rule(pid=PIDS)
    def stale_marker_is_fenced(self, pid: int) -> None:
        p = self.producers[pid]
        known = self.log.producers.entries.get(pid)
        if p.epoch == 0 or known is None or known.producer_epoch != p.epoch:
            # compaction removed the markers carrying the producer's newest epoch (and
            # maybe all its batches), then a crash lost the snapshots that had it: the
            # log knows an older epoch or none, and fences accordingly, as Kafka would
            return
        with pytest.raises(InvalidProducerEpochError):
            self.log.append_control_marker(pid, p.epoch - 1, True, 0)

    @rule()
    def roll(self) -> None:
        self.log.roll()

    @rule()
    def compact(self) -> None:
        if LogCleaner(self.clock).clean(self.log) is not None:
            self.compacted = True

    @rule()
    def reopen_clean(self) -> None:
        self.log.close()
        self.log = self.open()

    @rule(lose_unflushed=st.booleans())
    def reopen_unclean(self, lose_unflushed: bool) -> None:
        self.log.close_unclean()
        directory = self.tmp / "t-0"
        snapshots = sorted(directory.glob("*" + SNAPSHOT_SUFFIX))
        if lose_unflushed and snapshots:
            for path in snapshots[1:]:
                path.unlink()
            kept = int(snapshots[0].name[:20])
            for path in directory.glob("*.txnindex"):
                if int(path.name[:20]) >= kept:
                    path.unlink()
        self.log = self.open()

    # -- invariants ----------------------------------------------------------------

    def model_lso(self) -> int:
        firsts = [p.open_first for p in self.producers.values() if p.open_first is not None]
        return min(firsts) if firsts else self.end

    @invariant()
    def lso_and_open_transactions_match(self) -> None:
        assert self.log.log_end_offset == self.end
        assert self.log.last_stable_offset == self.model_lso()
        assert self.log.ongoing_transactions() == {
            pid: p.open_first for pid, p in self.producers.items() if p.open_first is not None
        }

    @invariant()
    def read_committed_sees_exactly_the_committed_records(self) -> None:
        lso = self.model_lso()
        expected = sorted((o, k, v) for o, k, v in self.committed if o < lso)
        got = [(r.offset, r.key, r.value) for r in committed_records(self.log, max_bytes=200)]
        if not self.compacted:
            assert got == expected
            return
        assert set(got) <= set(expected) and got == sorted(got)
        latest = {k: (o, k, v) for o, k, v in expected}
        assert set(latest.values()) <= set(got)

    @invariant()
    def nothing_at_or_above_the_lso_is_served(self) -> None:
        lso = self.model_lso()
        for offset in range(0, self.end, 3):
            data = self.log.read(offset, 1 << 20, isolation=IsolationLevel.READ_COMMITTED)
            assert all(h.last_offset < lso for h, _r in iter_batches_with_records(data.records))
            assert data.last_stable_offset == lso


TxnLogMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)
TestTxnLog = TxnLogMachine.TestCase
