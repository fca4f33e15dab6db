"""franz-go's own ``pkg/kgo`` integration tests, run against a Riverbed broker.

The franz-go module zip served by the Go module proxy carries its ``_test.go`` files, so
the suite needs no git checkout: :func:`ensure_test_binary` runs ``go mod download``
(through whatever ``GOPROXY`` the machine has) and ``go test -c ./pkg/kgo`` once, and
caches the binary as ``~/.cache/riverbed/franz-go/<version>/kgo.test`` (written to a
temporary name and renamed, so a crash leaves no half binary; rebuilt only when missing).

:func:`start_broker` starts ``riverbed broker`` as a child process with two listeners —
PLAINTEXT for ``KGO_SEEDS`` and SASL_PLAINTEXT for franz-go's SCRAM tests
(``KGO_TEST_SCRAM_SEEDS``) — and :data:`BROKER_CONFIG` (no initial rebalance delay, a 1 s
KIP-848 heartbeat), and creates the SCRAM user through the PLAINTEXT one.
:func:`run_suite` runs the binary under ``go tool test2json`` in the package directory
(some tests read files relative to it) and returns the outcome of every top-level test.

The suite reads (``pkg/kgo/helpers_test.go``): ``KGO_SEEDS``, ``KGO_TEST_RF`` (default 3;
one broker needs 1), ``KGO_TEST_RECORDS`` (default 500000 per ETL test),
``KGO_TEST_SCRAM`` (``user:pass[:256|512]``), ``KGO_TEST_SCRAM_SEEDS``,
``KGO_TEST_OAUTH_SEEDS``, ``KGO_TEST_CHAOS``, ``KGO_TEST_TLS``, ``KGO_LOG_LEVEL``.

Driven by one thread; the broker child is killed by :meth:`FranzGoBroker.close`.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import tomllib
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from riverbed.testing import go_module
from riverbed.testing.broker_process import CLI, wait_until
from riverbed.testing.go_module import GoUnavailable
from riverbed.testing.kafka_reference import free_port

__all__ = [
    "BROKER_CONFIG",
    "FRANZ_GO_VERSION",
    "AllowlistEntry",
    "FranzGoBroker",
    "GoUnavailable",
    "SuiteResult",
    "compare",
    "ensure_test_binary",
    "list_tests",
    "load_allowlist",
    "module_dir",
    "run_suite",
    "start_broker",
]

FRANZ_GO_VERSION = "v1.22.3"
MODULE = "github.com/twmb/franz-go"
SCRAM_USER = "kgo"
SCRAM_PASSWORD = "kgo-secret"

Outcome = Literal["pass", "fail", "skip"]

#: Broker settings beside the listeners.  Both only shorten waits that none of the tests
#: checks: the first join of each classic group would wait 3 s more per wave of joiners
#: (Kafka's own server.properties and :mod:`riverbed.testing.kafka_reference` set 0 too),
#: and KIP-848 members would learn each assignment change on a 5 s heartbeat (franz-go's
#: CI runs its broker, kfake, with 1 s).  ``TestGroupETL`` and ``TestTxnEtl`` chain
#: three groups through several rebalances per balancer: with the defaults they made the
#: run 55-60 s on 2 cores, 35-50 s with these (the rest is mostly franz-go's own sleeps,
#: heartbeats and fetch waits: its subtests take as long against Apache Kafka).
BROKER_CONFIG: dict[str, str] = {
    "group.initial.rebalance.delay.ms": "0",
    "group.consumer.heartbeat.interval.ms": "1000",
}


def cache_dir(version: str) -> Path:
    return Path.home() / ".cache" / "riverbed" / "franz-go" / version


def module_dir(version: str = FRANZ_GO_VERSION, timeout_s: float = 300.0) -> Path:
    """``go mod download`` the module (a no-op when cached) and return its directory."""
    return go_module.module_dir(MODULE, version, timeout_s)


def ensure_test_binary(version: str = FRANZ_GO_VERSION, timeout_s: float = 600.0) -> Path:
    """The cached ``kgo.test`` binary for ``version``, built with ``go test -c`` if missing."""
    binary = cache_dir(version) / "kgo.test"
    return go_module.test_binary(MODULE, version, "./pkg/kgo", binary, timeout_s)


@dataclass
class FranzGoBroker:
    """A ``riverbed broker`` child with a PLAINTEXT and a SASL_PLAINTEXT listener."""

    proc: subprocess.Popen[bytes]
    port: int
    sasl_port: int
    log_path: Path

    @property
    def seeds(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def scram_seeds(self) -> str:
        return f"127.0.0.1:{self.sasl_port}"

    def tail(self, lines: int = 40) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)


def start_broker(
    data_dir: Path,
    log_path: Path,
    timeout_s: float = 60.0,
    config: Mapping[str, str] | None = None,
) -> FranzGoBroker:
    """Start the broker and create the SCRAM-SHA-256 user franz-go's SCRAM tests log in as.

    The broker gets :data:`BROKER_CONFIG`; ``config`` adds settings or replaces those.
    """
    port, sasl_port = free_port(), free_port()
    listeners = f"PLAINTEXT://127.0.0.1:{port},SASL://127.0.0.1:{sasl_port}"
    settings = {
        "listeners": listeners,
        "advertised.listeners": listeners,
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
        **BROKER_CONFIG,
        **(config or {}),
    }
    args = [*CLI, "--data-dir", str(data_dir), "--log-level", "WARNING"]
    for key, value in settings.items():
        args += ["--config", f"{key}={value}"]
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
    broker = FranzGoBroker(proc, port, sasl_port, log_path)

    def accepting() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"broker exited with {proc.returncode}:\n{broker.tail()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        except OSError:
            return False
        return True

    try:
        wait_until(accepting, timeout_s, "the broker to accept connections")
        _create_scram_user(broker.seeds)
    except BaseException:
        broker.close()
        raise
    return broker


def _create_scram_user(bootstrap: str) -> None:
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient({"bootstrap.servers": bootstrap})
    upsert = UserScramCredentialUpsertion(
        SCRAM_USER,
        ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192),
        SCRAM_PASSWORD.encode(),
    )
    for future in admin.alter_user_scram_credentials([upsert], request_timeout=30).values():
        future.result(timeout=60)


@dataclass
class SuiteResult:
    """Top-level test name → outcome; the last output lines of each; the raw output file."""

    outcomes: dict[str, Outcome]
    returncode: int
    output_path: Path
    elapsed_s: float
    tails: dict[str, deque[str]] = field(default_factory=dict)

    def output_of(self, test: str) -> str:
        return "\n".join(self.tails.get(test, ()))

    def tail(self, lines: int = 60) -> str:
        with open(self.output_path, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - 200 * lines))
            text = f.read().decode(errors="replace")
        return "\n".join(text.splitlines()[-lines:])


def run_suite(
    binary: Path,
    broker: FranzGoBroker,
    output_path: Path,
    *,
    records: int | None,
    run: str | None = None,
    skip: str | None = None,
    parallel: int = 8,
    timeout_s: float = 1800.0,
    max_output_bytes: int = 256 << 20,
    version: str = FRANZ_GO_VERSION,
) -> SuiteResult:
    """Run the kgo tests matching ``run`` and not ``skip`` (regexps) against ``broker``.

    ``parallel`` is ``-test.parallel`` (Go's default, GOMAXPROCS, is 2 on a CI machine,
    and the tests mostly wait on the broker).

    The ``test2json`` stream goes to ``output_path`` (it can be large: kept out of memory)
    and is then read once, keeping the last 40 output lines of each top-level test.  The
    run is killed past ``max_output_bytes`` of output or ``timeout_s``: the tests still
    running then have no outcome.
    """
    env = dict(os.environ)
    env.update(
        {
            "KGO_SEEDS": broker.seeds,
            "KGO_TEST_RF": "1",
            "KGO_TEST_SCRAM": f"{SCRAM_USER}:{SCRAM_PASSWORD}",
            "KGO_TEST_SCRAM_SEEDS": broker.scram_seeds,
            "KGO_LOG_LEVEL": env.get("KGO_LOG_LEVEL", "none"),
        }
    )
    if records is not None:
        env["KGO_TEST_RECORDS"] = str(records)
    args = [
        "go",
        "tool",
        "test2json",
        "-t",  # a Time on every event: where a slow run spent its time
        "-p",
        "kgo",
        str(binary),
        "-test.v=test2json",
        f"-test.timeout={int(timeout_s)}s",
        f"-test.parallel={parallel}",
    ]
    if run:
        args.append(f"-test.run={run}")
    if skip:
        args.append(f"-test.skip={skip}")
    started = time.monotonic()
    with open(output_path, "wb") as out:
        proc = subprocess.Popen(
            args,
            cwd=module_dir(version) / "pkg" / "kgo",
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            # A test stuck in an error loop can print gigabytes: stop the run at the cap.
            wait_until(
                lambda: proc.poll() is not None or output_path.stat().st_size > max_output_bytes,
                timeout_s + 60,
                "the franz-go suite to finish",
                step=lambda: time.sleep(0.5),
            )
        finally:
            if proc.poll() is None:  # go, test2json and kgo.test: the whole group
                os.killpg(proc.pid, signal.SIGKILL)
            returncode = proc.wait(timeout=30)
    elapsed_s = time.monotonic() - started
    outcomes: dict[str, Outcome] = {}
    tails: dict[str, deque[str]] = {}
    with open(output_path, encoding="utf-8", errors="replace") as lines:
        for line in lines:
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            test = str(event.get("Test") or "").split("/")[0]
            if not test:
                continue
            if event.get("Output"):
                tails.setdefault(test, deque(maxlen=40)).append(event["Output"][:500].rstrip())
            action = event.get("Action")
            if "/" not in event["Test"] and action in ("pass", "fail", "skip"):
                outcomes[test] = action
    return SuiteResult(outcomes, returncode, output_path, elapsed_s, tails)


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


@dataclass(frozen=True, slots=True)
class AllowlistEntry:
    """A test expected not to pass: ``expect`` is ``fail`` or ``skip``, or ``flaky`` (any
    outcome accepted: timing-bound tests of the reference-broker runs)."""

    test: str
    expect: Outcome | Literal["flaky"]
    reason: str
    issue: int


def load_allowlist(path: Path) -> dict[str, AllowlistEntry]:
    """``[[expected]]`` tables with ``test``, ``expect``, ``reason``, ``issue``."""
    data = tomllib.loads(path.read_text())
    entries: dict[str, AllowlistEntry] = {}
    for row in data.get("expected", []):
        expect = row["expect"]
        if expect not in ("fail", "skip", "flaky"):
            raise ValueError(f"{path}: {row['test']}: expect must be fail, skip or flaky")
        entries[row["test"]] = AllowlistEntry(row["test"], expect, row["reason"], int(row["issue"]))
    return entries


@dataclass
class Comparison:
    """What differs from the allowlist; empty lists mean the run matches it."""

    unexpected_failures: list[str] = field(default_factory=list)
    unexpected_skips: list[str] = field(default_factory=list)
    now_passing: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (
            self.unexpected_failures or self.unexpected_skips or self.now_passing or self.changed
        )


def compare(outcomes: dict[str, Outcome], allowlist: dict[str, AllowlistEntry]) -> Comparison:
    """A failure or skip not allowlisted, or an allowlisted test that passes, is a finding.

    Allowlisted tests that did not run (filtered out by ``run``) are not findings.
    """
    result = Comparison()
    for test, outcome in sorted(outcomes.items()):
        entry = allowlist.get(test)
        if entry is None:
            if outcome == "fail":
                result.unexpected_failures.append(test)
            elif outcome == "skip":
                result.unexpected_skips.append(test)
        elif entry.expect == "flaky":
            continue
        elif outcome == "pass":
            result.now_passing.append(f"{test} (allowlisted for issue {entry.issue})")
        elif outcome != entry.expect:
            result.changed.append(f"{test}: expected {entry.expect}, got {outcome}")
    return result
