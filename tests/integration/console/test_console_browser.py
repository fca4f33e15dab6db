"""The web console in a real browser: Debian's headless Chromium driven by selenium.

One broker child process, seeded once (:func:`riverbed.console.screenshots.seed`: JSON
orders on two partitions, group ``billing`` committed at offset 12 of partition 0, an
Ongoing transaction, a CDC position topic), one console on a background thread with a
fake pipeline metrics endpoint, one browser.  The test clicks through every page from the
navigation bar and asserts on what it shows, saving a screenshot of each page under
``tmp_path`` (``python -m riverbed.console.screenshots`` regenerates docs/console/*.png).
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, start_http_server
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from riverbed.console.pipelines import SHOWN as PIPELINE_COLUMNS
from riverbed.console.screenshots import (
    CDC_TOPIC,
    CONSUMED,
    GROUP,
    SHARE_GROUP,
    SHARE_TOPIC,
    TOPIC,
    TRANSACTIONAL_ID,
    chrome,
    seeded_console,
)
from riverbed.console.server import ConsoleServer
from riverbed.testing.broker_process import free_port, wait_until

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def pipeline_endpoint() -> Iterator[str]:
    """A running pipeline's /metrics as riverbed.spark.metrics exports it: its own
    instruments (so the names are the exporter's), fed by hand instead of by Spark."""
    from riverbed.spark.metrics import PipelineMetrics

    registry = CollectorRegistry()
    metrics = PipelineMetrics(registry)
    metrics.active.labels("sessions").set(1)
    metrics.input_rows.labels("sessions").inc(4242)
    metrics.batch_id.labels("sessions").set(17)
    metrics.state_rows.labels("sessions", "0:stateStoreSave").set(5)
    metrics.state_rows.labels("sessions", "1:sessionWindow").set(6)
    port = free_port()
    server, thread = start_http_server(port, addr="127.0.0.1", registry=registry)
    yield f"http://127.0.0.1:{port}/metrics"
    server.shutdown()
    thread.join(10)


@pytest.fixture(scope="module")
def console(pipeline_endpoint: str) -> Iterator[tuple[ConsoleServer, Any, str]]:
    with (
        tempfile.TemporaryDirectory() as tmp,
        seeded_console(Path(tmp), [pipeline_endpoint]) as (server, seeded),
    ):
        yield server, seeded, server.bootstrap


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    driver = chrome()
    driver.set_page_load_timeout(120)
    yield driver
    driver.quit()


def _text(driver: Any, css: str) -> str:
    return str(driver.find_element(By.CSS_SELECTOR, css).text)


def _replaced(element: Any) -> Callable[[Any], bool]:
    """Selenium's ``staleness_of``, also taking chromedriver's answer for a node caught
    while its document is being replaced ("Node with given id does not belong to the
    document", a plain WebDriverException) as gone."""

    def gone(_driver: Any) -> bool:
        try:
            element.is_enabled()
        except StaleElementReferenceException:
            return True
        except WebDriverException as exc:
            if "does not belong to the document" in str(exc):
                return True
            raise
        return False

    return gone


def _click(driver: Any, by: str, value: str) -> None:
    """Click, then wait for the next page to replace this one (a form submit returns early)."""
    page = driver.find_element(By.TAG_NAME, "html")
    driver.find_element(by, value).click()
    WebDriverWait(driver, 90).until(_replaced(page))
    WebDriverWait(driver, 90).until(
        lambda d: d.execute_script("return document.readyState") == "complete"
    )


def _nav(driver: Any, name: str) -> None:
    _click(driver, By.LINK_TEXT, name)


def _no_banner(driver: Any) -> None:
    banners = driver.find_elements(By.CSS_SELECTOR, ".banner")
    assert not banners, banners[0].text


def _eventually(check: Callable[[], bool], what: str, driver: Any) -> None:
    def poll() -> bool:
        try:
            return check()
        except Exception:  # a stale element while the page refreshes: look again
            return False

    wait_until(poll, 90, what, step=lambda: time.sleep(0.2))


def test_every_page(console: tuple[ConsoleServer, Any, str], browser: Any, tmp_path: Path) -> None:
    server, seeded, bootstrap = console
    shot = 0

    def screenshot(name: str) -> None:
        nonlocal shot
        shot += 1
        assert browser.save_screenshot(str(tmp_path / f"{shot:02d}-{name}.png"))

    # Topics: names and record counts, then one topic's partitions and configs.
    browser.get(server.url + "/")
    assert browser.title.startswith("Topics")
    names = [a.text for a in browser.find_elements(By.CSS_SELECTOR, "#topics a")]
    assert TOPIC in names and CDC_TOPIC in names
    screenshot("topics")
    _click(browser, By.LINK_TEXT, TOPIC)
    rows = browser.find_elements(By.CSS_SELECTOR, "#partitions tr")[1:]
    shown = {int(r.find_elements(By.TAG_NAME, "td")[0].text): r for r in rows}
    for partition, high in seeded.high_watermarks.items():
        cells = [td.text for td in shown[partition].find_elements(By.TAG_NAME, "td")]
        assert cells[3] == "0" and int(cells[4]) >= high, cells  # log start, high watermark
    assert "cleanup.policy" in _text(browser, "#configs")
    screenshot("topic")

    # Message browser: key search finds the JSON value, pretty-printed.
    _click(browser, By.ID, "browse")
    Select(browser.find_element(By.NAME, "partition")).select_by_value("0")
    browser.find_element(By.NAME, "key").send_keys("order-4")
    _click(browser, By.ID, "go")
    pre = _text(browser, "#messages pre.json")
    assert json.loads(pre)["order_id"] == 4
    assert '\n  "customer": "c4",\n' in pre  # indented, one field per line
    assert _text(browser, "#messages td:nth-child(4)") == "order-4"
    screenshot("messages")
    # ... by offset, and a bad offset is a one-line message, not a traceback.
    browser.get(server.url + f"/topics/{TOPIC}/messages?partition=1&offset=3&limit=2")
    cells = "#messages tr td:nth-child(2)"
    offsets = [td.text for td in browser.find_elements(By.CSS_SELECTOR, cells)]
    assert offsets == ["3", "4"]
    _click(browser, By.ID, "next")
    offsets = [td.text for td in browser.find_elements(By.CSS_SELECTOR, cells)]
    assert offsets == ["5", "6"]
    # ... by timestamp: an ISO-8601 datetime before the seeding starts at the log start.
    browser.get(
        server.url + f"/topics/{TOPIC}/messages?partition=0&timestamp=2000-01-01T00:00:00&limit=1"
    )
    assert [td.text for td in browser.find_elements(By.CSS_SELECTOR, cells)] == ["0"]
    browser.get(server.url + f"/topics/{TOPIC}/messages?partition=0&offset=abc")
    assert _text(browser, "#error") == "offset must be a whole number, got 'abc'"
    browser.get(server.url + "/topics/no-such-topic")
    assert _text(browser, "#error") == "unknown topic 'no-such-topic'"

    # Consumer groups: the lag of billing on partition 0.
    _nav(browser, "Consumer groups")
    _no_banner(browser)
    assert _text(browser, f"#group-{GROUP} .total-lag") == str(seeded.lag)
    lag_row = [td.text for td in browser.find_elements(By.CSS_SELECTOR, "table.lag tr td")]
    assert lag_row == [TOPIC, "0", str(CONSUMED), str(seeded.high_watermarks[0]), str(seeded.lag)]
    screenshot("groups")
    _click(browser, By.LINK_TEXT, GROUP)
    assert browser.title.startswith(f"Consumer group {GROUP}")

    # Share groups: the seeded member, its partition, and its lag where the broker says.
    _nav(browser, "Share groups")
    _no_banner(browser)
    heading = _text(browser, f"#group-{SHARE_GROUP}")
    assert heading.startswith(SHARE_GROUP) and "Stable" in heading
    assert "Members: " in _text(browser, "main")
    row = [td.text for td in browser.find_elements(By.CSS_SELECTOR, "table.lag tr td")]
    assert row[:2] == [SHARE_TOPIC, "0"] and int(row[3]) > 0, row  # log end offset
    notes = browser.find_elements(By.CSS_SELECTOR, ".group-note")
    if notes:  # Riverbed has no DescribeShareGroupOffsets yet: members and partitions only
        assert "DescribeShareGroupOffsets" in notes[0].text
    else:
        assert row[4].isdigit(), row
    screenshot("share-groups")

    # Transactions: the open one, then its description.
    _nav(browser, "Transactions")
    _no_banner(browser)
    assert TRANSACTIONAL_ID in _text(browser, "#transactions")
    assert "Ongoing" in _text(browser, "#transactions")
    screenshot("transactions")
    _click(browser, By.LINK_TEXT, TRANSACTIONAL_ID)
    assert f"{TOPIC}-1" in _text(browser, "#transaction")
    screenshot("transaction")

    # Throughput: produce while the page is open; its script refreshes the chart.
    _nav(browser, "Throughput")
    _no_banner(browser)
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})

    def moving() -> bool:
        for i in range(50):
            producer.produce(TOPIC, b'{"burst": %d}' % i, partition=0)
        producer.flush(30)
        rates = browser.find_elements(By.CSS_SELECTOR, "#throughput tr")
        row = [r for r in rates if r.text.startswith(TOPIC + " ")]
        return bool(row) and float(row[0].find_element(By.CSS_SELECTOR, ".rate").text) > 0

    _eventually(moving, "the throughput page to show records/s > 0 for orders", browser)
    assert browser.find_elements(By.CSS_SELECTOR, "#throughput svg polyline")
    screenshot("throughput")

    # Connectors & pipelines: the CDC position and the scraped pipeline progress.
    _nav(browser, "Connectors & pipelines")
    _no_banner(browser)
    cdc = _text(browser, "#connectors")
    assert CDC_TOPIC in cdc and '"lsn": 123456' in cdc
    pipeline = _text(browser, "table.pipeline")
    cells = [td.text for td in browser.find_elements(By.CSS_SELECTOR, "table.pipeline td")]
    shown = dict(zip(PIPELINE_COLUMNS, cells[1:], strict=True))
    assert cells[0] == "sessions" and shown["input_rows_total"] == "4242", pipeline
    assert shown["batch_id"] == "17" and shown["active"] == "1" and shown["state_rows"] == "11"
    screenshot("connectors")

    assert len(list(tmp_path.glob("*.png"))) == shot == 9


