"""``riverbed console`` as a user runs it: one-line errors, and plain HTTP against a cluster
that is not there (an error banner, never a traceback).  No browser: see
test_console_browser.py for the pages themselves."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest

from riverbed.testing.broker_process import free_port, wait_until

CLI = [sys.executable, "-c", "from riverbed.cli.main import main; main()"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120)


def test_bad_listen_is_one_line() -> None:
    done = _run("console", "--listen", "nowhere")
    assert done.returncode == 2
    assert done.stderr == "riverbed: error: --listen expects HOST:PORT, got 'nowhere'\n"


def test_port_in_use_is_one_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _run("console", "--listen", f"127.0.0.1:{port}")
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "cannot listen there" in lines[0], done.stderr


@pytest.fixture(scope="module")
def dead_console() -> Iterator[str]:
    """``riverbed console`` for a bootstrap server where nothing listens."""
    port = free_port()
    proc = subprocess.Popen(
        [
            *CLI,
            "console",
            "--bootstrap-server",
            f"127.0.0.1:{free_port()}",
            "--listen",
            f"127.0.0.1:{port}",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        assert proc.poll() is None, proc.communicate()
        try:
            return httpx.get(url + "/healthz", timeout=2).text == "ok"
        except httpx.HTTPError:
            return False

    wait_until(up, 120, "riverbed console to answer /healthz")
    yield url
    os.kill(proc.pid, signal.SIGTERM)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "Traceback" not in err, err


@pytest.mark.parametrize(
    "path",
    [
        "/topics",
        "/topics/t",
        "/topics/t/messages",
        "/groups",
        "/share-groups",
        "/transactions",
        "/connectors",
    ],
)
def test_unreachable_cluster_is_a_banner(dead_console: str, path: str) -> None:
    response = httpx.get(dead_console + path, timeout=60)
    assert response.status_code == 503
    assert '<div class="banner" id="error">cannot reach a broker at ' in response.text
    assert "Traceback" not in response.text


def test_bad_input_is_one_line_before_any_cluster_call(dead_console: str) -> None:
    response = httpx.get(dead_console + "/topics/t/messages?offset=ten", timeout=60)
    assert response.status_code == 400
    assert "offset must be a whole number, got &#39;ten&#39;" in response.text
    response = httpx.get(dead_console + "/topics/t/messages?limit=0", timeout=60)
    assert response.status_code == 400 and "limit must be between 1 and 200" in response.text
    response = httpx.get(dead_console + "/topics/t/messages?offset=1&timestamp=2", timeout=60)
    assert response.status_code == 400 and "not both" in response.text


def test_throughput_page_answers_without_a_cluster(dead_console: str) -> None:
    response = httpx.get(dead_console + "/throughput", timeout=60)
    assert response.status_code == 200
    assert "cannot reach a broker" in response.text  # the sampler's last error, as a banner
    fragment = httpx.get(dead_console + "/throughput?fragment=1", timeout=60)
    assert fragment.text.startswith('<table id="throughput">')


def test_a_silent_cluster_never_stalls_the_event_loop() -> None:
    """A "broker" that accepts connections and never answers: the cluster pages give up
    after the console's timeout with a banner, and meanwhile other requests are served."""
    import threading
    import time

    from riverbed.console.server import ConsoleServer

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(64)  # the kernel accepts; nobody reads
    server = ConsoleServer(
        f"127.0.0.1:{silent.getsockname()[1]}", "127.0.0.1", free_port(), timeout_s=4.0
    )
    server.start()
    try:
        answers: list[httpx.Response] = []
        slow = threading.Thread(
            target=lambda: answers.append(httpx.get(server.url + "/topics", timeout=120))
        )
        started = time.monotonic()
        slow.start()
        for _ in range(5):  # while /topics waits on the cluster, the loop keeps answering
            assert httpx.get(server.url + "/healthz", timeout=10).text == "ok"
            assert httpx.get(server.url + "/throughput?fragment=1", timeout=10).status_code == 200
        slow.join(120)
        (response,) = answers
        assert response.status_code in (502, 503), response.text
        assert 'class="banner"' in response.text and "Traceback" not in response.text
        assert time.monotonic() - started < 60
    finally:
        server.stop()
        silent.close()


def test_client_settings() -> None:
    """``-X KEY=VALUE`` reaches the clients: malformed is one line at start, a setting
    librdkafka refuses is a banner on the page."""
    from riverbed.console.server import ConsoleServer

    done = _run("console", "-X", "no-equals-sign")
    assert done.returncode == 2
    assert done.stderr == "riverbed: error: --property 'no-equals-sign' is not KEY=VALUE\n"
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen(8)
    server = ConsoleServer(
        f"127.0.0.1:{listening.getsockname()[1]}",
        "127.0.0.1",
        free_port(),
        properties=["no.such.setting=1"],
    )
    server.start()
    try:
        response = httpx.get(server.url + "/topics", timeout=60)
        assert response.status_code == 502
        assert "client settings refused" in response.text and "no.such.setting" in response.text
    finally:
        server.stop()
        listening.close()
