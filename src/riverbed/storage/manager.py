"""All partition logs of one data directory, plus the threads that maintain them.

Layout: ``<data_dir>/<topic>-<partition>/`` per partition (the partition number is what
follows the last ``-``), each holding a :class:`~riverbed.storage.log.PartitionLog`; and
each topic's settings, as Kafka ``name=value`` lines, in one file per topic,
``<data_dir>/topic-configs/<topic>/topic.properties``, rewritten atomically by
:meth:`LogManager.update_config` (:mod:`riverbed.storage.topic_properties`; the legacy
copy per partition directory of older data dirs is read too).

Deletion, as in Kafka, in two steps: :meth:`LogManager.detach_partitions` takes the logs
out of the manager and renames each directory to ``<topic>-<partition>.<hex>-delete``
(one atomic rename each, then one fsync of the data dir), so from then on no reader,
no re-created partition of the same name and no restart ever sees the old records;
:meth:`LogManager.remove_detached` then releases each log's descriptors and removes the
renamed directory.  An error on one partition never stops the others.  A crash in
between leaves ``-delete`` directories, which the next start removes before opening
anything.

Threads (``start_background=True``): the group-commit flusher
(:mod:`riverbed.storage.flusher`) and one maintenance thread that every
``retention_check_interval_ms`` (Kafka's ``log.retention.check.interval.ms``, 5 minutes
by default) applies retention, and every ``maintenance_interval_ms`` removes retired
segment files whose ``file.delete.delay.ms`` has passed, expires idle producers
(``producer_id_expiration_ms``, Kafka's broker setting ``producer.id.expiration.ms``)
and runs the cleaner on the logs that need it (its map bounded by
``cleaner_dedupe_buffer_size``, Kafka's ``log.cleaner.dedupe.buffer.size``); and the
scrubber (:mod:`riverbed.storage.scrub`), which verifies segments nobody has read yet at
``scrub_bytes_per_s`` (0 disables it).  With
``start_background=False`` there are no threads: fsyncs happen inside ``flush_future``
and tests call :meth:`run_retention` / :meth:`run_cleaner` themselves.

Thread-safety: every method may be called from any thread.  Crash behaviour: each log
recovers itself on the next start (:mod:`riverbed.storage.recovery`).
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import threading
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from riverbed.clock import SYSTEM_CLOCK, Clock
from riverbed.errors import StorageError, describe_os_error
from riverbed.storage.atomic_file import fsync_dir
from riverbed.storage.cleaner import CleanerStatus, CleanResult, LogCleaner
from riverbed.storage.config import DAY_MS, DEFAULT_RETENTION_CHECK_INTERVAL_MS, LogConfig
from riverbed.storage.dir_lock import DataDirLock
from riverbed.storage.flusher import GroupCommitFlusher
from riverbed.storage.log import PartitionLog
from riverbed.storage.offset_map import DEFAULT_DEDUPE_BUFFER_SIZE
from riverbed.storage.scrub import DEFAULT_SCRUB_BYTES_PER_S, Scrubber
from riverbed.storage.topic_properties import TopicProperties

log = logging.getLogger(__name__)

CREATE_CHUNK = 256
"""New partition directories made per data-dir fsync (:meth:`LogManager.get_or_create_many`)."""

DELETE_SUFFIX = "-delete"


def parse_partition_dir(name: str) -> tuple[str, int] | None:
    topic, sep, partition = name.rpartition("-")
    if not sep or not topic or not partition.isdigit():
        return None
    return topic, int(partition)


class LogsNotClosedError(StorageError):
    """:meth:`LogManager.close` could not close some logs cleanly (every other log was
    closed).  One line: how many, which, and the first error with its path; chained
    (``__cause__``) to that first error.  ``partitions``: ``"<topic>-<partition>"``
    names, user topics first, internal (``__``) topics last."""

    def __init__(self, failures: Sequence[tuple[PartitionLog, Exception]], total: int) -> None:
        ordered = sorted(
            failures, key=lambda f: (f[0].topic.startswith("__"), f[0].topic, f[0].partition)
        )
        self.partitions = [plog.directory.name for plog, _exc in ordered]
        first_log, first = failures[0]
        shown = ", ".join(self.partitions[:5]) + (", ..." if len(ordered) > 5 else "")
        super().__init__(
            f"{len(failures)} of {total} partition log(s) not closed cleanly ({shown}), "
            f"recovered at the next start; first error, in {first_log.directory}: "
            f"{_one_line(first)}"
        )


def _one_line(exc: BaseException) -> str:
    """``exc`` as one line; a bare OSError with its errno named and its file."""
    if isinstance(exc, OSError):
        return describe_os_error(exc, "at")
    return " ".join(str(exc).split())


@dataclass(frozen=True, slots=True)
class DetachedPartition:
    """A partition taken out of the manager by :meth:`LogManager.detach_partitions`:
    its directory already renamed to ``doomed``; ``plog`` (None if it was not open)
    still holds descriptors until :meth:`LogManager.remove_detached`."""

    topic: str
    partition: int
    doomed: Path
    plog: PartitionLog | None


class LogManager:
    """Owns the :class:`PartitionLog` of every partition under ``data_dir``."""

    def __init__(
        self,
        data_dir: Path,
        *,
        clock: Clock = SYSTEM_CLOCK,
        start_background: bool = True,
        default_config: LogConfig | None = None,
        maintenance_interval_ms: int = 30_000,
        retention_check_interval_ms: int = DEFAULT_RETENTION_CHECK_INTERVAL_MS,
        checkpoint_interval_ms: int = 1_000,
        producer_id_expiration_ms: int = DAY_MS,
        cleaner_dedupe_buffer_size: int = DEFAULT_DEDUPE_BUFFER_SIZE,
        scrub_bytes_per_s: int = DEFAULT_SCRUB_BYTES_PER_S,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._dir_lock = DataDirLock.acquire(self.data_dir)
        self.clock = clock
        self.default_config = default_config or LogConfig()
        self._lock = threading.Lock()
        self._logs: dict[tuple[str, int], PartitionLog] = {}
        self._properties = TopicProperties(self.data_dir)
        self._flusher = GroupCommitFlusher(checkpoint_interval_ms=checkpoint_interval_ms)
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self._cleaner = LogCleaner(clock, dedupe_buffer_size=cleaner_dedupe_buffer_size)
        self._maintenance_interval_s = maintenance_interval_ms / 1000
        self._retention_check_interval_s = retention_check_interval_ms / 1000
        self._stop = threading.Event()
        self._maintenance: threading.Thread | None = None
        self._scrubber = Scrubber(lambda: self.logs().values(), bytes_per_s=scrub_bytes_per_s)
        self._closed = False
        try:
            self._load()
        except BaseException:
            self._dir_lock.release()
            raise
        if start_background:
            self._flusher.start()
            self._maintenance = threading.Thread(
                target=self._maintain, name="riverbed-log-maintenance", daemon=True
            )
            self._maintenance.start()
            self._scrubber.start()

    def _load(self) -> None:
        for path in sorted(self.data_dir.iterdir()):
            if not path.is_dir():
                continue
            if path.name.endswith(DELETE_SUFFIX):  # a deletion cut short by a crash
                log.info("finishing the deletion of %s", path.name)
                shutil.rmtree(path, ignore_errors=True)
                continue
            parsed = parse_partition_dir(path.name)
            if parsed is None:
                continue
            config = self._properties.read(parsed[0], path, self.default_config)
            self._logs[parsed] = PartitionLog.open(
                path,
                config,
                topic=parsed[0],
                partition=parsed[1],
                clock=self.clock,
                flusher=self._flusher,
                producer_id_expiration_ms=self.producer_id_expiration_ms,
            )
        self._properties.remove_unused({topic for topic, _p in self._logs})

    def get_or_create(self, topic: str, partition: int, config: LogConfig) -> PartitionLog:
        return self.get_or_create_many(topic, [partition], config)[0]

    def get_or_create_many(
        self, topic: str, partitions: Iterable[int], config: LogConfig
    ) -> list[PartitionLog]:
        """The logs of ``topic``'s ``partitions``, creating those that do not exist.  New
        directories are made in chunks of :data:`CREATE_CHUNK` with one fsync of the data
        dir per chunk (not per partition: that fsync was two thirds of the cost of
        creating a partition); the lock is held one chunk at a time."""
        wanted = list(partitions)
        for start in range(0, len(wanted), CREATE_CHUNK):
            with self._lock:
                chunk = wanted[start : start + CREATE_CHUNK]
                new = [p for p in chunk if (topic, p) not in self._logs]
                if not new:
                    continue
                # A generator: read only when the file changes (else O(partitions^2)).
                siblings = (plog.directory for (t, _p), plog in self._logs.items() if t == topic)
                self._properties.write(topic, config, siblings)  # once per topic, not partition
                for p in new:
                    (self.data_dir / f"{topic}-{p}").mkdir(parents=True, exist_ok=True)
                fsync_dir(self.data_dir)
                for p in new:
                    self._logs[(topic, p)] = PartitionLog.open(
                        self.data_dir / f"{topic}-{p}",
                        config,
                        topic=topic,
                        partition=p,
                        clock=self.clock,
                        flusher=self._flusher,
                        producer_id_expiration_ms=self.producer_id_expiration_ms,
                    )
        with self._lock:
            return [self._logs[(topic, p)] for p in wanted]

    def get(self, topic: str, partition: int) -> PartitionLog | None:
        with self._lock:
            return self._logs.get((topic, partition))

    def logs(self) -> dict[tuple[str, int], PartitionLog]:
        with self._lock:
            return dict(self._logs)

    @property
    def flusher(self) -> GroupCommitFlusher:
        """The group-commit thread (for its metrics observer)."""
        return self._flusher

    def delete_partition(self, topic: str, partition: int) -> None:
        """Both steps of a deletion for one partition (start-up orphans, tests)."""
        self.remove_detached(self.detach_partitions(topic, [partition]))

    def detach_partitions(self, topic: str, partitions: Iterable[int]) -> list[DetachedPartition]:
        """Step 1 of a deletion: take ``topic``'s ``partitions`` out of the manager and
        rename their directories out of the way (then one fsync of the data dir).  A
        partition with neither a log nor a directory is skipped.  Should a rename fail
        (it should not: same file system), that directory is removed where it is, so
        the old records never stay under the partition's name."""
        detached: list[DetachedPartition] = []
        with self._lock:
            for p in partitions:
                plog = self._logs.pop((topic, p), None)
                directory = self.data_dir / f"{topic}-{p}"
                if plog is None and not directory.is_dir():
                    continue
                doomed = directory.with_name(f"{directory.name}.{uuid.uuid4().hex}{DELETE_SUFFIX}")
                if plog is not None:
                    # no background checkpoint or flush may reach for the old path once
                    # it has moved (the files are released later, by close_for_deletion)
                    plog.begin_deletion()
                try:
                    directory.rename(doomed)
                except OSError:
                    log.exception("renaming %s failed; removing it in place", directory)
                    doomed = directory
                detached.append(DetachedPartition(topic, p, doomed, plog))
        if detached:
            fsync_dir(self.data_dir)
        return detached

    def remove_detached(self, detached: Iterable[DetachedPartition]) -> None:
        """Step 2: release each detached log and remove its renamed directory, then the
        settings of a topic left without partitions.  Never raises: an error on one
        partition is logged and the others go on (whatever is left on disk ends in
        ``-delete``, or is a topic's unused settings, and goes at the next start)."""
        detached = list(detached)
        for d in detached:
            if d.plog is not None:
                try:
                    # no clean-shutdown writes: the directory has moved; waiters get an error
                    d.plog.close_for_deletion()
                except Exception:
                    log.exception("closing deleted partition %s-%d failed", d.topic, d.partition)
            try:
                shutil.rmtree(d.doomed)
            except OSError:
                log.exception("removing %s failed; the next start removes it", d.doomed)
        for topic in {d.topic for d in detached}:
            with self._lock:  # a topic re-created meanwhile keeps its new settings
                if not any(t == topic for t, _p in self._logs):
                    self._properties.remove(topic)

    def update_config(self, topic: str, config: LogConfig) -> None:
        """Persist ``topic``'s new settings (one atomic write of its ``topic.properties``,
        whatever the partition count; nothing if unchanged), then apply them to each of
        its logs.  A topic without logs here is left alone.  Raises OSError if the write
        fails; the logs then keep their settings."""
        plogs = [plog for (t, _p), plog in self.logs().items() if t == topic]
        if not plogs:
            return
        self._properties.write(topic, config, [plog.directory for plog in plogs])
        for plog in plogs:
            plog.set_config(config)

    # -- maintenance ------------------------------------------------------------------

    def run_retention(self) -> int:
        """Apply retention to every log once; returns segments deleted."""
        return sum(plog.enforce_retention() for plog in self.logs().values())

    def run_file_deletion(self) -> int:
        """Remove retired segment files past ``file.delete.delay.ms``; returns how many."""
        return sum(plog.delete_expired_files() for plog in self.logs().values())

    def run_producer_expiration(self) -> int:
        """Drop idle producers from every log's state; returns how many."""
        return sum(plog.remove_expired_producers() for plog in self.logs().values())

    def cleaner_status(self, topic: str, partition: int) -> CleanerStatus | None:
        """The cleaner's view of a compacted log (None for an unknown partition)."""
        plog = self.get(topic, partition)
        return None if plog is None else self._cleaner.status(plog)

    def run_cleaner(self) -> list[CleanResult]:
        """One compaction pass over every log that needs one."""
        results = []
        for plog in self.logs().values():
            if self._cleaner.needs_cleaning(plog):
                result = self._cleaner.clean(plog)
                if result is not None:
                    results.append(result)
        return results

    def _maintain(self) -> None:
        """The maintenance thread: retention every ``retention_check_interval_ms``, the
        rest every ``maintenance_interval_ms``, each on its own schedule."""
        now = time.monotonic()
        retention_due = now + self._retention_check_interval_s
        rest_due = now + self._maintenance_interval_s
        while not self._stop.wait(max(min(retention_due, rest_due) - time.monotonic(), 0)):
            now = time.monotonic()
            try:
                if now >= retention_due:
                    retention_due = now + self._retention_check_interval_s
                    self.run_retention()
                if now >= rest_due:
                    rest_due = now + self._maintenance_interval_s
                    self.run_file_deletion()
                    self.run_producer_expiration()
                    self.run_cleaner()
            except Exception:
                log.exception("log maintenance failed")

    def close(self) -> None:
        """Clean shutdown: stop the threads, then flush and close every log.

        A log that fails to close (a full disk: ENOSPC on its fsync, snapshot or
        checkpoint) never stops the others: each is closed on its own, a failed one
        gets its descriptors released without further writes (no clean-shutdown marker,
        so the next start recovers it), and at the end one :class:`LogsNotClosedError`
        names them all.  The data dir lock is released in every case.
        """
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        self._scrubber.stop()
        if self._maintenance is not None:
            self._maintenance.join()
        self._flusher.stop()
        failures: list[tuple[PartitionLog, Exception]] = []
        try:
            logs = self.logs()
            for plog in logs.values():
                try:
                    plog.close()
                except Exception as exc:
                    log.warning("closing %s failed: %s", plog.directory, exc)
                    failures.append((plog, exc))
                    with contextlib.suppress(Exception):
                        plog.close_unclean()
        finally:
            self._dir_lock.release()
        if failures:
            raise LogsNotClosedError(failures, len(logs)) from failures[0][1]
