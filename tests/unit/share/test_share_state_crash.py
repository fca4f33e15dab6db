"""A crash can cut ``__share_group_state`` after any record: every prefix must restore safely.

Random workloads run against a :class:`SharePartition`; each returned record is "appended".
An acknowledgement counts as answered once its records are in the log (the broker answers
ShareAcknowledge only after they are durable).  Then, for *every* prefix of the records
(a crash between two appends):

* an offset whose ACCEPT was answered is ACKNOWLEDGED, or below the restored start offset;
* nothing is locked after a restart, and what was in flight is AVAILABLE with the
  delivery count the live partition had when that record was written (ARCHIVED at the
  limit): the prefix replays to exactly the state as of its last record.
"""

from __future__ import annotations

import random
import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from riverbed.protocol.error_codes import ErrorCode
from riverbed.share import (
    AcknowledgeType,
    DeliveryState,
    RecordState,
    SharePartition,
    SharePartitionConfig,
    ShareStateRecord,
    StateBatch,
    decode_share_state_record,
    replay,
)

CFG = SharePartitionConfig(
    record_lock_duration_ms=100,
    delivery_count_limit=3,
    max_in_flight_records=30,
    snapshot_update_records=3,
)
MEMBERS = ("a", "b")

T = AcknowledgeType
ACK_TYPES = [T.ACCEPT] * 6 + [T.RELEASE, T.REJECT, T.GAP, T.RENEW]


def workload(seed: int, steps: int = 80) -> list[tuple]:  # type: ignore[type-arg]
    """A seeded random op list: fetch 30%, acknowledge 45%, lock clock 15%, leave 10%."""
    rng = random.Random(seed)
    ops: list[tuple] = []  # type: ignore[type-arg]
    for _ in range(steps):
        x = rng.random()
        if x < 0.30:
            ops.append(("fetch", rng.choice(MEMBERS), rng.randint(1, 8)))
        elif x < 0.75:
            ops.append(("ack", rng.choice(MEMBERS), rng.choice(ACK_TYPES)))
        elif x < 0.90:
            ops.append(("tick", rng.randint(0, 150)))
        else:
            ops.append(("leave", rng.choice(MEMBERS)))
    return ops


def restore_prefix(records: list[ShareStateRecord]) -> SharePartition:
    decoded = [decode_share_state_record(r.key_bytes(), r.value_bytes()) for r in records]
    persisted = replay(decoded).state(records[0].key)
    assert persisted is not None
    sp, _ = SharePartition.restore(persisted, CFG, 0)
    return sp


def expected_after_restart(live: tuple[StateBatch, ...]) -> list[tuple[int, int, int]]:
    """Per offset ``(offset, persisted state, count)`` once the limit rule is applied."""
    out = []
    for b in live:
        state = b.delivery_state
        if state is DeliveryState.AVAILABLE and b.delivery_count >= CFG.delivery_count_limit:
            state = DeliveryState.ARCHIVED
        out += [(o, int(state), b.delivery_count) for o in range(b.first_offset, b.last_offset + 1)]
    return out


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32))
def test_every_prefix_restores_safely(seed: int) -> None:
    ops = workload(seed)
    produced = random.Random(-seed).randint(30, 150)  # records in the topic partition
    sp = SharePartition("g", uuid.UUID(int=3), 1, CFG, start_offset=0)
    records: list[ShareStateRecord] = [sp.snapshot(0)]
    as_of: list[tuple[int, tuple[StateBatch, ...]]] = [(sp.start_offset, sp.state_batches())]
    answered: list[tuple[int, set[int]]] = []  # (records needed, offsets accepted)
    now = 0
    for o in ops:
        if o[0] == "fetch":
            new = sp.acquire(o[1], [(sp.next_fetch_offset(), produced - 1)], o[2], now).records
        elif o[0] == "ack":
            held = [  # the member's locked ranges first, else anyone's
                (m != o[1], f, last, m)
                for f, last, s, _, m in sp.in_flight()
                if s is RecordState.ACQUIRED
            ]
            if not held:
                continue
            _, f, last, member = min(held)
            r = sp.acknowledge(member, [(f, last, [int(o[2])])], now)
            assert r.error_code is ErrorCode.NONE
            new = r.records
            if o[2] is AcknowledgeType.ACCEPT:
                answered.append((len(records) + len(new), set(range(f, last + 1))))
        elif o[0] == "tick":
            now += o[1]
            new = sp.expire_locks(now).records
        else:
            new = sp.release_member(o[1], now).records
        for rec in new:
            records.append(rec)
            as_of.append((sp.start_offset, sp.state_batches()))

    for k in range(1, len(records) + 1):
        restored = restore_prefix(records[:k])
        assert restored.acquired_records == 0
        for needed, offsets in answered:
            if needed <= k:
                for off in offsets:
                    if off >= restored.start_offset:
                        state = restored.state_of(off)
                        assert state is not None and state[0] is RecordState.ACKNOWLEDGED
        start, live = as_of[k - 1]
        want = [e for e in expected_after_restart(live) if e[0] >= restored.start_offset]
        got = [
            (o, int(DeliveryState(int(s) if s is not RecordState.ACQUIRED else 0)), c)
            for f, last, s, c, _ in restored.in_flight()
            for o in range(f, last + 1)
        ]
        assert got == want
        assert restored.start_offset >= start
