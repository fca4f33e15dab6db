"""librdkafka's own test programs (``tests/``), built from a registry and run against a broker.

Where the tests come from: no registry serves librdkafka's git tree, and Debian's
``librdkafka`` source package needs a ``deb-src`` entry this machine (and CI's) lacks;
but npm's ``@confluentinc/kafka-javascript`` tarball vendors the whole librdkafka source
tree, ``tests/`` included (:data:`NPM_PACKAGE` at :data:`NPM_VERSION` carries librdkafka
:data:`LIBRDKAFKA_VERSION`).  :func:`ensure_test_runner` fetches it with ``npm pack``,
extracts ``package/deps/librdkafka``, runs ``./configure`` (no GSSAPI, curl, zstd: none
is needed by the broker tests run here), ``make libs`` and ``make -C tests build``, and
caches the tree under ``~/.cache/riverbed/librdkafka/<version>/`` (``complete`` is
written last; a ``.lock`` flock serialises concurrent builds; about 3 minutes on 2 cores).

:func:`run_test` runs one test program (``test-runner -Q <number>``, quick mode, one
process per test so a crash or hang costs only that test) against ``bootstrap`` and
returns its outcome (``pass``, ``fail`` or ``skip``, from the runner's report lines; a
test killed at its timeout is ``fail``).  The runner's ``test.conf`` names the broker and
multiplies its timeouts (:data:`TIMEOUT_MULTIPLIER`, for a loaded machine);
``TEST_KAFKA_VERSION`` tells it which features to expect.

What the tests assume of the broker (librdkafka's ``tests/scenarios/default.json``):
auto-created topics with 4 partitions, and an ACL authorizer for the admin tests
(:data:`BROKER_SETTINGS`).  Tests skipped by the runner in quick mode or flagged as known
issues (0028, 0082), or absent from this build's list (0107), are not in :data:`SUBSET`.
Tests that shell out to Kafka's scripts (``KAFKA_PATH``: ``kafka-topics.sh`` ...) or
need 3 brokers cannot pass against a single Riverbed node; they are left out of
:data:`SUBSET` or allowlisted.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from riverbed.errors import RiverbedError
from riverbed.file_lock import exclusive_lock

__all__ = [
    "BROKER_SETTINGS",
    "LIBRDKAFKA_VERSION",
    "NPM_PACKAGE",
    "NPM_VERSION",
    "SUBSET",
    "LibrdkafkaUnavailable",
    "TestOutcome",
    "ensure_test_runner",
    "run_test",
]

NPM_PACKAGE = "@confluentinc/kafka-javascript"
NPM_VERSION = "1.10.1"
LIBRDKAFKA_VERSION = "2.15.1"  # deps/librdkafka of NPM_VERSION (RD_KAFKA_VERSION 0x020f01ff)
TEST_KAFKA_VERSION = "4.0.0"
TIMEOUT_MULTIPLIER = 4.0
BROKER_SETTINGS = {
    "num.partitions": "4",
    "auto.create.topics.enable": "true",
    # as librdkafka's trivup brokers for its ACL tests: an authorizer that allows what no
    # ACL names (without one, CreateAcls answers SECURITY_DISABLED, as Kafka does)
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
}
CONFIGURE_FLAGS = ("--disable-gssapi", "--disable-curl", "--disable-zstd", "--disable-lz4-ext")

SUBSET: tuple[str, ...] = (
    "0001_multiobj",
    "0002_unkpart",
    "0003_msgmaxsize",
    "0005_order",
    "0007_autotopic",
    "0008_reqacks",
    "0011_produce_batch",
    "0012_produce_consume",
    "0013_null_msgs",
    "0014_reconsume_191",
    "0015_offsets_seek",
    "0017_compression",
    "0018_cgrp_term",
    "0019_list_groups",
    "0020_destroy_hang",
    "0021_rkt_destroy",
    "0022_consume_batch",
    "0026_consume_pause",
    "0029_assign_offset",
    "0030_offset_commit",
    "0031_get_offsets",
    "0033_regex_subscribe",
    "0034_offset_reset",
    "0036_partial_fetch",
    "0040_io_event",
    "0041_fetch_max_bytes",
    "0042_many_topics",
    "0044_partition_cnt",
    "0045_subscribe_update",
    "0048_partitioner",
    "0050_subscribe_adds",
    "0051_assign_adds",
    "0054_offset_time",
    "0056_balanced_group_mt",
    "0061_consumer_lag",
    "0063_clusterid",
    "0069_consumer_add_parts",
    "0070_null_empty",
    "0073_headers",
    "0081_admin",
    "0085_headers",
    "0090_idempotence",
    "0099_commit_metadata",
    "0102_static_group_rebalance",
    "0112_assign_unknown_part",
    "0118_commit_rebalance",
    "0130_store_offsets",
    "0137_barrier_batch_consume",
)
"""The documented subset (docs/compatibility.md): producer, consumer, groups (classic
protocol), offsets, admin, headers, idempotence — the broker tests that need neither
Kafka's scripts, nor SSL/SASL/OIDC, nor more than one broker."""

TestOutcome = Literal["pass", "fail", "skip"]


class LibrdkafkaUnavailable(RiverbedError):
    """npm, a C toolchain or the registry is missing, or the build failed (one line)."""


