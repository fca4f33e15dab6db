"""Random fetch / acknowledge / lock-timeout / leave / restart sequences against a model.

The model keeps one entry per offset (no ranges, no heap), written straight from KIP-932's
rules; :class:`SharePartition` must agree with it after every step.  And at every step:

* replaying every record returned so far (encoded to bytes and decoded) gives exactly the
  live state as persisted (ACQUIRED written as AVAILABLE with its delivery count);
* no offset that was ever ACCEPTed successfully is anything but ACKNOWLEDGED or below the
  start offset (unless the start offset was reset);
* a restart (replay + :meth:`SharePartition.restore`) loses nothing: locked offsets come
  back AVAILABLE with their delivery count, or ARCHIVED at the limit.
"""

from __future__ import annotations

import itertools
import os
import uuid
from dataclasses import dataclass

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from riverbed.protocol.error_codes import ErrorCode
from riverbed.share import (
    AcknowledgeType,
    RecordState,
    SharePartition,
    SharePartitionConfig,
    ShareStateRecord,
    decode_share_state_record,
    replay,
)

R = RecordState
MEMBERS = ("m1", "m2", "m3")
LOCK_MS = 1000
LIMIT = 3
MAX_IN_FLIGHT = 40


@dataclass
class Entry:
    state: RecordState
    count: int
    member: str | None = None
    deadline: int = 0


class Model:
    """Per-offset share-partition state, the slow and obvious way."""

    def __init__(self, start: int) -> None:
        self.start = self.end = start
        self.st: dict[int, Entry] = {}

    def trim(self) -> None:
        while self.start < self.end and self.st[self.start].state in (R.ACKNOWLEDGED, R.ARCHIVED):
            del self.st[self.start]
            self.start += 1

    def release(self, e: Entry) -> None:
        e.state = R.ARCHIVED if e.count >= LIMIT else R.AVAILABLE
        e.member, e.deadline = None, 0

    def acquire(
        self, member: str, batches: list[tuple[int, int]], max_records: int, now: int
    ) -> list[int]:
        got: list[int] = []
        limit = self.start + MAX_IN_FLIGHT
        for base, last in sorted(batches):
            for off in range(max(base, self.start), last + 1):
                if len(got) >= max_records:
                    break
                if off < self.end:
                    e = self.st[off]
                    if e.state is R.AVAILABLE:
                        e.state, e.count, e.member = R.ACQUIRED, e.count + 1, member
                        e.deadline = now + LOCK_MS
                        got.append(off)
                    continue
                if off >= limit:
                    break
                for gap in range(self.end, off):
                    self.st[gap] = Entry(R.ARCHIVED, 0)
                self.st[off] = Entry(R.ACQUIRED, 1, member, now + LOCK_MS)
                self.end = off + 1
                got.append(off)
        self.trim()
        return got

    def acknowledge(
        self, member: str, batches: list[tuple[int, int, list[int]]], now: int
    ) -> ErrorCode:
        for first, last, types in batches:
            if first < 0 or last < first or len(types) not in (1, last - first + 1):
                return ErrorCode.INVALID_REQUEST
        ordered = sorted(batches)
        for a, b in itertools.pairwise(ordered):
            if b[0] <= a[1]:
                return ErrorCode.INVALID_REQUEST
        for first, last, _ in batches:
            for off in range(first, last + 1):
                e = self.st.get(off)
                if e is None or e.state is not R.ACQUIRED or e.member != member:
                    return ErrorCode.INVALID_RECORD_STATE
        for first, last, types in batches:
            for off in range(first, last + 1):
                t = types[0] if len(types) == 1 else types[off - first]
                e = self.st[off]
                if t == AcknowledgeType.ACCEPT:
                    e.state, e.member, e.deadline = R.ACKNOWLEDGED, None, 0
                elif t in (AcknowledgeType.REJECT, AcknowledgeType.GAP):
                    e.state, e.member, e.deadline = R.ARCHIVED, None, 0
                elif t == AcknowledgeType.RELEASE:
                    self.release(e)
                else:
                    e.deadline = now + LOCK_MS
        self.trim()
        return ErrorCode.NONE

    def expire(self, now: int) -> int:
        n = 0
        for e in self.st.values():
            if e.state is R.ACQUIRED and e.deadline <= now:
                self.release(e)
                n += 1
        self.trim()
        return n

    def release_member(self, member: str) -> int:
        n = 0
        for e in self.st.values():
            if e.state is R.ACQUIRED and e.member == member:
                e.state, e.count, e.member, e.deadline = R.AVAILABLE, max(e.count - 1, 0), None, 0
                n += 1
        self.trim()
        return n

    def advance(self, offset: int) -> None:
        if offset <= self.start:
            return
        for o in [o for o in self.st if o < offset]:
            del self.st[o]
        self.start, self.end = offset, max(self.end, offset)
        self.trim()

    def restart(self) -> None:
        for e in self.st.values():
            if e.state is R.ACQUIRED:
                e.state, e.member, e.deadline = R.AVAILABLE, None, 0
            if e.state is R.AVAILABLE and e.count >= LIMIT:
                e.state = R.ARCHIVED
        self.trim()


