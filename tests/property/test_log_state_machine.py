"""PartitionLog against an in-memory model: append, read, roll, truncate, delete records,
compact (also with a dedupe buffer too small for one pass), idempotent appends, retries,
producer-id expiry on a manual clock, delayed file deletion, reopen (clean and unclean)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from riverbed.clock import ManualClock
from riverbed.protocol.records import build_batch, iter_batches_with_records
from riverbed.storage import LogConfig, PartitionLog
from riverbed.storage.cleaner import LogCleaner
from riverbed.storage.offset_map import ENTRY_BYTES

CONFIG = LogConfig(
    cleanup_policy="compact,delete", segment_bytes=400, index_interval_bytes=100, retention_ms=-1
)
KEYS = st.sampled_from([b"a", b"b", b"c", b"d"])
PIDS = st.sampled_from([1, 2])
EXPIRATION_MS = 10_000
Rec = tuple[int, bytes, bytes]  # offset, key, value


class LogMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="logsm-"))
        self.clock = ManualClock()
        self.log = self.open()
        self.next_seq: dict[int, int] = {}  # producers the log knows: next sequence
        self.last_sent: dict[int, tuple[bytes, int, int]] = {}  # pid -> (batch, base, last)
        self.records: list[Rec] = []
        self.batches: list[tuple[int, int]] = []  # (base, last) of batches in the log
        self.start = 0
        self.end = 0
        self.counter = 0

    def open(self) -> PartitionLog:
        return PartitionLog.open(
            self.tmp / "t-0", CONFIG, clock=self.clock, producer_id_expiration_ms=EXPIRATION_MS
        )

    def resync_producers(self) -> None:
        """After truncation, reopen or compaction the log may legitimately know less."""
        self.next_seq = {
            pid: e.batches[-1].last_seq + 1
            for pid, e in self.log.producers.entries.items()
            if e.batches
        }
        entries = self.log.producers.entries
        self.last_sent = {
            pid: v
            for pid, v in self.last_sent.items()
            if pid in self.next_seq
            and (entries[pid].batches[-1].first_offset, entries[pid].batches[-1].last_offset)
            == v[1:]
        }

    def teardown(self) -> None:
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def read_all(self) -> tuple[list[Rec], list[tuple[int, int]]]:
        recs: list[Rec] = []
        batches: list[tuple[int, int]] = []
        offset = self.log.log_start_offset
        while offset < self.log.log_end_offset:
            data = self.log.read(offset, 1 << 20).records
            if not data:
                break
            for h, rs in iter_batches_with_records(data):
                batches.append((h.base_offset, h.last_offset))
                for r in rs:
                    if r.offset >= offset:
                        assert r.key is not None and r.value is not None
                        recs.append((r.offset, r.key, r.value))
                offset = h.next_offset
        return recs, batches

    def _append(self, keys: list[bytes], ts: int, pid: int = -1, seq: int = -1) -> bytes:
        items = []
        for k in keys:
            self.counter += 1
            items.append((k, b"v%d" % self.counter + b"." * (self.counter % 40), ts))
        data = build_batch(
            items, producer_id=pid, producer_epoch=0 if pid >= 0 else -1, base_sequence=seq
        )
        result = self.log.append(data)
        assert result.base_offset == self.end and not result.duplicate
        for i, (k, v, _ts) in enumerate(items):
            self.records.append((self.end + i, k, v))
        self.batches.append((self.end, result.last_offset))
        self.end = result.last_offset + 1
        if pid >= 0:
            self.last_sent[pid] = (data, result.base_offset, result.last_offset)
            self.next_seq[pid] = seq + len(keys)
        return data

    @rule(keys=st.lists(KEYS, min_size=1, max_size=5))
    def append(self, keys: list[bytes]) -> None:
        self._append(keys, 1000)

    @rule(pid=PIDS, keys=st.lists(KEYS, min_size=1, max_size=3), seq=st.integers(0, 1000))
    def idempotent_append(self, pid: int, keys: list[bytes], seq: int) -> None:
        # a known producer must continue its sequence; an unknown one may start anywhere
        self._append(keys, self.clock.now_ms(), pid, self.next_seq.get(pid, seq))

    @precondition(lambda self: bool(self.last_sent))
    @rule(data=st.data())
    def retry_last_batch(self, data: st.DataObject) -> None:
        pid = data.draw(st.sampled_from(sorted(self.last_sent)))
        sent, base, last = self.last_sent[pid]
        result = self.log.append(sent)
        assert result.duplicate and (result.base_offset, result.last_offset) == (base, last)

    @rule()
    def expire_producers(self) -> None:
        self.clock.advance(EXPIRATION_MS)
        self.log.remove_expired_producers()
        assert self.log.producers.entries == {}
        self.next_seq, self.last_sent = {}, {}

    @rule()
    def delete_due_files(self) -> None:
        self.clock.advance(CONFIG.file_delete_delay_ms)
        self.log.delete_expired_files()
        assert self.log.pending_deletions == 0
        self.resync_producers()

    @rule(data=st.data())
    def read_one(self, data: st.DataObject) -> None:
        offset = data.draw(st.integers(self.start, self.end))
        got = self.log.read(offset, 1)
        assert got.high_watermark == self.end and got.log_start_offset == self.start
        decoded = list(iter_batches_with_records(got.records))
        recs = [(r.offset, r.key, r.value) for _h, rs in decoded for r in rs if r.offset >= offset]
        expected = [r for r in self.records if r[0] >= offset]
        assert recs == expected[: len(recs)]
        if expected and not recs:
            # compaction emptied the batch holding `offset` (Kafka keeps its offsets): the
            # consumer moves on to the batch's next offset, which must not skip a record
            assert decoded and decoded[-1][0].next_offset <= expected[0][0]
        elif not expected:
            assert recs == []

    @rule()
    def roll(self) -> None:
        self.log.roll()

    @precondition(lambda self: len(self.batches) >= 2)
    @rule(data=st.data())
    def truncate(self, data: st.DataObject) -> None:
        k = data.draw(st.integers(1, len(self.batches) - 1))
        if self.batches[k][0] <= self.start:
            return
        self.log.truncate_to(self.batches[k][0])
        self.end = self.batches[k - 1][1] + 1
        self.batches = self.batches[:k]
        self.records = [r for r in self.records if r[0] < self.end]
        self.resync_producers()

    @rule(data=st.data())
    def delete_records(self, data: st.DataObject) -> None:
        offset = data.draw(st.integers(self.start, self.end))
        assert self.log.delete_records_before(offset) == offset
        self.start = offset
        self.records = [r for r in self.records if r[0] >= offset]

    @rule(tiny=st.booleans())
    def compact(self, tiny: bool) -> None:
        active_base = self.log.segments()[-1].base_offset
        # a tiny dedupe buffer (3 keys) makes passes stop early or abort; same guarantees
        size = ENTRY_BYTES * 3 if tiny else 1 << 20
        LogCleaner(self.clock, dedupe_buffer_size=size).clean(self.log)
        got, batches = self.read_all()
        model = {r[0]: r for r in self.records}
        latest = {k: o for o, k, _v in self.records}
        assert all(model.get(r[0]) == r for r in got)  # nothing invented or renumbered
        got_offsets = {r[0] for r in got}
        assert set(latest.values()) <= got_offsets  # the latest per key is kept
        assert {o for o in model if o >= active_base} <= got_offsets  # active untouched
        self.records, self.batches = got, batches
        self.resync_producers()

    @rule(clean=st.booleans())
    def reopen(self, clean: bool) -> None:
        if clean:
            self.log.close()
        else:
            self.log.flush()
            self.log.close_unclean()
        self.log = self.open()
        self.resync_producers()

    @invariant()
    def offsets_and_contents_match(self) -> None:
        assert self.log.log_start_offset == self.start
        assert self.log.log_end_offset == self.end
        got, _b = self.read_all()
        assert got == self.records


TestLogStateMachine = LogMachine.TestCase
TestLogStateMachine.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)
