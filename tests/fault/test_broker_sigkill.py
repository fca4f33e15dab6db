"""SIGKILL the ``riverbed broker`` process under an idempotent acks=all producer, repeatedly.

Scenario (one test, 6-10 s on the shared 2-core box):

1. start ``riverbed broker`` as a subprocess on a fixed port and data dir, create a
   3-partition topic with the admin client;
2. a confluent-kafka producer (``acks=all``, ``enable.idempotence=true``) sends unique
   values round-robin to the partitions without pausing; after a random number of fresh
   acknowledgements the broker is SIGKILLed mid-stream (requests in flight, batches
   appended but not yet answered) and restarted on the same data dir and port; the *same*
   producer carries on — librdkafka reconnects and retries its in-flight batches with their
   original producer id and sequence numbers, and the broker must recognise those already in
   the log as duplicates (producer state is rebuilt from the log on start);
3. after the last restart the producer flushes, and a consumer reads every partition from
   offset 0 up to its high watermark.

Checks: every acknowledged record is at the offset its delivery report named, and no value
occurs twice anywhere in the log (the application never re-sends a value, so a second copy
could only come from a librdkafka retry that idempotence failed to deduplicate); each
partition's offsets run from 0 to the high watermark without a gap.

How the application handles a fatal producer error (librdkafka raises one if the broker
answers a retry with OUT_OF_ORDER_SEQUENCE_NUMBER or similar after a restart): it does what
a real non-transactional application must — throw the producer away, create a new one (new
producer id) and treat the messages that never got a successful delivery report as failed.
It does *not* re-send them: without transactions a re-send under a new producer id is
at-least-once, since the lost attempt may be in the log.  Such resets are counted and
reported; against a correct broker there are none, and the test asserts that.

No sleeps as synchronisation: every wait is a condition polled against a deadline (the port
accepting, N delivery reports, the consumer reaching the high watermarks).  The broker's
stderr goes to ``broker.log`` in the test's tmp dir; failures quote its tail.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from riverbed.testing.kafka_reference import free_port

TOPIC = "crash"
PARTITIONS = 3
KILLS = 4
ACKS_PER_ROUND = (4_000, 15_000)  # fresh acknowledgements awaited before each kill
FINAL_MESSAGES = 5_000
MAX_OUTSTANDING = 20_000  # produced but not yet reported, so kills hit a full pipeline
VALUE_PAD = b"." * 56
CLI = [sys.executable, "-c", "from riverbed.cli.main import main; main()", "broker"]


def wait_until(condition: Callable[[], bool], timeout_s: float, what: str,
               step: Callable[[], object] | None = None) -> None:
    """Poll ``condition`` (running ``step`` between polls) until true or the deadline."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
        if step is not None:
            step()
        else:
            time.sleep(0.02)  # polling interval only; the condition is what we wait on


