"""Screenshots of every console page, for docs/console/*.png.

    python -m riverbed.console.screenshots [OUT_DIR]      (default: docs/console)

Starts a private ``riverbed broker`` child process (:class:`BrokerProcess`), seeds it with
:func:`seed` (JSON orders on two partitions, a consumer group with lag, an open
transaction, a CDC position topic), starts the console on a background thread
(:class:`ConsoleServer`), and visits each page of :data:`PAGES` in headless Chromium
(Debian's ``/usr/bin/chromium`` driven by selenium through ``/usr/bin/chromedriver``),
saving ``<name>.png``.  The browser test (tests/integration/console) uses the same pieces.
Needs the ``chromium`` and ``chromium-driver`` packages and selenium (dev extra).
"""

from __future__ import annotations

import json
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from riverbed.console.server import ConsoleServer

TOPIC = "orders"
GROUP = "billing"
TRANSACTIONAL_ID = "order-writer"
CDC_TOPIC = "shop.cdc-offsets"
SHARE_TOPIC = "jobs"
SHARE_GROUP = "dispatch"
ORDERS = 30
CONSUMED = 12
"""The group commits offset ``CONSUMED`` on partition 0, so its lag there is the partition's
high watermark minus ``CONSUMED``."""

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


@dataclass(frozen=True, slots=True)
class Seeded:
    """What :func:`seed` left: high watermark per partition of :data:`TOPIC` and the
    group's lag on partition 0 (committed :data:`CONSUMED`)."""

    high_watermarks: dict[int, int]
    lag: int


