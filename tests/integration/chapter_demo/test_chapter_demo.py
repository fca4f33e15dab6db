"""``riverbed demo --chapter`` end to end: a child process, its console scraped over HTTP
while it runs (the pipeline page fed by the real Spark metrics exporter), then every
stage's printed number and output topic compared with the batch computation of the same
input topics (:func:`.chapter_model.check_chapter`)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from riverbed.testing.broker_process import free_port
from riverbed.testing.embedded import EmbeddedBroker

from .chapter_model import check_chapter

DEMO = [sys.executable, "-c", "from riverbed.cli.demo_command import demo_command; demo_command()"]
QUERIES = ("windows", "enrich", "sessions", "fraud")
CONSOLE = re.compile(r"^console +(http://\S+)")

pytestmark = pytest.mark.timeout(900)


class Demo:
    """The demo child process: its stdout lines as they come, and the console's
    connectors page scraped every half second while it runs."""

    def __init__(self, args: list[str]) -> None:
        self.proc = subprocess.Popen(
            [*DEMO, "--chapter", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.lines: list[str] = []
        self.url: str | None = None
        self.pages: list[str] = []  # /connectors, in scrape order
        self.other: dict[str, str] = {}  # /topics, /groups: the last good scrape
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._scraper = threading.Thread(target=self._scrape, daemon=True)
        self._scraper.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            match = CONSOLE.match(line)
            if match:
                self.url = match.group(1)

    def _scrape(self) -> None:
        while self.proc.poll() is None:
            if self.url is not None:
                try:
                    for path in ("/topics", "/groups"):
                        page = httpx.get(self.url + path, timeout=30)
                        if page.status_code == 200:
                            self.other[path] = page.text
                    page = httpx.get(self.url + "/connectors", timeout=30)
                    if page.status_code == 200:
                        self.pages.append(page.text)
                except httpx.HTTPError:
                    pass  # starting or stopping
            time.sleep(0.5)

    def wait_for(self, text: str, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while not any(text in line for line in self.lines):
            assert self.proc.poll() is None or self._reader.is_alive(), self.output()
            assert time.monotonic() < deadline, f"{text!r} not seen:\n{self.output()}"
            time.sleep(0.2)

    def finish(self, timeout_s: float) -> tuple[int, str, str]:
        try:
            self.proc.wait(timeout=timeout_s)  # stdout is the reader thread's
        finally:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)
        self._reader.join(30)
        self._scraper.join(60)
        assert self.proc.stderr is not None
        return self.proc.returncode, self.output(), self.proc.stderr.read()

    def output(self) -> str:
        return "".join(self.lines)


def pipeline_rows(page: str) -> dict[str, list[float]]:
    """The connectors page's pipeline table: query name -> its numbers (SHOWN order)."""
    rows: dict[str, list[float]] = {}
    for match in re.finditer(r"<tr><td>([\w-]+)</td>((?:\s*<td class=\"num\">[^<]*</td>)+)", page):
        cells = re.findall(r"<td class=\"num\">([^<]*)</td>", match.group(2))
        rows[match.group(1)] = [float(c) if c != "-" else -1.0 for c in cells]
    return rows


def check_console(demo: Demo) -> None:
    """The console showed the pipelines live (from the exporter Spark feeds): all four
    queries with completed batches, and a query's batch count moving between scrapes;
    the CDC connector's position; the demo's topics and the views' group."""
    live = [pipeline_rows(page) for page in demo.pages]
    complete = [rows for rows in live if all(rows.get(q, [0, 0])[1] >= 1 for q in QUERIES)]
    assert complete, f"the pipeline page never showed all four queries: {live[-3:]}"
    batches = [rows["windows"][1] for rows in live if "windows" in rows]
    assert batches and max(batches) > min(batches), batches
    assert any("riverbed.cdc-offsets" in page and "seq" in page for page in demo.pages)
    topics = demo.other.get("/topics", "")
    for topic in ("riverbed.main.users", "activity-enriched", "sessions", "fraud-alerts"):
        assert topic in topics, topics[:2000]
    assert "riverbed-chapter-views" in demo.other.get("/groups", "")


def test_chapter_demo_stages_match_batch_computations(tmp_path: Path) -> None:
    data_dir = tmp_path / "chapter"
    demo = Demo(["--duration", "4", "--users", "6", "--rate", "25", "--data-dir", str(data_dir)])
    code, out, stderr = demo.finish(timeout_s=420)
    assert code == 0, out + stderr
    assert stderr == "", stderr  # Spark, the JVM and librdkafka log to demo.log
    assert "analytics" in out and "summary" in out
    check_console(demo)
    broker = EmbeddedBroker(data_dir / "broker").start()  # the demo's own broker, reopened
    try:
        numbers = check_chapter({"bootstrap.servers": broker.bootstrap_servers}, data_dir, out)
    finally:
        broker.stop()
    assert numbers["changes"] > 6 and numbers["sessions"] > 0 and numbers["joined"] > 0