class BrokerProcess:
    """``riverbed broker`` as a child process, SIGKILLable and restartable in place."""

    def __init__(self, data_dir: Path, port: int, log_path: Path) -> None:
        self.data_dir = data_dir
        self.port = port
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 30.0) -> None:
        with open(self.log_path, "ab") as log:
            log.write(f"--- start #{self.starts + 1}\n".encode())
            log.flush()
            self.proc = subprocess.Popen(
                [*CLI, "--data-dir", str(self.data_dir),
                 "--listen", self.bootstrap_servers, "--log-level", "WARNING"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            )
        self.starts += 1
        proc = self.proc

        def accepting() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"broker exited with {proc.returncode}:\n{self.tail()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
            except OSError:
                return False
            return True

        wait_until(accepting, timeout_s, f"broker start #{self.starts} to accept connections")

    def kill(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)
        self.proc = None

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.kill()

    def tail(self, lines: int = 30) -> str:
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


@dataclass
class ProduceLedger:
    """What the application knows: values acknowledged (with their offsets) and failed."""

    acked: dict[bytes, tuple[int, int]] = field(default_factory=dict)
    failed: dict[bytes, str] = field(default_factory=dict)
    fatal: list[str] = field(default_factory=list)
    sent: int = 0

    @property
    def outstanding(self) -> int:
        return self.sent - len(self.acked) - len(self.failed)

    def on_delivery(self, err: KafkaError | None, msg: Message) -> None:
        value, partition, offset = msg.value(), msg.partition(), msg.offset()
        assert value is not None
        if err is None:
            assert partition is not None and offset is not None
            self.acked[value] = (partition, offset)
        else:
            self.failed[value] = str(err)

    def on_error(self, err: KafkaError) -> None:
        if err.fatal():
            self.fatal.append(str(err))


class Application:
    """A producing application that survives broker crashes (see the module docstring)."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.ledger = ProduceLedger()
        self.resets = 0
        self._next = 0
        self.producer = self._new_producer()

    def _new_producer(self) -> Producer:
        return Producer({
            "bootstrap.servers": self.bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "reconnect.backoff.ms": 20,
            "reconnect.backoff.max.ms": 200,
            "retry.backoff.ms": 20,
            "retry.backoff.max.ms": 200,
            "message.timeout.ms": 45_000,
            "error_cb": self.ledger.on_error,
        })

    def poll(self, timeout_s: float = 0.0) -> None:
        self.producer.poll(timeout_s)
        if self.ledger.fatal and len(self.ledger.fatal) > self.resets:
            self._reset()

    def _reset(self) -> None:
        """Fatal error: drain the old producer's reports, fail the rest, start anew."""
        self.resets += 1
        old = self.producer
        old.flush(5)
        self.producer = self._new_producer()

    def produce_one(self) -> None:
        i = self._next
        value = b"%09d" % i + VALUE_PAD
        while True:
            try:
                self.producer.produce(
                    TOPIC, value=value, partition=i % PARTITIONS,
                    on_delivery=self.ledger.on_delivery,
                )
                break
            except BufferError:
                self.poll(0.05)
        self._next += 1
        self.ledger.sent += 1
        if i % 256 == 0:
            self.poll()

    def produce_until_acked(self, count: int, timeout_s: float) -> None:
        """Keep producing (pipeline kept full) until ``count`` records are acknowledged."""
        def step() -> None:
            if self.ledger.outstanding < MAX_OUTSTANDING:
                for _ in range(512):
                    self.produce_one()
            self.poll(0.001)

        wait_until(lambda: len(self.ledger.acked) >= count, timeout_s,
                   f"{count} acknowledgements", step)

    def flush(self, timeout_s: float) -> None:
        wait_until(lambda: self.ledger.outstanding == 0, timeout_s,
                   "every delivery report", lambda: self.poll(0.1))


def read_all(bootstrap: str, timeout_s: float) -> dict[int, dict[int, bytes]]:
    """Every record of every partition, from offset 0 to the high watermark."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": "crash-check",
        "enable.auto.commit": False, "enable.partition.eof": False,
    })
    try:
        high = {p: consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=10)[1]
                for p in range(PARTITIONS)}
        consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
        found: dict[int, dict[int, bytes]] = {p: {} for p in range(PARTITIONS)}
        next_offset = dict.fromkeys(range(PARTITIONS), 0)

        def step() -> None:
            for msg in consumer.consume(10_000, 0.5):
                assert msg.error() is None, msg.error()
                value, partition, offset = msg.value(), msg.partition(), msg.offset()
                assert value is not None and partition is not None and offset is not None
                found[partition][offset] = value
                next_offset[partition] = offset + 1

        wait_until(lambda: all(next_offset[p] >= high[p] for p in range(PARTITIONS)),
                   timeout_s, f"the consumer to reach the high watermarks {high}", step)
        return found
    finally:
        consumer.close()


def create_topic(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)]).values():
        future.result(15)


@pytest.mark.slow
def test_sigkilled_broker_keeps_acknowledged_records_exactly_once(tmp_path: Path) -> None:
    seed = int(os.environ.get("RIVERBED_CRASH_SEED", random.randrange(1 << 32)))
    rng = random.Random(seed)
    broker = BrokerProcess(tmp_path / "data", free_port(), tmp_path / "broker.log")
    kills: list[dict[str, Any]] = []
    try:
        broker.start()
        create_topic(broker.bootstrap_servers)
        app = Application(broker.bootstrap_servers)
        for _ in range(KILLS):
            target = len(app.ledger.acked) + rng.randint(*ACKS_PER_ROUND)
            app.produce_until_acked(target, timeout_s=30)
            # Reaching the target can drain the pipeline (every report in); a fresh burst,
            # not yet polled for, guarantees the kill lands with records in flight.
            for _ in range(512):
                app.produce_one()
            kills.append({"acked": len(app.ledger.acked), "outstanding": app.ledger.outstanding})
            broker.kill()
            broker.start()
        for _ in range(FINAL_MESSAGES):
            app.produce_one()
        app.flush(timeout_s=60)
        app.producer.flush(10)
        found = read_all(broker.bootstrap_servers, timeout_s=30)
    except Exception as exc:
        raise AssertionError(f"seed={seed} kills={kills}: {exc}\n{broker.tail()}") from exc
    finally:
        broker.close()

    ledger = app.ledger
    context = (f"seed={seed} kills={kills} resets={app.resets} fatal={ledger.fatal[:3]} "
               f"acked={len(ledger.acked)} failed={len(ledger.failed)}")
    print(context)
    # Every kill happened with work in flight, and production went on after each restart.
    assert all(k["outstanding"] > 0 for k in kills), context
    assert len(ledger.acked) + len(ledger.failed) == ledger.sent, context
    assert len(ledger.acked) > kills[-1]["acked"], f"no progress after the last restart; {context}"
    # No gaps: offsets 0 .. high watermark - 1 all present in every partition.
    for p, records in found.items():
        assert sorted(records) == list(range(len(records))), f"gap in partition {p}; {context}"
    # Every acknowledged record is where its delivery report said it is.
    misplaced = {v: at for v, at in ledger.acked.items() if found[at[0]].get(at[1]) != v}
    assert not misplaced, f"{len(misplaced)} acked records not at their offsets; {context}"
    # Exactly once: no value twice anywhere (the application never re-sends a value).
    values = [v for records in found.values() for v in records.values()]
    duplicates = len(values) - len(set(values))
    assert duplicates == 0, f"{duplicates} duplicated records; {context}"
    # Against a correct broker a restart never makes the idempotent producer fatal.
    assert app.resets == 0 and not ledger.failed, context
