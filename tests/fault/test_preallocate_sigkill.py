"""kill -9 of a real ``riverbed broker`` while acks=all producers write small batches into
pre-zeroed segment space (:mod:`riverbed.storage.preallocate`), then a restart.

Small acknowledged batches (one record each, ``linger.ms=0``) keep every partition's
fsyncs small, so each active segment carries a zero window when the broker is killed
mid-stream (requests in flight).  After the restart: every acknowledged record is at the
offset its delivery report named, nothing served is zeros or outside what was sent, the
segment files end at their logical end (the zero tail was cut), and the broker logged
no WARNING or ERROR about a torn tail or corruption (the window is preallocated space,
cut at INFO).  One kill, ~10 s on the shared box.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from riverbed.testing.broker_process import BrokerProcess, free_port, wait_until
from riverbed.testing.scenarios.transactions import read_all

TOPIC = "z"
PARTITIONS = 2
KILL_AFTER = 1500


def test_kill_mid_produce_into_zero_windows_then_restart(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data", free_port(), tmp_path / "broker.log")
    broker.start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        for fut in admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)]).values():
            fut.result(30)
        acked: dict[tuple[int, int], bytes] = {}
        lock = threading.Lock()

        def delivered(err: object, msg: object) -> None:
            if err is None:
                with lock:
                    acked[(msg.partition(), msg.offset())] = msg.value()  # type: ignore[attr-defined]

        producer = Producer(
            {
                "bootstrap.servers": broker.bootstrap_servers,
                "acks": "all",
                "linger.ms": 0,
                "enable.idempotence": False,
                "message.timeout.ms": 5_000,
                "retries": 0,
            }
        )
        sent = 0

        def produce_some() -> None:
            nonlocal sent
            for _ in range(20):
                producer.produce(
                    TOPIC,
                    value=b"v-%08d-" % sent + b"x" * 200,
                    partition=sent % PARTITIONS,
                    on_delivery=delivered,
                )
                sent += 1
            producer.poll(0.01)

        wait_until(lambda: len(acked) >= KILL_AFTER, 60, "acknowledged records", produce_some)
        windows = [
            p
            for p in (tmp_path / "data").glob(f"{TOPIC}-*/*.log")
            if os.path.getsize(p) >= 256 * 1024  # far past what was written: the window
        ]
        assert windows, "the active segments should carry a zero window"
        broker.kill()  # requests in flight, windows in the files
        producer.flush(10)  # the rest fail (the broker is gone); acked stays as it was
        with lock:
            acknowledged = dict(acked)
        broker.log_level = "INFO"
        broker.start()
        records = read_all(broker.bootstrap_servers, TOPIC, "read_uncommitted", PARTITIONS, 60)
        stored = {(p, o): v for p, o, v in records}
        for key, value in acknowledged.items():
            assert stored.get(key) == value, f"acknowledged record at {key} lost or moved"
        for value in stored.values():
            assert value.startswith(b"v-") and value.count(0) == 0, "served zeros"
        log = broker.log_path.read_text(errors="replace")
        restart = log.split("--- start #2", 1)[1]
        bad = [
            line
            for line in restart.splitlines()
            if (" WARNING " in line or " ERROR " in line)
            and ("torn" in line or "corrupt" in line.lower() or "OFFLINE" in line)
        ]
        assert not bad, "\n".join(bad)
        assert "preallocated zeros" in restart
    finally:
        broker.close()
