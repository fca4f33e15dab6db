"""Record batch build/parse throughput (riverbed.protocol.records), with peers.

Prints records/s and MB/s (payload bytes: keys + values) for building and reading one
batch of N records with one 3-byte header each, for 100 B and 1 KiB values, uncompressed
and lz4, best of R runs.  ``--peers`` adds aiokafka's record classes (a C extension) and
kafka-python's (pure Python) on the same records, for scale.
Usage: .venv/bin/python bench/bench_records.py [--records N] [--repeat R] [--peers]
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from riverbed.protocol.records import SimpleRecord, build_batch, read_batch


def _best(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _peer_build(module: Any, records: list[SimpleRecord], codec: int) -> bytes:
    builder = module.DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 30,
    )
    for offset, r in enumerate(records):
        builder.append(
            offset, timestamp=r.timestamp, key=r.key, value=r.value, headers=list(r.headers)
        )
    return bytes(builder.build())


def _peer_read(module: Any, buf: bytes) -> list[Any]:
    return [(r.offset, r.key, r.value, r.headers) for r in module.DefaultRecordBatch(buf)]


def _row(who: str, size: int, codec: str, op: str, n: int, payload: int, t: float) -> None:
    print(f"{who:>12} {size:>6} {codec:>5} {op:>6} {n / t:>12,.0f} {payload / t / 1e6:>8.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--peers", action="store_true")
    args = parser.parse_args()
    n = args.records
    peers: dict[str, Any] = {}
    if args.peers:
        import aiokafka.record.default_records as aiokafka_records
        import kafka.record.default_records as kafka_records

        peers = {"aiokafka": aiokafka_records, "kafka-python": kafka_records}
    print(f"{'impl':>12} {'size':>6} {'codec':>5} {'op':>6} {'records/s':>12} {'MB/s':>8}")
    for size in (100, 1024):
        # half random, half zeros: compressible like real payloads
        records = [
            SimpleRecord(
                f"key-{i}".encode(),
                os.urandom(size // 2) + bytes(size - size // 2),
                (("trace", b"abc"),),
                1_700_000_000_000 + i,
            )
            for i in range(n)
        ]
        payload = sum(len(r.key or b"") + len(r.value or b"") for r in records)
        for codec, name in ((0, "none"), (3, "lz4")):
            buf = build_batch(records, compression=codec)
            build = partial(build_batch, records, compression=codec)
            _row("riverbed", size, name, "build", n, payload, _best(build, args.repeat))
            read = partial(read_batch, buf)
            _row("riverbed", size, name, "read", n, payload, _best(read, args.repeat))
            for who, module in peers.items():
                peer_build = partial(_peer_build, module, records, codec)
                _row(who, size, name, "build", n, payload, _best(peer_build, args.repeat))
                peer_read = partial(_peer_read, module, buf)
                _row(who, size, name, "read", n, payload, _best(peer_read, args.repeat))


if __name__ == "__main__":
    main()
