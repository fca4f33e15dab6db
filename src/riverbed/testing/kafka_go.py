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

Host-independent runs (:func:`run_isolated`): the broker (Riverbed, or Apache Kafka through
:mod:`riverbed.testing.kafka_reference`) and the test binary run in a private network
namespace (``unshare --net``, root or CAP_SYS_ADMIN), where 9092/9093 are always free and
nothing else on the host can reach them or be reached.  ``unshare`` executes this module
(``python -m riverbed.testing.kafka_go``), which raises loopback, starts the broker, runs
the requested test binary invocations one after another against it and writes
``result.json`` (``{"runs": {name: test2json path}, "broker_log": path}``) to the work
directory.  Everything that needs the network (the module proxy, Maven Central) is fetched
by the caller first.  :func:`isolation_unavailable` says, in one line, why a namespace
cannot be made (the caller then falls back to the host's ports when they are free).
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

from riverbed.errors import RiverbedError
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


class PortsBusy(RiverbedError):
    """localhost:9092 or :9093 is taken (another broker, another run of this suite)."""


class IsolatedRunFailed(RiverbedError):
    """The namespaced driver exited without writing its result (its log says why)."""


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


def ports_busy() -> list[int]:
    """Which of 9092/9093 are taken on this host's (or namespace's) loopback."""
    return [p for p in (PORT, SASL_PORT) if not _port_free(p)]


def start_broker(data_dir: Path, log_path: Path, timeout_s: float = 60.0) -> KafkaGoBroker:
    """Start the broker the suite expects and create its SASL users."""
    busy = ports_busy()
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


def _warm_group_coordinator(bootstrap: str, timeout_s: float = 120.0) -> None:
    """Have Kafka create ``__consumer_offsets`` before the tests: a fresh reference broker
    creates it on the first FindCoordinator, which on a loaded machine eats most of the
    10 s context of the suite's first group test (TestConsumerGroupWithTopic ...)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "riverbed-warm-up", "log_level": 0}
    )
    try:
        consumer.committed([TopicPartition("riverbed-warm-up", 0)], timeout=timeout_s)
    finally:
        consumer.close()


def run_suite(
    binary: Path,
    output_path: Path,
    *,
    run: str | None = None,
    skip: str | None = None,
    short: bool = False,
    timeout_s: float = 900.0,
    parallel: int = 8,
    max_output_bytes: int = 256 << 20,
    version: str = KAFKA_GO_VERSION,
    cwd: Path | None = None,
) -> SuiteResult:
    """Run the tests matching ``run`` and not ``skip`` (regexps); ``short`` is
    ``-test.short`` (kafka-go's tests then skip their slowest parts); ``parallel`` is
    ``-test.parallel`` (Go's default, GOMAXPROCS, is 2 on a CI machine; kafka-go's parallel
    subtests mostly wait on their own sleeps and timeouts).  The ``test2json`` stream, each
    event timestamped (``-t``), goes to ``output_path``; the run is killed past
    ``max_output_bytes`` of output or ``timeout_s``, and the tests still running then have
    no outcome.  ``cwd`` is the module directory (default: :func:`module_dir`, which may
    reach the module proxy)."""
    env = dict(os.environ)
    env["KAFKA_VERSION"] = env.get("KAFKA_VERSION", KAFKA_VERSION)
    args = [
        "go",
        "tool",
        "test2json",
        "-t",
        "-p",
        "kafka",
        str(binary),
        "-test.v=test2json",
        f"-test.timeout={int(timeout_s)}s",
        f"-test.parallel={parallel}",
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
            cwd=cwd or module_dir(version),
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


# -- Apache Kafka as the suite's broker ---------------------------------------------------

KAFKA_REFERENCE_VERSION = "4.4.0"
KAFKA_CONTROLLER_PORT = 9094  # inside the namespace: free by construction


def kafka_overrides() -> dict[str, str]:
    """server.properties for a Kafka that looks like the suite's docker-compose broker:
    PLAINTEXT on 9092, SASL_PLAINTEXT (PLAIN + SCRAM) on 9093, auto-created topics,
    200 MB messages, an authorizer allowing what no ACL names."""
    plain = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{PLAIN_USER}" password="{PLAIN_PASSWORD}" '
        f'user_{PLAIN_USER}="{PLAIN_PASSWORD}";'
    )
    scram = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
    return {
        "listeners": (
            f"PLAINTEXT://127.0.0.1:{PORT},SASL_PLAINTEXT://127.0.0.1:{SASL_PORT},"
            f"CONTROLLER://127.0.0.1:{KAFKA_CONTROLLER_PORT}"
        ),
        "advertised.listeners": (
            f"PLAINTEXT://localhost:{PORT},SASL_PLAINTEXT://localhost:{SASL_PORT}"
        ),
        "listener.security.protocol.map": (
            "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT"
        ),
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": plain,
        "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": scram,
        "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": scram,
        "auto.create.topics.enable": "true",
        "delete.topic.enable": "true",
        "message.max.bytes": "200000000",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "allow.everyone.if.no.acl.found": "true",
        "offsets.topic.num.partitions": "1",
    }


# -- private network namespace ------------------------------------------------------------

_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1


def _loopback_up() -> None:
    """Raise ``lo`` (a new network namespace has it down); ioctl, so no iproute2 needed."""
    import fcntl
    import struct

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        ifreq = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(s, _SIOCGIFFLAGS, ifreq))[1]
        fcntl.ioctl(s, _SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | _IFF_UP))


def isolation_unavailable() -> str | None:
    """``None`` when ``unshare --net`` works here; else one line saying why not."""
    import shutil

    unshare = shutil.which("unshare")
    if unshare is None:
        return "unshare (util-linux) not on PATH"
    try:
        done = subprocess.run(
            [unshare, "--net", "--", "true"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unshare --net failed: {exc}"
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        return f"unshare --net refused ({why}): needs root or CAP_SYS_ADMIN"
    return None


@dataclass
class IsolatedRun:
    """Outcomes of each named invocation, and the broker's log tail."""

    results: dict[str, SuiteResult]
    broker_log: str
    isolated: bool


def run_isolated(
    target: str,
    binary: Path,
    work_dir: Path,
    invocations: dict[str, dict[str, object]],
    *,
    isolate: bool = True,
    timeout_s: float = 1800.0,
    version: str = KAFKA_GO_VERSION,
    kafka_version: str = KAFKA_REFERENCE_VERSION,
) -> IsolatedRun:
    """Start ``target`` (``riverbed`` or ``kafka``) and run each invocation against it.

    ``invocations`` maps a name to :func:`run_suite` keyword arguments (``run``, ``skip``,
    ``timeout_s``), run in order against one broker.  With ``isolate`` (see
    :func:`isolation_unavailable`) broker and tests live in a private network namespace;
    without it they use the host's 9092/9093 (:class:`PortsBusy` if taken).  The whole
    driver is killed (SIGTERM, then SIGKILL to its process group) past ``timeout_s``.
    """
    import sys

    if target not in ("riverbed", "kafka"):
        raise ValueError(f"target must be riverbed or kafka, not {target!r}")
    cwd = module_dir(version)  # the proxy is out of reach inside the namespace
    if target == "kafka":
        from riverbed.testing.kafka_reference import resolve_jars

        resolve_jars(kafka_version)  # Maven Central too
    if not isolate and ports_busy():
        raise PortsBusy(f"127.0.0.1:{ports_busy()} taken: kafka-go's tests need 9092 and 9093")
    work_dir.mkdir(parents=True, exist_ok=True)
    spec = {
        "target": target,
        "binary": str(binary),
        "module_dir": str(cwd),
        "work_dir": str(work_dir),
        "kafka_version": kafka_version,
        "invocations": invocations,
    }
    (work_dir / "spec.json").write_text(json.dumps(spec))
    args = [sys.executable, "-m", "riverbed.testing.kafka_go", str(work_dir / "spec.json")]
    if isolate:
        args = ["unshare", "--net", "--", *args]
    result_path = work_dir / "result.json"
    result_path.unlink(missing_ok=True)
    with open(work_dir / "driver.log", "wb") as log:
        proc = subprocess.Popen(
            args,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
    if not result_path.exists():
        log_tail = (work_dir / "driver.log").read_text(errors="replace")[-4000:]
        raise IsolatedRunFailed(
            f"kafka-go driver ({target}) exited {proc.returncode} without a result:\n{log_tail}"
        )
    written = json.loads(result_path.read_text())
    if written.get("error") and not written["runs"]:
        raise IsolatedRunFailed(
            f"kafka-go driver ({target}): {written['error']}\n{written.get('broker_log', '')}"
        )
    results: dict[str, SuiteResult] = {}
    for name, run in written["runs"].items():
        path = Path(run["path"])
        outcomes, tails = parse_test2json(path)
        results[name] = SuiteResult(outcomes, run["returncode"], path, run["elapsed_s"], tails)
    return IsolatedRun(results, written.get("broker_log", ""), isolate)


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _drive(spec_path: Path) -> int:
    """The namespaced side of :func:`run_isolated` (see the module docstring).

    ``result.json`` is written even when the broker fails to start or a signal ends the
    run (``error`` then says why), so the caller can tell both apart from a crash.
    """
    import traceback

    from riverbed.testing.kafka_reference import KafkaReference

    spec = json.loads(spec_path.read_text())
    work_dir = Path(spec["work_dir"])
    signal.signal(signal.SIGTERM, _raise_interrupt)
    runs: dict[str, dict[str, object]] = {}
    riverbed: KafkaGoBroker | None = None
    kafka: KafkaReference | None = None
    error = ""
    try:
        _loopback_up()
        if spec["target"] == "riverbed":
            riverbed = start_broker(work_dir / "data", work_dir / "broker.log")
        else:
            kafka = KafkaReference(
                version=spec["kafka_version"],
                overrides=kafka_overrides(),
                port=PORT,
                controller_port=KAFKA_CONTROLLER_PORT,
                heap="1g",
                startup_timeout_s=180.0,
            )
            kafka.start()
            _create_scram_user(f"127.0.0.1:{PORT}")
            _warm_group_coordinator(f"127.0.0.1:{PORT}")
        for name, kwargs in spec["invocations"].items():
            out = work_dir / f"{name}.test2json"
            result = run_suite(Path(spec["binary"]), out, cwd=Path(spec["module_dir"]), **kwargs)
            runs[name] = {
                "path": str(out),
                "returncode": result.returncode,
                "elapsed_s": result.elapsed_s,
            }
            print(f"{name}: rc {result.returncode} in {result.elapsed_s:.0f}s", flush=True)
    except BaseException as exc:
        error = f"{type(exc).__name__}: {exc}"
        traceback.print_exc()
    finally:
        broker_log = ""
        if riverbed is not None:
            broker_log = riverbed.tail(60)
            riverbed.close()
        if kafka is not None:
            broker_log = kafka.tail(60)
            kafka.stop()
        result_json = {"runs": runs, "broker_log": broker_log, "error": error}
        (work_dir / "result.json").write_text(json.dumps(result_json))
    return 0 if not error else 1


if __name__ == "__main__":
    import sys

    sys.exit(_drive(Path(sys.argv[1])))