def cache_dir(version: str = NPM_VERSION) -> Path:
    return Path.home() / ".cache" / "riverbed" / "librdkafka" / version


def _run(args: list[str], cwd: Path, log: Path, timeout_s: float) -> None:
    with open(log, "ab") as out:
        try:
            done = subprocess.run(
                args, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, timeout=timeout_s, check=False
            )
        except subprocess.TimeoutExpired:
            raise LibrdkafkaUnavailable(f"{' '.join(args[:3])} ran past {timeout_s:.0f}s") from None
    if done.returncode != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-1:] or ["?"]
        raise LibrdkafkaUnavailable(
            f"{' '.join(args[:3])} failed ({done.returncode}): {tail[0][:200]} (log {log})"
        )


def ensure_test_runner(version: str = NPM_VERSION, timeout_s: float = 1800.0) -> Path:
    """The built ``tests/`` directory (holding ``test-runner``), built once if missing."""
    root = cache_dir(version)
    tests = root / "librdkafka" / "tests"
    if (root / "complete").exists():
        return tests
    missing = [t for t in ("npm", "make", "cc", "c++", "tar") if shutil.which(t) is None]
    if missing:
        raise LibrdkafkaUnavailable(f"building librdkafka's tests needs {', '.join(missing)}")
    with exclusive_lock(root / ".lock"):
        if (root / "complete").exists():
            return tests
        shutil.rmtree(root / "librdkafka", ignore_errors=True)
        log = root / "build.log"
        log.unlink(missing_ok=True)
        with tempfile.TemporaryDirectory(dir=root) as tmp:
            _run(["npm", "pack", f"{NPM_PACKAGE}@{version}"], Path(tmp), log, 600)
            [tarball] = list(Path(tmp).glob("*.tgz"))
            prefix = "package/deps/librdkafka/"
            with tarfile.open(tarball) as tar:
                members = [m for m in tar.getmembers() if m.name.startswith(prefix)]
                if not any(m.name == prefix + "tests/test.c" for m in members):
                    raise LibrdkafkaUnavailable(f"{NPM_PACKAGE}@{version} carries no tests/")
                tar.extractall(tmp, members=members, filter="tar")
            os.replace(Path(tmp) / prefix, root / "librdkafka")
        src = root / "librdkafka"
        jobs = f"-j{max(os.cpu_count() or 1, 1)}"
        _run(["./configure", *CONFIGURE_FLAGS], src, log, 600)
        _run(["make", jobs, "libs"], src, log, timeout_s)
        _run(["make", "-C", "tests", jobs, "build"], src, log, timeout_s)
        if not (tests / "test-runner").exists():
            raise LibrdkafkaUnavailable(f"make built no tests/test-runner (log {log})")
        (root / "complete").write_text(f"{NPM_PACKAGE}@{version}\n")
    return tests


@dataclass
class TestRun:
    """One test program's outcome and the last lines it printed."""

    test: str
    outcome: TestOutcome
    elapsed_s: float
    tail: str


_PASSED = re.compile(r"Test (\S+) PASSED")
_SKIPPED = re.compile(r"Test (\S+) SKIPPED|\[(\d{4}_\w+) +/ *[0-9.]+s\] WARN: SKIPPING TEST")
_FAILED = re.compile(r'### Test "([^" ]+)')


def run_test(
    tests_dir: Path, test: str, bootstrap: str, work_dir: Path, timeout_s: float = 300.0
) -> TestRun:
    """Run librdkafka test ``test`` (e.g. ``0012_produce_consume``) against ``bootstrap``."""
    work_dir.mkdir(parents=True, exist_ok=True)
    conf = work_dir / "test.conf"
    conf.write_text(
        f"metadata.broker.list={bootstrap}\ntest.timeout.multiplier={TIMEOUT_MULTIPLIER}\n"
    )
    env = dict(os.environ)
    env.update(
        {
            "LD_LIBRARY_PATH": f"{tests_dir.parent / 'src'}:{tests_dir.parent / 'src-cpp'}",
            "RDKAFKA_TEST_CONF": str(conf),
            "TEST_KAFKA_VERSION": TEST_KAFKA_VERSION,
            "TESTS": test.split("_")[0],
        }
    )
    output = work_dir / f"{test}.log"
    started = time.monotonic()
    with open(output, "wb") as out:
        proc = subprocess.Popen(
            [str(tests_dir / "test-runner"), "-Q", "-p1", "-S"],
            cwd=tests_dir,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            rc = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
            rc = None
    elapsed = time.monotonic() - started
    text = output.read_text(errors="replace")
    lines = [ln for ln in text.splitlines() if not ln.startswith("%7|")]
    tail = "\n".join(lines[-30:])
    name = test.split("_")[0]
    failed = any(m.startswith(name) for m in _FAILED.findall(text))
    outcome: TestOutcome
    if rc is None or rc != 0 or failed:
        outcome = "fail"
    elif any(m.startswith(name) for m in _PASSED.findall(text)):
        outcome = "pass"
    elif any((a or b).startswith(name) for a, b in _SKIPPED.findall(text)):
        outcome = "skip"
    else:
        outcome = "fail"
    return TestRun(test, outcome, elapsed, tail)
