"""Named failure points of the exactly-once sink: a test-only hook to crash at a chosen moment.

Production code calls :func:`failpoint` at the moments a crash matters (before and after
``init_transactions``, in the middle of producing, before ``send_offsets_to_transaction``,
before and after ``commit_transaction``, in the driver's ``commit``).  Unless the
environment variable :data:`FAILPOINT_ENV` is set the call is one dictionary look-up and
does nothing.  Tests set it in a *driver subprocess*; Spark passes the environment on to
its JVM, its Python worker daemon and the workers, so a task sees it too.

Format of ``RIVERBED_SPARK_FAILPOINT``: ``NAME[:batch=N][:partition=P][:kill=group|self]``;
several separated by ``;``.  ``batch`` and ``partition`` narrow the point to one
micro-batch id and one Spark task partition.  When a point fires it kills with SIGKILL,
so nothing (no ``finally``, no atexit, no librdkafka shutdown) runs afterwards:

* ``kill=group`` (default): the process group named by :data:`KILL_PGID_ENV` -- the test
  starts the driver as a session leader, so this is the driver, its JVM and (through the
  daemon noticing its JVM gone) the Python workers: a *driver crash*.  Then this process.
* ``kill=self``: only the calling process, e.g. a Python worker: an *executor crash*
  (Spark sees "Python worker exited unexpectedly" and fails the task).

A point fires every time it is reached with its environment set: tests restart the driver
without the variable.  Known names are listed in :data:`FAILPOINTS` (a typo is an error,
not a silently inert point).  Thread-safe (reads the environment only).
"""

from __future__ import annotations

import contextlib
import os
import signal
from dataclasses import dataclass

from riverbed.errors import ConfigError

FAILPOINT_ENV = "RIVERBED_SPARK_FAILPOINT"
KILL_PGID_ENV = "RIVERBED_SPARK_FAILPOINT_PGID"

FAILPOINTS = frozenset(
    {
        # executor (Spark task) side, in order
        "task.before_init",  # before init_transactions (nothing fenced yet)
        "task.after_marker_read",  # fenced the previous attempt, read the marker, no txn yet
        "task.mid_produce",  # some records flushed inside the open transaction
        "task.before_send_offsets",  # every record flushed, marker not yet in the txn
        "task.before_commit",  # records + marker in the txn, EndTxn not sent
        "task.after_commit",  # transaction committed, commit message not yet returned
        # driver side (the Python process Spark runs the writer's commit/abort in)
        "driver.before_batch_commit",  # all tasks succeeded, writer.commit not run
        "driver.after_batch_commit",  # writer.commit ran, Spark's commit log not written
    }
)


@dataclass(frozen=True, slots=True)
class FailPoint:
    name: str
    batch_id: int | None = None
    partition: int | None = None
    kill: str = "group"

    def matches(self, name: str, batch_id: int | None, partition: int | None) -> bool:
        return (
            self.name == name
            and (self.batch_id is None or self.batch_id == batch_id)
            and (self.partition is None or self.partition == partition)
        )


def parse_failpoints(spec: str) -> tuple[FailPoint, ...]:
    """Parse the :data:`FAILPOINT_ENV` format; raises :class:`ConfigError` on a typo."""
    points: list[FailPoint] = []
    for item in filter(None, (part.strip() for part in spec.split(";"))):
        name, *fields = item.split(":")
        if name not in FAILPOINTS:
            raise ConfigError(f"unknown failure point {name!r} (known: {sorted(FAILPOINTS)})")
        batch_id: int | None = None
        partition: int | None = None
        kill = "group"
        for field in fields:
            key, _, value = field.partition("=")
            if key == "batch":
                batch_id = int(value)
            elif key == "partition":
                partition = int(value)
            elif key == "kill" and value in ("group", "self"):
                kill = value
            else:
                raise ConfigError(f"bad failure point field {field!r} in {item!r}")
        points.append(FailPoint(name, batch_id, partition, kill))
    return tuple(points)


def failpoint(name: str, *, batch_id: int | None = None, partition: int | None = None) -> None:
    """Crash here (SIGKILL) if :data:`FAILPOINT_ENV` arms ``name`` for this batch/partition."""
    spec = os.environ.get(FAILPOINT_ENV)
    if not spec:
        return
    if name not in FAILPOINTS:
        raise ConfigError(f"unknown failure point {name!r}")
    for point in parse_failpoints(spec):
        if point.matches(name, batch_id, partition):
            _kill(point.kill)


def armed(name: str) -> bool:
    """Whether some armed point has this name (lets callers prepare, e.g. flush, first)."""
    spec = os.environ.get(FAILPOINT_ENV)
    return bool(spec) and any(p.name == name for p in parse_failpoints(spec or ""))


def _kill(kill: str) -> None:
    pgid = os.environ.get(KILL_PGID_ENV)
    if kill == "group" and pgid:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(int(pgid), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)