def _conf(bootstrap: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Client settings with librdkafka's log lines routed to a silent Python logger."""
    from riverbed.cli.kafka_admin import client_config

    return {**client_config(bootstrap), **(extra or {})}


def order(i: int) -> dict[str, Any]:
    """Order ``i`` as produced (key ``order-<i>``, a JSON value)."""
    return {"order_id": i, "customer": f"c{i % 7}", "amount": round(9.5 * i, 2), "items": [i]}


def seed(bootstrap: str) -> tuple[Seeded, list[Callable[[], object]]]:
    """Produce, commit, open a transaction (left Ongoing), join share group
    :data:`SHARE_GROUP` (a member that received some of :data:`SHARE_TOPIC`); returns what
    was seeded and the calls that end the transaction and the share member, which the
    caller makes when done (until then both stay listed)."""
    from confluent_kafka import Consumer, Producer, ShareConsumer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient(_conf(bootstrap))
    futures = admin.create_topics(
        [
            NewTopic(TOPIC, 2, 1),
            NewTopic(SHARE_TOPIC, 1, 1),
            NewTopic(CDC_TOPIC, 1, 1, config={"cleanup.policy": "compact"}),
        ]
    )
    for fut in futures.values():
        fut.result(timeout=60)
    producer = Producer(_conf(bootstrap, {"linger.ms": 5}))
    for i in range(ORDERS):
        producer.produce(
            TOPIC, json.dumps(order(i)).encode(), f"order-{i}".encode(), partition=i % 2
        )
    producer.produce(
        CDC_TOPIC,
        json.dumps({"lsn": 123456, "txId": 771}).encode(),
        json.dumps(["shop", {"server": "shop"}]).encode(),
    )
    if producer.flush(60) != 0:
        raise RuntimeError("seeding: records not delivered within 60s")
    consumer = Consumer(_conf(bootstrap, {"group.id": GROUP}))
    consumer.commit(offsets=[TopicPartition(TOPIC, 0, CONSUMED)], asynchronous=False)
    consumer.close()
    txn = Producer(_conf(bootstrap, {"transactional.id": TRANSACTIONAL_ID}))
    txn.init_transactions(60)
    txn.begin_transaction()
    txn.produce(TOPIC, b'{"order_id": -1}', b"pending", partition=1)
    txn.flush(60)
    share = ShareConsumer(_conf(bootstrap, {"group.id": SHARE_GROUP}))
    share.subscribe([SHARE_TOPIC])
    received: list[Any] = []
    deadline = time.monotonic() + 120
    while not received:  # it starts at the latest offset: produce until some arrive
        if time.monotonic() > deadline:
            raise RuntimeError(f"seeding: share group {SHARE_GROUP} received nothing in 120s")
        received.extend(share.poll(0.5) or [])
        if not received:
            for i in range(10):
                producer.produce(SHARE_TOPIC, json.dumps({"job": i}).encode())
            producer.flush(30)
    share.commit_sync(30)
    ends = {}
    for p in (0, 1):
        _low, high = Consumer(
            _conf(bootstrap, {"group.id": "riverbed-seed-probe"})
        ).get_watermark_offsets(TopicPartition(TOPIC, p), timeout=30)
        ends[p] = high
    return Seeded(ends, ends[0] - CONSUMED), [lambda: txn.abort_transaction(30), share.close]


PAGES = (
    ("topics", "/topics"),
    ("topic", f"/topics/{TOPIC}"),
    ("messages", f"/topics/{TOPIC}/messages?partition=0&key=order-4"),
    ("groups", "/groups"),
    ("share-groups", "/share-groups"),
    ("transactions", "/transactions"),
    ("transaction", f"/transactions/{TRANSACTIONAL_ID}"),
    ("throughput", "/throughput"),
    ("connectors", "/connectors"),
)
"""``(screenshot name, path)`` for every page."""


def chrome(width: int = 1280, height: int = 900) -> Any:
    """A headless Chromium WebDriver (Debian's chromium and chromedriver)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(arg)
    options.add_argument(f"--window-size={width},{height}")
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


@contextmanager
def seeded_console(
    workdir: Path, pipeline_urls: Sequence[str] = ()
) -> Iterator[tuple[ConsoleServer, Seeded]]:
    """A seeded broker child process and a console on it (sampling every second, scraping
    ``pipeline_urls``), both stopped on exit."""
    from riverbed.testing.broker_process import BrokerProcess, free_port

    broker = BrokerProcess(workdir / "data", free_port(), workdir / "broker.log")
    broker.start(timeout_s=180)
    closers: list[Callable[[], object]] = []
    try:
        seeded, closers = seed(broker.bootstrap_servers)
        console = ConsoleServer(
            broker.bootstrap_servers,
            "127.0.0.1",
            free_port(),
            pipeline_urls,
            sample_interval_s=1.0,
        )
        console.start()
        try:
            yield console, seeded
        finally:
            console.stop()
    finally:
        for close in closers:
            close()
        broker.close()


def _traffic(bootstrap: str, stop: threading.Event) -> None:
    """Produce a growing trickle of orders until ``stop`` so the throughput chart moves."""
    from confluent_kafka import Producer

    producer = Producer(_conf(bootstrap, {"linger.ms": 5}))
    step = 0
    while not stop.is_set():
        step = min(step + 1, 20)
        for i in range(10 * step):
            producer.produce(TOPIC, json.dumps(order(1000 + i)).encode(), partition=i % 2)
        producer.flush(30)
        time.sleep(0.5)  # pacing the trickle, not waiting on a condition
    producer.flush(30)


def capture(out_dir: Path) -> list[Path]:
    """Screenshot every page of :data:`PAGES` into ``out_dir``; returns the files."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, seeded_console(Path(tmp)) as (console, _):
        driver = chrome()
        try:
            stop = threading.Event()
            producing = threading.Thread(target=_traffic, args=(console.bootstrap, stop))
            producing.start()
            time.sleep(6)  # a few sampler points for the throughput chart (not a test wait)
            files = []
            try:
                for name, path in PAGES:
                    driver.get(console.url + path)
                    target = out_dir / f"{name}.png"
                    driver.save_screenshot(str(target))
                    files.append(target)
            finally:
                stop.set()
                producing.join(60)
            return files
        finally:
            driver.quit()


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    out = Path(args[0]) if args else Path("docs/console")
    for path in capture(out):
        print(path)


if __name__ == "__main__":
    main()
