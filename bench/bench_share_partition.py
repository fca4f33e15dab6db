"""In-process cost of share-partition bookkeeping (riverbed.share): records/s, no I/O.

What the broker's event loop spends per record of a share group on one partition, to
set against the network and fsync costs (FIELD-NOTES: ~5-7k fsync/s, which group commit
spreads over many records).  Scenarios, each over N records, 4 members fetching in turn:

* ``range-ack``   fetch up to B records, ACCEPT them with one batch (a client that
                  coalesces contiguous acknowledgements, like librdkafka and Java);
* ``record-ack``  the same, one acknowledgement batch per record in one call;
* ``record-call`` one ``acknowledge`` call per record (the worst case for the loop);
* ``mixed``       90% ACCEPT, 5% RELEASE, 5% REJECT per record, released ones redelivered
                  (the range list fragments and the model's worst realistic case);

each with the ``__share_group_state`` records encoded to bytes (``key_bytes`` and
``value_bytes``, as the broker appends them); then ``replay``: the ``mixed`` run's records
decoded and folded back as at a restart.  Best of R runs.
Usage: .venv/bin/python bench/bench_share_partition.py [--records N] [--batch B] [--repeat R]
"""

from __future__ import annotations

import argparse
import os
import random
import time
import uuid
from collections.abc import Callable

from riverbed.share import (
    AcknowledgeType,
    SharePartition,
    SharePartitionConfig,
    ShareStateReplay,
)

ACCEPT, RELEASE, REJECT = (int(AcknowledgeType.ACCEPT), int(AcknowledgeType.RELEASE), 3)
MEMBERS = ("m0", "m1", "m2", "m3")


def _encode(records: tuple) -> int:  # type: ignore[type-arg]
    for r in records:
        _LOG.append((r.key_bytes(), r.value_bytes()))
    return sum(len(k) + len(v) for k, v in _LOG[len(_LOG) - len(records) :])


_LOG: list[tuple[bytes, bytes]] = []
"""The encoded records of the last run, for the replay figure."""


def run(n: int, batch: int, mode: str) -> int:
    """Process ``n`` records; returns the bytes of state records written."""
    _LOG.clear()
    cfg = SharePartitionConfig(max_in_flight_records=max(2000, 4 * batch))
    sp = SharePartition("bench", uuid.UUID(int=1), 0, cfg, start_offset=0)
    rng = random.Random(7)
    written = _encode((sp.snapshot(0),))
    now, turn = 0, 0
    while sp.start_offset < n:
        member = MEMBERS[turn % len(MEMBERS)]
        turn += 1
        now += 1
        got = sp.acquire(member, [(sp.next_fetch_offset(), n - 1)], batch, now)
        written += _encode(got.records)
        for a in got.acquired:
            if mode == "range-ack":
                r = sp.acknowledge(member, [(a.first_offset, a.last_offset, [ACCEPT])], now)
                written += _encode(r.records)
            elif mode == "record-ack":
                acks = [(o, o, [ACCEPT]) for o in range(a.first_offset, a.last_offset + 1)]
                written += _encode(sp.acknowledge(member, acks, now).records)
            elif mode == "record-call":
                for o in range(a.first_offset, a.last_offset + 1):
                    written += _encode(sp.acknowledge(member, [(o, o, [ACCEPT])], now).records)
            else:
                size = a.last_offset - a.first_offset + 1
                types = [
                    ACCEPT if (x := rng.random()) < 0.9 else RELEASE if x < 0.95 else REJECT
                    for _ in range(size)
                ]
                r = sp.acknowledge(member, [(a.first_offset, a.last_offset, types)], now)
                written += _encode(r.records)
    return written


def _best(fn: Callable[[], int], repeat: int) -> tuple[float, int]:
    best, out = float("inf"), 0
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}; {args.records} records, fetch {args.batch}")
    for mode in ("range-ack", "record-ack", "record-call", "mixed"):
        n = args.records if mode != "record-call" else args.records // 4
        seconds, written = _best(lambda m=mode, k=n: run(k, args.batch, m), args.repeat)
        print(
            f"{mode:12s} {n / seconds:12,.0f} records/s   state written {written / n:6.1f} B/record"
        )
    log = list(_LOG)  # the last mode's records: the most fragmented state
    seconds, _ = _best(lambda: _replay(log), args.repeat)
    print(f"{'replay':12s} {len(log) / seconds:12,.0f} state records/s ({len(log)} records)")


def _replay(log: list[tuple[bytes, bytes]]) -> int:
    replay = ShareStateReplay()
    for key, value in log:
        replay.apply_bytes(key, value)
    return len(replay.states())


if __name__ == "__main__":
    main()
