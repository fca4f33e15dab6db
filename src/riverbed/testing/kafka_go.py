"""segmentio/kafka-go's own tests, run against a Riverbed broker (issue 16).

The kafka-go module zip served by the Go module proxy carries its ``_test.go`` files (the
root package's integration tests among them), so no git checkout is needed:
:func:`ensure_test_binary` runs ``go mod download`` and ``go test -c .`` once and caches the
binary as ``~/.cache/riverbed/kafka-go/<version>/kafka-go.test`` (written under a temporary
name and renamed: a crash leaves no half binary).

What the tests need (read from the module, v0.4.51): a broker at the fixed address
``localhost:9092`` (PLAINTEXT) and ``localhost:9093`` (SASL_PLAINTEXT with PLAIN user
``adminplain``/``admin-secret`` and SCRAM user ``adminscram`` with ``admin-secret-256`` /
``admin-secret-512``), topic auto-creation, ``message.max.bytes`` 200000000, an ACL
authorizer with ``allow.everyone.if.no.acl.found=true`` (its ACL tests), and
``KAFKA_VERSION`` naming the broker's version (tests gate features on it; its
docker-compose file runs 3.7.0, which Riverbed's API versions cover).  The ports are fixed
by the tests, so :func:`start_broker` refuses (:class:`PortsBusy`) when either is taken.

:func:`run_suite` runs the binary under ``go tool test2json`` in the module directory and
returns each top-level test's outcome; the allowlist format and comparison are franz-go's
(:mod:`riverbed.testing.franz_go`).  Driven by one thread; the broker child is killed by
:meth:`KafkaGoBroker.close`.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from riverbed.testing import go_module
from riverbed.testing.broker_process import CLI, wait_until
from riverbed.testing.franz_go import Outcome, SuiteResult

__all__ = [
    "KAFKA_GO_VERSION",
    "KafkaGoBroker",
    "PortsBusy",
    "ensure_test_binary",
    "list_tests",
    "module_dir",
    "run_suite",
    "start_broker",
]

KAFKA_GO_VERSION = "v0.4.51"
MODULE = "github.com/segmentio/kafka-go"
KAFKA_VERSION = "3.7.0"  # what the suite's docker-compose.yml runs; gates its tests
PORT, SASL_PORT = 9092, 9093  # fixed in the tests (``localhost:9092``)
PLAIN_USER, PLAIN_PASSWORD = "adminplain", "admin-secret"
SCRAM_USER = "adminscram"
SCRAM_PASSWORDS = {"SCRAM-SHA-256": "admin-secret-256", "SCRAM-SHA-512": "admin-secret-512"}


class PortsBusy(RuntimeError):
    """localhost:9092 or :9093 is taken (another broker, another run of this suite)."""


def cache_dir(version: str) -> Path:
    return Path.home() / ".cache" / "riverbed" / "kafka-go" / version


def module_dir(version: str = KAFKA_GO_VERSION, timeout_s: float = 300.0) -> Path:
    """``go mod download`` the module (a no-op when cached) and return its directory."""
    return go_module.module_dir(MODULE, version, timeout_s)


def ensure_test_binary(version: str = KAFKA_GO_VERSION, timeout_s: float = 600.0) -> Path:
    """The cached ``kafka-go.test`` for ``version``, built with ``go test -c .`` if missing."""
    binary = cache_dir(version) / "kafka-go.test"
    return go_module.test_binary(MODULE, version, ".", binary, timeout_s)


@dataclass
class KafkaGoBroker:
    """A ``riverbed broker`` child on localhost:9092 (PLAINTEXT) and :9093 (SASL)."""

    proc: subprocess.Popen[bytes]
    log_path: Path

    def tail(self, lines: int = 40) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def start_broker(data_dir: Path, log_path: Path, timeout_s: float = 60.0) -> KafkaGoBroker:
    """Start the broker the suite expects and create its SASL users."""
    busy = [p for p in (PORT, SASL_PORT) if not _port_free(p)]
    if busy:
        raise PortsBusy(f"127.0.0.1:{busy} taken: kafka-go's tests need 9092 and 9093")
    jaas = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{PLAIN_USER}" password="{PLAIN_PASSWORD}" '
        f'user_{PLAIN_USER}="{PLAIN_PASSWORD}";'
    )
    settings = {
        "listeners": f"PLAINTEXT://127.0.0.1:{PORT},SASL://127.0.0.1:{SASL_PORT}",
        "advertised.listeners": f"PLAINTEXT://localhost:{PORT},SASL://localhost:{SASL_PORT}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "sasl.jaas.config": jaas,
        "message.max.bytes": "200000000",
        # as its docker-compose broker: an authorizer that allows what no ACL names
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "allow.everyone.if.no.acl.found": "true",
    }
    args = [*CLI, "--data-dir", str(data_dir), "--log-level", "WARNING"]
    for key, value in settings.items():
        args += ["--config", f"{key}={value}"]
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
    broker = KafkaGoBroker(proc, log_path)

    def accepting() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"broker exited with {proc.returncode}:\n{broker.tail()}")
        try:
            socket.create_connection(("127.0.0.1", PORT), timeout=0.5).close()
        except OSError:
            return False
        return True

    try:
        wait_until(accepting, timeout_s, "the broker to accept connections")
        _create_scram_user(f"127.0.0.1:{PORT}")
    except BaseException:
        broker.close()
        raise
    return broker


def _create_scram_user(bootstrap: str) -> None:
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialAlteration,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient({"bootstrap.servers": bootstrap})
    upserts: list[UserScramCredentialAlteration] = [
        UserScramCredentialUpsertion(
            SCRAM_USER,
            ScramCredentialInfo(getattr(ScramMechanism, name.replace("-", "_")), 8192),
            password.encode(),
        )
        for name, password in SCRAM_PASSWORDS.items()
    ]
    for upsert in upserts:  # one user twice in a request is DUPLICATE_RESOURCE on Kafka
        for future in admin.alter_user_scram_credentials([upsert], request_timeout=30).values():
            future.result(timeout=60)


def run_suite(
    binary: Path,
    output_path: Path,
    *,
    run: str | None = None,
    skip: str | None = None,
    short: bool = False,
    timeout_s: float = 900.0,
    max_output_bytes: int = 256 << 20,
    version: str = KAFKA_GO_VERSION,
) -> SuiteResult:
    """Run the tests matching ``run`` and not ``skip`` (regexps); ``short`` is
    ``-test.short`` (kafka-go's tests then skip their slowest parts).  The ``test2json``
    stream goes to ``output_path``; the run is killed past ``max_output_bytes`` of output
    or ``timeout_s``, and the tests still running then have no outcome."""
    env = dict(os.environ)
    env["KAFKA_VERSION"] = env.get("KAFKA_VERSION", KAFKA_VERSION)
    args = [
        "go",
        "tool",
        "test2json",
        "-p",
        "kafka",
        str(binary),
        "-test.v=test2json",
        f"-test.timeout={int(timeout_s)}s",
    ]
    if short:
        args.append("-test.short")
    if run:
        args.append(f"-test.run={run}")
    if skip:
        args.append(f"-test.skip={skip}")
    started = time.monotonic()
    with open(output_path, "wb") as out:
        proc = subprocess.Popen(
            args,
            cwd=module_dir(version),
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            wait_until(
                lambda: proc.poll() is not None or output_path.stat().st_size > max_output_bytes,
                timeout_s + 60,
                "the kafka-go suite to finish",
                step=lambda: time.sleep(0.5),
            )
        finally:
            if proc.poll() is None:  # go, test2json and the test binary: the whole group
                os.killpg(proc.pid, signal.SIGKILL)
            returncode = proc.wait(timeout=30)
    outcomes, tails = parse_test2json(output_path)
    return SuiteResult(outcomes, returncode, output_path, time.monotonic() - started, tails)


def parse_test2json(path: Path) -> tuple[dict[str, Outcome], dict[str, deque[str]]]:
    """Top-level test → outcome, and the last 40 output lines of each."""
    outcomes: dict[str, Outcome] = {}
    tails: dict[str, deque[str]] = {}
    with open(path, encoding="utf-8", errors="replace") as lines:
        for line in lines:
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            name = str(event.get("Test") or "")
            test = name.split("/")[0]
            if not test:
                continue
            if event.get("Output"):
                tails.setdefault(test, deque(maxlen=40)).append(event["Output"][:500].rstrip())
            action = event.get("Action")
            if "/" not in name and action in ("pass", "fail", "skip"):
                outcomes[test] = action
    return outcomes, tails


def list_tests(binary: Path, run: str | None = None) -> list[str]:
    """The top-level ``Test*`` names the binary holds (matching ``run`` when given)."""
    done = subprocess.run(
        [str(binary), "-test.list", run or "^Test"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return [name for name in done.stdout.split() if name.startswith("Test")]
