"""``share.isolation.level`` (a group config): read_committed share groups never get the
records of aborted transactions; read_uncommitted ones get everything."""

from __future__ import annotations

import time

from confluent_kafka import Producer
from share_helpers import close_all, create_topic, poll, set_group_configs, share_consumer

from riverbed.testing.broker_process import BrokerProcess


def consume(bootstrap: str, group: str, want: int, settle_s: float = 2.0) -> list[bytes]:
    consumer = share_consumer(bootstrap, group, "txn")
    got: list[bytes] = []
    try:
        deadline = time.monotonic() + 60
        quiet_until = None
        while quiet_until is None or time.monotonic() < quiet_until:
            assert time.monotonic() < deadline, got
            msgs = poll(consumer, 0.2)
            got += [m.value() or b"" for m in msgs]
            for m in msgs:
                consumer.acknowledge(m)
            if msgs:
                consumer.commit_sync(30)
            if quiet_until is None and len(got) >= want:
                quiet_until = time.monotonic() + settle_s  # nothing more may come
    finally:
        close_all([consumer])
    return got


def test_read_committed_share_groups_skip_aborted_transactions(
    share_broker: BrokerProcess,
) -> None:
    bs = share_broker.bootstrap_servers
    create_topic(bs, "txn", 1)
    producer = Producer({"bootstrap.servers": bs, "transactional.id": "share-txn"})
    producer.init_transactions(60)
    for outcome in ("commit", "abort", "commit"):
        producer.begin_transaction()
        for i in range(3):
            producer.produce("txn", value=f"{outcome}-{i}".encode(), partition=0)
        producer.flush(60)
        if outcome == "commit":
            producer.commit_transaction(60)
        else:
            producer.abort_transaction(60)
    for group, level in (("rc", "read_committed"), ("ru", "read_uncommitted")):
        set_group_configs(
            bs, group, share_auto_offset_reset="earliest", share_isolation_level=level
        )
    committed = consume(bs, "rc", 6)
    assert sorted(committed) == sorted([f"commit-{i}".encode() for i in range(3)] * 2)
    everything = consume(bs, "ru", 9)
    assert sorted(everything) == sorted(
        [f"commit-{i}".encode() for i in range(3)] * 2 + [f"abort-{i}".encode() for i in range(3)]
    )
