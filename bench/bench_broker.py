"""Produce/consume throughput of the broker with confluent-kafka (100-byte messages).

    .venv/bin/python bench/bench_broker.py [--messages 1000000] [--size 100] [--acks all]

Starts an EmbeddedBroker on a temporary data dir, creates a one-partition topic, produces
with linger.ms=5, then consumes everything back with assign(); prints msg/s and MB/s for
each phase.  Broker and client share the machine's cores, as in the field notes.
"""

from __future__ import annotations

import argparse
import tempfile
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from riverbed.testing.embedded import EmbeddedBroker


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--acks", default="all")
    args = parser.parse_args()
    payload = b"x" * args.size
    with tempfile.TemporaryDirectory() as data_dir, EmbeddedBroker(data_dir) as broker:
        bootstrap = broker.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("bench", 1, 1)])["bench"].result(30)
        producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "linger.ms": 5,
                "acks": args.acks,
                "batch.size": 1_000_000,
                "queue.buffering.max.messages": 2_000_000,
            }
        )
        started = time.perf_counter()
        for _ in range(args.messages):
            try:
                producer.produce("bench", payload, partition=0)
            except BufferError:
                producer.poll(0.01)
                producer.produce("bench", payload, partition=0)
        assert producer.flush(120) == 0
        elapsed = time.perf_counter() - started
        print(
            f"produce: {args.messages / elapsed:,.0f} msg/s "
            f"{args.messages * args.size / elapsed / 1e6:,.1f} MB/s (acks={args.acks})"
        )
        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "bench",
                "enable.auto.commit": False,
                "fetch.max.bytes": 52_428_800,
            }
        )
        consumer.assign([TopicPartition("bench", 0, 0)])
        got = 0
        started = time.perf_counter()
        while got < args.messages:
            for msg in consumer.consume(10_000, timeout=1.0):
                if msg.error() is None:
                    got += 1
        elapsed = time.perf_counter() - started
        consumer.close()
        print(f"consume: {got / elapsed:,.0f} msg/s {got * args.size / elapsed / 1e6:,.1f} MB/s")


if __name__ == "__main__":
    main()