def expand(sp: SharePartition) -> dict[int, tuple[RecordState, int, str | None]]:
    out = {}
    for first, last, state, count, member in sp.in_flight():
        for off in range(first, last + 1):
            out[off] = (state, count, member)
    return out


class SharePartitionMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.cfg = SharePartitionConfig(
            record_lock_duration_ms=LOCK_MS,
            delivery_count_limit=LIMIT,
            max_in_flight_records=MAX_IN_FLIGHT,
            snapshot_update_records=4,
        )
        self.sp = SharePartition("g", uuid.UUID(int=1), 0, self.cfg, start_offset=5)
        self.model = Model(5)
        self.now = 0
        self.log: list[tuple[int, int]] = []  # deliverable batches in the topic partition
        self.hwm = 5
        self.records: list[ShareStateRecord] = []
        self.accepted: set[int] = set()

    @initialize()
    def first_snapshot(self) -> None:
        self.records.append(self.sp.snapshot(self.now))

    def _keep(self, records: tuple[ShareStateRecord, ...]) -> None:
        self.records.extend(records)

    @rule(n=st.integers(1, 6), gap=st.integers(0, 2))
    def produce(self, n: int, gap: int) -> None:
        base = self.hwm + gap  # `gap` offsets of control / aborted records
        self.log.append((base, base + n - 1))
        self.hwm = base + n

    @rule(member=st.sampled_from(MEMBERS), max_records=st.integers(1, 12))
    def fetch(self, member: str, max_records: int) -> None:
        nxt = self.sp.next_fetch_offset()
        batches = [b for b in self.log if b[1] >= nxt]
        r = self.sp.acquire(member, batches, max_records, self.now)
        got = self.model.acquire(member, batches, max_records, self.now)
        offsets = [o for a in r.acquired for o in range(a.first_offset, a.last_offset + 1)]
        assert offsets == got
        self._keep(r.records)

    @rule(
        member=st.sampled_from(MEMBERS),
        data=st.data(),
        per_offset=st.booleans(),
    )
    def acknowledge(self, member: str, data: st.DataObject, per_offset: bool) -> None:
        held = sorted(o for o, e in self.model.st.items() if e.member == member)
        if held and data.draw(st.integers(0, 9)) < 8:
            first = data.draw(st.sampled_from(held))
            last = first
            while last + 1 in held and data.draw(st.booleans()):
                last += 1
        else:  # anything near the window: mostly INVALID_RECORD_STATE
            first = data.draw(st.integers(self.model.start - 2, self.model.end + 2))
            last = first + data.draw(st.integers(0, 3))
        types_st = st.sampled_from([int(t) for t in AcknowledgeType])
        spans = [(first, last)]
        if last > first and data.draw(st.booleans()):  # two adjacent batches, one request
            cut = data.draw(st.integers(first, last - 1))
            spans = [(cut + 1, last), (first, cut)]
        batches = []
        for a, b in spans:
            n = b - a + 1 if per_offset else 1
            batches.append((a, b, data.draw(st.lists(types_st, min_size=n, max_size=n))))
        code = self.sp.acknowledge(member, batches, self.now)
        assert code.error_code == self.model.acknowledge(member, batches, self.now)
        if code.error_code is ErrorCode.NONE:
            for a, b, types in batches:
                for off in range(a, b + 1):
                    if (types[0] if len(types) == 1 else types[off - a]) == AcknowledgeType.ACCEPT:
                        self.accepted.add(off)
        else:
            assert code.records == ()
        self._keep(code.records)

    @rule(dt=st.integers(0, 2 * LOCK_MS))
    def tick(self, dt: int) -> None:
        self.now += dt
        c = self.sp.expire_locks(self.now)
        assert c.released == self.model.expire(self.now)
        self._keep(c.records)

    @rule(member=st.sampled_from(MEMBERS))
    def leave(self, member: str) -> None:
        c = self.sp.release_member(member, self.now)
        assert c.released == self.model.release_member(member)
        self._keep(c.records)

    @rule(ahead=st.integers(1, 8))
    def retention(self, ahead: int) -> None:
        """The log start moves (retention, DeleteRecords) past the share start offset."""
        offset = self.model.start + ahead
        self._keep(self.sp.advance_start_offset(offset, self.now).records)
        self.model.advance(offset)
        self.log = [(max(b, offset), e) for b, e in self.log if e >= offset]
        self.hwm = max(self.hwm, offset)

    @rule()
    def restart(self) -> None:
        persisted = self._replayed()
        assert persisted is not None
        self.sp, change = SharePartition.restore(persisted, self.cfg, self.now)
        self.model.restart()
        self._keep(change.records)

    @precondition(lambda self: self.model.end - self.model.start > 0)
    @rule(data=st.data())
    def reset(self, data: st.DataObject) -> None:
        offset = data.draw(st.integers(0, self.hwm))
        self._keep(self.sp.reset_start_offset(offset, self.now).records)
        self.model = Model(offset)
        self.accepted.clear()

    def _replayed(self):  # type: ignore[no-untyped-def]
        decoded = [decode_share_state_record(r.key_bytes(), r.value_bytes()) for r in self.records]
        return replay(decoded).state(self.sp.key)

    @invariant()
    def agrees_with_model(self) -> None:
        assert (self.sp.start_offset, self.sp.end_offset) == (self.model.start, self.model.end)
        want = {o: (e.state, e.count, e.member) for o, e in self.model.st.items()}
        assert expand(self.sp) == want
        entries = self.model.st.values()
        assert self.sp.acquired_records == sum(e.state is R.ACQUIRED for e in entries)
        assert self.sp.available_records == sum(
            e.state is R.AVAILABLE for e in self.model.st.values()
        )
        deadlines = [e.deadline for e in entries if e.state is R.ACQUIRED]
        assert self.sp.next_lock_deadline_ms() == (min(deadlines) if deadlines else None)
        avail = [o for o, e in sorted(self.model.st.items()) if e.state is R.AVAILABLE]
        assert self.sp.next_fetch_offset() == (avail[0] if avail else self.model.end)

    @invariant()
    def persisted_equals_live(self) -> None:
        persisted = self._replayed()
        assert persisted is not None
        assert persisted.start_offset == self.sp.start_offset
        assert persisted.state_batches == self.sp.state_batches()
        assert persisted.state_epoch == self.sp.state_epoch

    @invariant()
    def accepted_stays_accepted(self) -> None:
        for off in self.accepted:
            if off >= self.sp.start_offset:
                state = self.sp.state_of(off)
                assert state is not None and state[0] is R.ACKNOWLEDGED


SharePartitionMachine.TestCase.settings = settings(
    max_examples=int(os.environ.get("RIVERBED_SHARE_EXAMPLES", "150")),
    stateful_step_count=40,
    deadline=None,
)
TestSharePartitionMachine = SharePartitionMachine.TestCase