def test_unreachable_cluster_is_a_banner(browser: Any) -> None:
    dead = f"127.0.0.1:{free_port()}"  # nothing listens there
    server = ConsoleServer(dead, "127.0.0.1", free_port())
    server.start()
    try:
        for path in ("/topics", "/groups", "/transactions", "/connectors"):
            browser.get(server.url + path)
            assert browser.title.startswith("Cluster unreachable"), path
            assert "cannot reach a broker at " + dead in _text(browser, "#error")
            assert "Traceback" not in browser.page_source
    finally:
        server.stop()


def test_broker_console_flag(browser: Any, tmp_path: Path) -> None:
    """``riverbed broker --console HOST:PORT`` serves the same pages from the broker."""
    import socket
    import subprocess

    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    from riverbed.testing.broker_process import CLI

    port, console_port = free_port(), free_port()
    args = [*CLI, "--data-dir", str(tmp_path / "data"), "--listen", f"127.0.0.1:{port}"]
    args += ["--console", f"127.0.0.1:{console_port}", "--log-level", "WARNING"]
    with open(tmp_path / "broker.log", "wb") as log:
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
    try:

        def up(p: int) -> bool:
            assert proc.poll() is None, (tmp_path / "broker.log").read_text()
            try:
                socket.create_connection(("127.0.0.1", p), timeout=0.5).close()
            except OSError:
                return False
            return True

        wait_until(lambda: up(port) and up(console_port), 180, "broker and its console")
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
        admin.create_topics([NewTopic("from-the-broker", 1, 1)])["from-the-broker"].result(60)
        browser.get(f"http://127.0.0.1:{console_port}/topics")
        assert "from-the-broker" in _text(browser, "#topics")
    finally:
        proc.terminate()
        assert proc.wait(60) == 0, (tmp_path / "broker.log").read_text()
