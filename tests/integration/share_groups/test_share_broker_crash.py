"""A broker SIGKILLed in the middle of a share group's work: nothing ACCEPTed (and
acknowledged by a successful ``commit_sync``) is delivered again, nothing is lost.

Share-partition state is replayed from ``__share_group_state`` at the restart; locks are
not persisted, so what was in flight but not acknowledged comes back (delivery count
kept), which is allowed.
"""

from __future__ import annotations

import time

from confluent_kafka import AcknowledgeType
from confluent_kafka.admin import AdminClient, ConfigResource
from share_helpers import close_all, create_topic, poll, produce, share_consumer, warm_up

from riverbed.testing.broker_process import BrokerProcess

TOTAL = 200


def test_broker_kill_9_mid_stream_loses_nothing_and_redelivers_nothing_accepted(
    share_broker: BrokerProcess,
) -> None:
    bs = share_broker.bootstrap_servers
    create_topic(bs, "jobs", 2)
    consumer = share_consumer(bs, "crash-workers", "jobs")
    want = {f"j{i}".encode() for i in range(TOTAL)}
    accepted: set[bytes] = set()  # ACCEPTed and confirmed by commit_sync
    delivered: set[bytes] = set()
    try:
        warm_up([consumer], bs, "jobs", 2)
        produce(bs, "jobs", sorted(want), 2)
        deadline = time.monotonic() + 60
        while len(accepted) < TOTAL // 3:
            assert time.monotonic() < deadline, len(accepted)
            msgs = poll(consumer, 0.2)
            for m in msgs:
                delivered.add(m.value() or b"")
                consumer.acknowledge(m, AcknowledgeType.ACCEPT)
            if msgs:
                results = consumer.commit_sync(30)
                ok = {(tp.topic, tp.partition) for tp, err in results.items() if err is None}
                accepted |= {m.value() or b"" for m in msgs if (m.topic(), m.partition()) in ok}
        share_broker.kill()
        share_broker.start(timeout_s=120)
        again: list[bytes] = []
        deadline = time.monotonic() + 120
        while not want <= delivered:
            assert time.monotonic() < deadline, f"missing {len(want - delivered)} records"
            try:
                msgs = poll(consumer, 0.2)
            except Exception:  # the client may report the lost connection once
                continue
            for m in msgs:
                value = m.value() or b""
                again += [value] if value in accepted else []
                delivered.add(value)
                consumer.acknowledge(m, AcknowledgeType.ACCEPT)
            if msgs:
                consumer.commit_sync(30)
        assert not again, f"ACCEPTed records delivered again: {sorted(again)[:10]}"
        assert delivered == want
        assert "restored" in share_broker.tail(200), "the restart replayed no share state"
        # never compacted: every ShareUpdate of a share partition has the same key
        admin = AdminClient({"bootstrap.servers": bs})
        resource = ConfigResource(ConfigResource.Type.TOPIC, "__share_group_state")
        configs = admin.describe_configs([resource])[resource].result(timeout=30)
        assert configs["cleanup.policy"].value == "delete"
        assert configs["retention.ms"].value == "-1"
    finally:
        close_all([consumer])
