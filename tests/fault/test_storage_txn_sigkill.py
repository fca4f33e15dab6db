"""SIGKILL a transactional writer at random moments (between data and marker, mid-roll):
after each restart the LSO, the open transactions, the aborted-transaction indexes and
what a read_committed consumer sees must be exactly what the recovered log's own batches
say, and every fsync-acknowledged batch and marker must be there."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from riverbed.protocol.records import iter_batches_with_records
from riverbed.storage import LogConfig, LogManager, PartitionLog
from riverbed.storage.transactions import read_marker
from riverbed.storage.txn_index import AbortedTxn
from riverbed.testing.read_committed import committed_records

CONFIG = "LogConfig(segment_bytes=2048, index_interval_bytes=256)"

WRITER = textwrap.dedent(f"""
    import random, sys
    from pathlib import Path
    from riverbed.protocol.records import build_batch
    from riverbed.storage import LogConfig, LogManager

    mgr = LogManager(Path(sys.argv[1]))
    log = mgr.get_or_create("t", 0, {CONFIG})
    rng = random.Random(int(sys.argv[2]))
    seq = {{pid: (e.batches[-1].last_seq + 1 if e.batches else 0, e.producer_epoch)
           for pid, e in log.producers.entries.items()}}
    i = 0
    while True:
        pid = rng.choice([1, 2, 3, 4])
        s, epoch = seq.get(pid, (0, 0))
        if pid in log.ongoing_transactions() and rng.random() < 0.3:
            r = log.append_control_marker(pid, epoch, rng.random() < 0.5, 0)
            kind = "M"
        else:
            i += 1
            r = log.append(build_batch([(None, f"{{sys.argv[2]}}-{{i}}".encode(), 1)],
                                       producer_id=pid, producer_epoch=epoch,
                                       base_sequence=s, is_transactional=True))
            seq[pid] = (s + 1, epoch)
            kind = "D"
        log.flush_future(r.last_offset).result()
        sys.stdout.write(f"{{kind}} {{pid}} {{r.last_offset}}\\n")
        sys.stdout.flush()
""")


def _expected(log: PartitionLog) -> tuple[dict[int, int], list[AbortedTxn], list[bytes]]:
    """Open transactions, aborted transactions and committed values, from the batches."""
    open_txn: dict[int, int] = {}
    data: dict[int, list[tuple[int, bytes]]] = {}
    aborted: list[AbortedTxn] = []
    committed: list[tuple[int, bytes]] = []
    offset = 0
    while offset < log.log_end_offset:
        for header, records in iter_batches_with_records(log.read(offset, 1 << 20).records):
            offset = header.next_offset
            pid = header.producer_id
            if header.is_control:
                marker = read_marker(log.read(header.base_offset, 1).records[: header.size])
                first = open_txn.pop(pid, header.base_offset)
                if marker.is_abort:
                    others = list(open_txn.values())
                    aborted.append(
                        AbortedTxn(
                            pid,
                            first,
                            header.base_offset,
                            min(others) if others else header.base_offset + 1,
                        )
                    )
                else:
                    committed.extend((o, v) for o, v in data.get(pid, []))
                data.pop(pid, None)
                continue
            open_txn.setdefault(pid, header.base_offset)
            data.setdefault(pid, []).extend((r.offset, r.value or b"") for r in records)
    lso = min(open_txn.values()) if open_txn else log.log_end_offset
    return open_txn, aborted, [v for o, v in sorted(committed) if o < lso]


def test_sigkill_mid_transaction_recovers_a_consistent_lso(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    rng = random.Random(9)
    acked: dict[int, tuple[str, int]] = {}
    opened_at_kill = 0
    for round_ in range(4):
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(data_dir), str(round_)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        deadline = time.monotonic() + rng.uniform(0.8, 2.5)
        try:
            while time.monotonic() < deadline:
                line = proc.stdout.readline()
                if not line:
                    break
                kind, pid, last = line.split()
                acked[int(last)] = (kind, int(pid))
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        mgr = LogManager(data_dir)
        log = mgr.get_or_create("t", 0, LogConfig(segment_bytes=2048, index_interval_bytes=256))
        try:
            assert log.log_end_offset > max(acked)
            open_txn, aborted, committed = _expected(log)
            assert log.ongoing_transactions() == open_txn
            opened_at_kill += bool(open_txn)
            assert log.last_stable_offset == (
                min(open_txn.values()) if open_txn else log.log_end_offset
            )
            assert log.collect_aborted_transactions(0, log.log_end_offset) == aborted
            assert [r.value for r in committed_records(log)] == committed
            for at, (what, producer) in acked.items():
                header = next(iter_batches_with_records(log.read(at, 1).records))[0]
                assert header.producer_id == producer and header.is_control == (what == "M")
        finally:
            mgr.close()
    assert len(log.segments()) > 3 and acked and opened_at_kill
