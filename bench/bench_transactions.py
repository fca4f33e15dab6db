"""Transactional produce and read_committed consume of Riverbed next to Apache Kafka.

Both brokers run for the whole benchmark: ``riverbed broker`` in a subprocess on a temp
data dir (or in-process with ``--broker embedded``) and Kafka 4.1.1
(``riverbed.testing.kafka_reference``, KRaft, single node).  Runs alternate between them
(riverbed, kafka, riverbed, kafka, ...) so slow drifts in the box's load hit both alike;
the load average is printed before and after.  One run, per peer:

* **produce, transactions of N records** (``--txn-sizes``, default 100 and 10,000): a
  fresh confluent-kafka transactional producer (``linger.ms=5``, ``batch.size=1 MiB``,
  ``batch.num.messages=10000``, no compression) on a fresh topic (``--partitions``,
  default 4) runs ``begin_transaction()``, N ``produce()`` calls of ``--value-size`` bytes
  (default 100) round-robin over the partitions, ``commit_transaction()``, until
  ``--records`` records are committed.  Timed from the first ``begin_transaction()`` to the
  last commit's return (``init_transactions()`` and one warm-up transaction are not
  timed).  Prints records/s and transactions/s;
* **read_committed consume**: a fresh ``isolation.level=read_committed`` consumer assigned
  every partition of the largest-transaction topic reads all its committed records
  (control batches are skipped by the client); timed from ``assign()`` to the last record.

Then medians over ``--repeat`` runs and the ratio Riverbed/Kafka (above 1: Riverbed faster).
Client and broker share the machine's cores: compare ratios within one run.

``--before-src DIR`` adds a peer ``before``: ``riverbed broker`` importing ``riverbed`` from
another source tree (``PYTHONPATH``, e.g. ``git worktree add /tmp/rb-before <commit>`` and
``--before-src /tmp/rb-before/src --peers riverbed,before``), alternating with the others,
for a same-run A/B of a change.  Peer ``riverbed-nofsync`` is a second Riverbed broker on
Kafka's flush policy (``flush.messages`` / ``flush.ms`` at their maximum: acknowledged from
the page cache, as Kafka at its defaults, the transaction coordinator's records included):
the same durability as the Kafka peer.

Run: ``.venv/bin/python bench/bench_transactions.py [--repeat 5] [--records 500000]
[--txn-sizes 100,10000] [--broker subprocess|embedded]
[--peers riverbed,kafka,before,riverbed-nofsync]
[--before-src DIR]``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import time
import uuid
from dataclasses import dataclass

from _bench_common import NO_FSYNC
from bench_produce_consume import (
    CONSUMER_SETTINGS,
    create_topic,
    kafka_reference,
    riverbed_embedded,
    riverbed_subprocess,
)
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

CONSUME_DEADLINE_S = 120.0


@dataclass(frozen=True, slots=True)
class Run:
    peer: str
    what: str  # "txn100", "txn10000", "consume"
    records: int
    transactions: int
    seconds: float

    @property
    def records_per_s(self) -> float:
        return self.records / self.seconds

    @property
    def transactions_per_s(self) -> float:
        return self.transactions / self.seconds


def produce_transactions(
    bootstrap: str, topic: str, partitions: int, txn_size: int, records: int, value_size: int
) -> tuple[int, int, float]:
    """Records committed, transactions, seconds for ``records`` in transactions of ``txn_size``."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": f"bench-{uuid.uuid4().hex[:12]}",
            "linger.ms": 5,
            "batch.size": 1 << 20,
            "batch.num.messages": 10_000,
            "compression.type": "none",
        }
    )
    value = os.urandom(value_size)
    send, poll = producer.produce, producer.poll

    def one_transaction(count: int) -> None:
        producer.begin_transaction()
        for i in range(count):
            while True:
                try:
                    send(topic, value=value, partition=i % partitions)
                    break
                except BufferError:  # the client's queue is full: let it drain
                    poll(0.001)
        producer.commit_transaction(60)

    producer.init_transactions(60)
    one_transaction(min(txn_size, 1_000))  # warm-up: connections, partitions, metadata
    transactions = max(1, records // txn_size)
    start = time.perf_counter()
    for _ in range(transactions):
        one_transaction(txn_size)
    elapsed = time.perf_counter() - start
    return transactions * txn_size, transactions, elapsed


def consume_committed(bootstrap: str, topic: str, expected: int) -> float:
    """Seconds for a read_committed consumer to read ``expected`` records of ``topic``."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{topic}",
            **CONSUMER_SETTINGS,
            "isolation.level": "read_committed",
        }
    )
    try:
        metadata = consumer.list_topics(topic, timeout=10).topics[topic]
        assignment = [TopicPartition(topic, p, OFFSET_BEGINNING) for p in metadata.partitions]
        left = expected
        deadline = time.monotonic() + CONSUME_DEADLINE_S
        start = time.perf_counter()
        consumer.assign(assignment)
        while left > 0:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"read {expected - left}/{expected} committed records "
                    f"in {CONSUME_DEADLINE_S:.0f} s"
                )
            batch = consumer.consume(min(10_000, left), 0.1)
            for msg in batch:
                if msg.error() is not None:
                    raise RuntimeError(str(msg.error()))
            left -= len(batch)
        elapsed = time.perf_counter() - start
        if left < 0:
            raise RuntimeError(f"{topic}: {-left} records more than committed")
        return elapsed
    finally:
        consumer.close()


def records_for(txn_size: int, records: int) -> int:
    """Transactions under 1,000 records commit a tenth of ``--records`` (else they dominate)."""
    return records // 10 if txn_size < 1_000 else records


def one_run(peer: str, bootstrap: str, args: argparse.Namespace, sizes: list[int]) -> list[Run]:
    """Every transaction size, then a read_committed read of the largest one's topic."""
    runs: list[Run] = []
    consume_topic, consume_records = "", 0
    for txn_size in sizes:
        topic = f"bench-txn{txn_size}-{int(time.time() * 1000)}"
        create_topic(bootstrap, topic, args.partitions)
        records, transactions, seconds = produce_transactions(
            bootstrap,
            topic,
            args.partitions,
            txn_size,
            records_for(txn_size, args.records),
            args.value_size,
        )
        runs.append(Run(peer, f"txn{txn_size}", records, transactions, seconds))
        print_run(runs[-1])
        if txn_size == max(sizes):  # the warm-up transaction is committed too
            consume_topic, consume_records = topic, records + min(txn_size, 1_000)
    seconds = consume_committed(bootstrap, consume_topic, consume_records)
    runs.append(Run(peer, "consume", consume_records, 0, seconds))
    print_run(runs[-1])
    return runs


def print_run(r: Run, label: str = "") -> None:
    txns = f"{r.transactions_per_s:>9,.1f} txn/s" if r.transactions else " " * 15
    print(
        f"{label}{r.peer:<9} {r.what:<9} {r.records_per_s:>11,.0f} records/s {txns}  "
        f"({r.records:,} records, {r.seconds:.2f} s)",
        flush=True,
    )


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--records",
        type=int,
        default=500_000,
        help="records per transaction size (100-record transactions: a tenth of it)",
    )
    parser.add_argument("--txn-sizes", default="100,10000")
    parser.add_argument("--value-size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--broker", choices=("subprocess", "embedded"), default="subprocess")
    parser.add_argument("--peers", default="riverbed,kafka")
    parser.add_argument("--before-src", help="source tree of the 'before' peer (PYTHONPATH)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.txn_sizes.split(",")]
    print(
        f"{args.records:,} records per transaction size ({args.records // 10:,} for "
        f"transactions under 1,000 records), {args.value_size} B values, {args.partitions} "
        f"partitions, {args.repeat} alternating runs; {load()}",
        flush=True,
    )
    runs: list[Run] = []
    with contextlib.ExitStack() as stack:
        peers: dict[str, str] = {}
        for peer in args.peers.split(","):
            if peer == "riverbed":
                ours = (
                    riverbed_embedded() if args.broker == "embedded" else riverbed_subprocess(False)
                )
                peers[peer] = stack.enter_context(ours)
            elif peer == "kafka":
                peers[peer] = stack.enter_context(kafka_reference())
            elif peer == "riverbed-nofsync":
                peers[peer] = stack.enter_context(riverbed_subprocess(False, config=NO_FSYNC))
            elif peer == "before" and args.before_src:
                peers[peer] = stack.enter_context(riverbed_subprocess(False, args.before_src))
            else:
                parser.error(f"unknown peer {peer!r}")
        for _ in range(args.repeat):
            for peer, bootstrap in peers.items():
                runs.extend(one_run(peer, bootstrap, args, sizes))
    print(f"\nmedian of {args.repeat} runs; {load()}")
    medians = {}
    for key in dict.fromkeys((r.peer, r.what) for r in runs):
        same = [r for r in runs if (r.peer, r.what) == key]
        seconds = statistics.median(r.seconds for r in same)
        medians[key] = Run(key[0], key[1], same[0].records, same[0].transactions, seconds)
        print_run(medians[key])
    print()
    for what in dict.fromkeys(r.what for r in runs):
        ours_run = medians.get(("riverbed", what))
        for other in ("kafka", "before", "riverbed-nofsync"):
            theirs = medians.get((other, what))
            if ours_run and theirs:
                ratio = ours_run.records_per_s / theirs.records_per_s
                print(f"riverbed/{other:<6} {what:<9} x{ratio:.2f}")


if __name__ == "__main__":
    main()
