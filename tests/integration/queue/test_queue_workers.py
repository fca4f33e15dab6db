"""riverbed.queue workers against Kafka 4.4 share groups: outcomes, retries, stop, crash."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from collections import defaultdict

import pytest
from queue_helpers import DEADLINE_S, QueueNames, produce, read_all, wait_until

from riverbed.queue import Delivery, Outcome, QueueWorkers, RejectDelivery, WorkerSettings
from riverbed.testing.kafka_share_reference import enable_dead_letters

# The Apache Kafka runs here repeat the Riverbed ones against Kafka 4.4: gated
# (tests/conftest.py, -m kafka runs them); test_dead_letter_headers.py stays the queue
# area's Kafka differential in the default suite.
pytestmark = pytest.mark.kafka_variant


def test_accept_release_reject_across_four_workers(
    queue_names: QueueNames, dead_letter_topic: str
) -> None:
    values = [f"m{i}".encode() for i in range(40)]
    produce(queue_names.bootstrap, queue_names.topic, values)
    lock = threading.Lock()
    counts: dict[bytes, list[int]] = defaultdict(list)
    outcomes: dict[bytes, list[Outcome]] = defaultdict(list)
    threads: set[str] = set()

    def handle(delivery: Delivery) -> None:
        assert delivery.value is not None
        with lock:
            counts[delivery.value].append(delivery.delivery_count)
            threads.add(threading.current_thread().name)
        if delivery.value == b"m7" and delivery.delivery_count == 1:
            raise RuntimeError("transient failure")  # RELEASE, then redelivered
        if delivery.value == b"m8":
            raise RuntimeError("always fails")  # RELEASE, then REJECT at max_attempts
        if delivery.value == b"m9":
            raise RejectDelivery()  # REJECT at once
        time.sleep(0.01)

    def on_outcome(delivery: Delivery, outcome: Outcome, detail: str) -> None:
        assert delivery.value is not None
        with lock:
            outcomes[delivery.value].append(outcome)

    settings = WorkerSettings(
        queue_names.bootstrap,
        queue_names.group,
        (queue_names.topic,),
        concurrency=4,
        max_attempts=3,
        retry_backoff_ms=50,
    )
    with QueueWorkers(settings, handle, on_outcome) as workers:
        wait_until(
            lambda: (
                workers.stats.snapshot()["accept"] >= 38 and workers.stats.snapshot()["reject"] >= 2
            ),
            "every record to be accepted or rejected",
        )
    # m8 and m9 stay archived: give the broker a lock period to show they do not come back.
    with QueueWorkers(settings, handle, on_outcome) as again:
        time.sleep(3.0)
        assert again.stats.snapshot() == {"accept": 0, "release": 0, "reject": 0}

    assert counts[b"m7"] == [1, 2]
    assert outcomes[b"m7"] == [Outcome.RELEASE, Outcome.ACCEPT]
    assert counts[b"m8"] == [1, 2, 3]
    assert outcomes[b"m8"] == [Outcome.RELEASE, Outcome.RELEASE, Outcome.REJECT]
    assert outcomes[b"m9"] == [Outcome.REJECT]
    for value in values:
        if value not in (b"m7", b"m8", b"m9"):
            assert outcomes[value] == [Outcome.ACCEPT], value
    assert workers.stats.snapshot() == {"accept": 38, "release": 3, "reject": 2}
    # Kafka 4.4 (KIP-1191) copies both REJECTed records to the group's dead-letter topic.
    dead = dict(read_all(queue_names.bootstrap, dead_letter_topic, 2))
    assert set(dead) == {b"m8", b"m9"}
    assert dead[b"m8"]["__dlq.errors.delivery.count"] == b"3"
    assert dead[b"m9"]["__dlq.errors.delivery.count"] == b"1"
    assert dead[b"m9"]["__dlq.errors.topic"] == queue_names.topic.encode()
    assert dead[b"m9"]["__dlq.errors.group"] == queue_names.group.encode()


_CRASHING_WORKER = textwrap.dedent(
    """
    import os, sys
    from riverbed.queue import QueueWorkers, WorkerSettings

    def handle(delivery):
        print("holding", delivery.value.decode(), delivery.delivery_count, flush=True)
        os._exit(9)  # die holding the record: no acknowledgement, no close

    settings = WorkerSettings(sys.argv[1], sys.argv[2], (sys.argv[3],))
    QueueWorkers(settings, handle).run()
    """
)


def test_crashed_worker_record_is_redelivered(queue_names: QueueNames) -> None:
    produce(queue_names.bootstrap, queue_names.topic, [b"job"])
    crashed = subprocess.run(
        [
            sys.executable,
            "-c",
            _CRASHING_WORKER,
            queue_names.bootstrap,
            queue_names.group,
            queue_names.topic,
        ],
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert crashed.returncode == 9, crashed.stderr
    assert "holding job 1" in crashed.stdout
    died = time.monotonic()
    seen: list[tuple[int, float]] = []

    def handle(delivery: Delivery) -> None:
        seen.append((delivery.delivery_count, time.monotonic() - died))

    settings = WorkerSettings(queue_names.bootstrap, queue_names.group, (queue_names.topic,))
    with QueueWorkers(settings, handle) as workers:
        wait_until(lambda: workers.stats.snapshot()["accept"] == 1, "the redelivery")
    # Kafka 4.4 redelivers a killed consumer's record with delivery_count 2: its share
    # session closes with the connection and releases the record with its count kept, and
    # a ShareFetch that was waiting on that session acquires nothing for the dead member.
    assert seen[0][0] == 2


def test_stop_releases_fetched_records_and_commits(queue_names: QueueNames) -> None:
    produce(queue_names.bootstrap, queue_names.topic, [f"s{i}".encode() for i in range(20)])
    started = threading.Event()
    done: list[bytes] = []

    def slow(delivery: Delivery) -> None:
        started.set()
        time.sleep(0.3)
        assert delivery.value is not None
        done.append(delivery.value)

    settings = WorkerSettings(queue_names.bootstrap, queue_names.group, (queue_names.topic,))
    workers = QueueWorkers(settings, slow).start()
    assert started.wait(DEADLINE_S)
    workers.stop(timeout_s=60)
    first = workers.stats.snapshot()
    assert first["accept"] == len(done) >= 1
    # What the stop did not process was released at once, not held until the lock expired:
    # a fresh worker gets every remaining record, each accepted exactly once overall.
    rest: list[bytes] = []
    with QueueWorkers(settings, lambda d: rest.append(d.value or b"")) as second:
        wait_until(lambda: len(rest) >= 20 - len(done), "the remaining records")
        time.sleep(0.5)
    assert sorted(done + rest) == sorted(f"s{i}".encode() for i in range(20))
    assert second.stats.snapshot()["accept"] == 20 - len(done)


def test_dead_letters_on_riverbed(riverbed_share_bootstrap: str) -> None:
    from riverbed.testing.kafka_share_reference import create_topic, set_share_group_config

    bootstrap = riverbed_share_bootstrap
    create_topic(bootstrap, "dl-source", 1)
    set_share_group_config(bootstrap, "dl-group", {"share.auto.offset.reset": "earliest"})
    enable_dead_letters(bootstrap, "dl-group", "dlq.dl-source")
    produce(bootstrap, "dl-source", [b"poison"])

    def reject(delivery: Delivery) -> None:
        raise RejectDelivery()

    settings = WorkerSettings(bootstrap, "dl-group", ("dl-source",))
    with QueueWorkers(settings, reject) as workers:
        wait_until(lambda: workers.stats.snapshot()["reject"] == 1, "the rejection")
    ((value, headers),) = read_all(bootstrap, "dlq.dl-source", 1)
    assert value == b"poison" and headers["__dlq.errors.delivery.count"] == b"1"


def test_handler_slower_than_the_lock_is_processed_again(queue_names: QueueNames) -> None:
    produce(queue_names.bootstrap, queue_names.topic, [b"slow"])
    lock = threading.Lock()
    seen: list[tuple[str, int]] = []

    def handle(delivery: Delivery) -> None:
        with lock:
            seen.append((threading.current_thread().name, delivery.delivery_count))
        if delivery.delivery_count == 1:
            time.sleep(4.0)  # past the 2 s lock: another worker gets the record meanwhile

    settings = WorkerSettings(
        queue_names.bootstrap, queue_names.group, (queue_names.topic,), concurrency=2
    )
    with QueueWorkers(settings, handle) as workers:
        wait_until(lambda: len(seen) >= 2, "the second delivery")
        time.sleep(3.0)  # the slow handler returns; its late ACCEPT must not kill its worker
        assert all(t.is_alive() for t in workers._threads)
    assert sorted(count for _, count in seen)[:2] == [1, 2]
    assert workers.stats.snapshot()["accept"] >= 1


def test_worker_processes(queue_names: QueueNames) -> None:
    from queue_helpers import fail_first_delivery_of_p3

    from riverbed.queue import QueueWorkerProcesses

    produce(queue_names.bootstrap, queue_names.topic, [f"p{i}".encode() for i in range(20)])
    settings = WorkerSettings(
        queue_names.bootstrap, queue_names.group, (queue_names.topic,), concurrency=2
    )
    with QueueWorkerProcesses(settings, fail_first_delivery_of_p3) as workers:
        wait_until(lambda: workers.stats.snapshot()["accept"] == 20, "20 accepted")
    assert workers.stats.snapshot() == {"accept": 20, "release": 1, "reject": 0}
