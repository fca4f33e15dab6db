"""``riverbed webhook`` against Kafka 4.4 share groups and a real HTTP server that fails
on purpose: 5xx then 2xx is delivered twice (delivery count 2), 4xx is never retried,
every request is signed, SIGTERM exits 0."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from queue_helpers import DEADLINE_S, QueueNames, produce, read_all, wait_until

from riverbed.queue.webhook import verify_signature

# The Apache Kafka runs here repeat the Riverbed ones against Kafka 4.4: gated
# (tests/conftest.py, -m kafka runs them); test_dead_letter_headers.py stays the queue
# area's Kafka differential in the default suite.
pytestmark = pytest.mark.kafka_variant

SECRET = "s3cret"


class _Endpoint(BaseHTTPRequestHandler):
    """503 for the first POST of ``flaky``, 400 for ``bad``, 200 otherwise."""

    requests: list[tuple[bytes, int, bool, int]]  # body, delivery count, signed ok, status
    lock = threading.Lock()

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        count = int(self.headers["X-Riverbed-Delivery-Count"])
        signed = verify_signature(SECRET.encode(), dict(self.headers.items()), body)
        with self.lock:
            seen_before = any(b == body for b, *_ in self.requests)
            if body == b"flaky" and not seen_before:
                status = 503
            elif body == b"bad":
                status = 400
            else:
                status = 200
            self.requests.append((body, count, signed, status))
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_webhook_retries_5xx_rejects_4xx_and_stops_on_sigterm(
    queue_names: QueueNames, dead_letter_topic: str | None
) -> None:
    _Endpoint.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Endpoint)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    produce(queue_names.bootstrap, queue_names.topic, [b"ok-1", b"flaky", b"bad", b"ok-2"])
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from riverbed.cli.main import main; main()",
            "webhook",
            "--bootstrap-server",
            queue_names.bootstrap,
            "--group",
            queue_names.group,
            "--topic",
            queue_names.topic,
            "--url",
            url,
            "--concurrency",
            "2",
            "--retry-backoff-ms",
            "50",
            "--secret-env",
            "HOOK_SECRET",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "HOOK_SECRET": SECRET},
    )
    try:
        wait_until(lambda: len(_Endpoint.requests) >= 5, "five POSTs", DEADLINE_S)
        time.sleep(3.0)  # a lock period and more: nothing else arrives
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        server.shutdown()
    assert proc.returncode == 0, stderr
    by_body: dict[bytes, list[tuple[int, int]]] = {}
    for body, count, signed, status in _Endpoint.requests:
        assert signed, body
        by_body.setdefault(body, []).append((count, status))
    assert by_body == {
        b"ok-1": [(1, 200)],
        b"ok-2": [(1, 200)],
        b"flaky": [(1, 503), (2, 200)],
        b"bad": [(1, 400)],
    }
    outcomes = sorted(line.split()[0] for line in stdout.splitlines())
    assert outcomes == ["accept", "accept", "accept", "reject", "release"], stdout
    assert "accepted 3, released 1, rejected 1" in stderr
    if dead_letter_topic is None:
        return
    ((value, headers),) = read_all(queue_names.bootstrap, dead_letter_topic, 1)  # the 4xx
    assert value == b"bad"
    assert headers["__dlq.errors.message"] == b"Offset rejected by client."


def test_webhook_refuses_bad_options() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from riverbed.cli.main import main; main()",
            "webhook",
            "--group",
            "g",
            "--topic",
            "t",
            "--url",
            "ftp://example",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("riverbed: error: --url")
    assert "Traceback" not in proc.stderr