def test_chapter_usage_errors_are_one_line() -> None:
    for args, message in (
        (["--chapter", "--master", "local[1]"], "--master does not apply to --chapter"),
        (["--console-listen", "127.0.0.1:0"], "--console-listen needs --chapter"),
        (["--chapter", "--console-listen", "nowhere"], "--console-listen expects HOST:PORT"),
    ):
        done = subprocess.run([*DEMO, *args], capture_output=True, text=True, timeout=120)
        assert done.returncode == 2, done.stdout + done.stderr
        assert message in done.stderr and "Traceback" not in done.stderr, done.stderr


# -- the long form ------------------------------------------------------------------------


@pytest.fixture()
def redis_url(tmp_path: Path) -> Iterator[str]:
    server = shutil.which("redis-server")
    if server is None:
        pytest.skip("redis-server is not installed")
    port = free_port()
    proc = subprocess.Popen(
        [server, "--port", str(port), "--save", "", "--appendonly", "no", "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL,
    )
    try:
        import redis

        client: Any = redis.Redis(port=port)
        deadline = time.monotonic() + 30
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                assert time.monotonic() < deadline, "redis-server did not start"
                time.sleep(0.1)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.kill()
        proc.wait(30)


@pytest.mark.chapter_demo
def test_long_run_external_broker_redis_and_browser(tmp_path: Path, redis_url: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from riverbed.console.screenshots import chrome

    broker = EmbeddedBroker(tmp_path / "broker").start()
    try:
        bootstrap = broker.bootstrap_servers
        data_dir = tmp_path / "chapter"
        port = free_port()
        demo = Demo(
            [
                *("--duration", "60", "--bootstrap-server", bootstrap, "--redis", redis_url),
                *("--console-listen", f"127.0.0.1:{port}", "--data-dir", str(data_dir)),
            ]
        )
        demo.wait_for("streaming", timeout_s=300)
        driver = chrome()
        try:
            driver.set_page_load_timeout(120)
            driver.get(f"http://127.0.0.1:{port}/topics")
            driver.find_element(By.LINK_TEXT, "Connectors & pipelines").click()

            def shows_all(d: Any) -> bool:
                d.refresh()
                cells = [td.text for td in d.find_elements(By.CSS_SELECTOR, "table.pipeline td")]
                return all(q in cells for q in QUERIES)

            WebDriverWait(driver, 240, poll_frequency=2).until(shows_all)
            first = pipeline_rows(driver.page_source)
            WebDriverWait(driver, 240, poll_frequency=2).until(
                lambda d: (
                    (d.refresh() or True)
                    and pipeline_rows(d.page_source).get("windows", [0, 0])[1] > first["windows"][1]
                )
            )
            driver.save_screenshot(str(tmp_path / "chapter-connectors.png"))
        finally:
            driver.quit()
        code, out, stderr = demo.finish(timeout_s=600)
        assert code == 0, out + stderr
        assert "(Redis)" in out, out
        check_console(demo)
        numbers = check_chapter({"bootstrap.servers": bootstrap}, data_dir, out)
        assert numbers["alerts"] > 0 and numbers["windows"] > 6
    finally:
        broker.stop()


@pytest.mark.chapter_demo
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_mid_run_stops_everything_and_exits_0(tmp_path: Path, signum: int) -> None:
    demo = Demo(["--duration", "600", "--data-dir", str(tmp_path / "chapter")])
    demo.wait_for("streaming", timeout_s=300)
    os.killpg(demo.proc.pid, signum)  # SIGINT to the group: what a terminal's Ctrl-C does
    code, out, stderr = demo.finish(timeout_s=180)
    assert code == 0, out + stderr
    assert stderr.splitlines() == [
        "riverbed demo --chapter: interrupted; generators, CDC, Spark, views, console and "
        f"broker stopped (log: {tmp_path / 'chapter' / 'demo.log'})"
    ], stderr
    deadline = time.monotonic() + 60
    while True:  # Spark's JVM and Python workers are in the demo's process group
        try:
            os.killpg(demo.proc.pid, 0)
        except ProcessLookupError:
            break
        assert time.monotonic() < deadline, "a child of the demo outlived it"
        time.sleep(0.2)


def test_a_missing_extra_is_one_line_naming_it(tmp_path: Path) -> None:
    """No pyspark: one line naming the spark extra, exit 2.  No DuckDB: the demo runs
    without the analytics view and says which extra adds it."""
    hide = "import sys; sys.modules['pyspark'] = None; from riverbed.cli.main import main; main()"
    command = [sys.executable, "-c", hide, "demo", "--chapter"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip().splitlines() == [
        "riverbed: error: the demo needs the 'spark' extra (no module named 'pyspark'): "
        "pip install 'riverbed[spark]'"
    ]
    from riverbed.demo import chapter

    saved = sys.modules.get("duckdb")
    sys.modules["duckdb"] = None  # type: ignore[assignment]
    try:
        runner = chapter._Chapter(chapter.ChapterOptions(), tmp_path, sys.stdout)
        views, notes = runner._open_views()
    finally:
        if saved is None:
            del sys.modules["duckdb"]
        else:
            sys.modules["duckdb"] = saved
    for view in views.values():
        view.close()
    assert set(views) == {"search", "cache"}
    assert "pip install 'riverbed[views]'" in notes[-1], notes
