"""``topic.properties``: a topic's log settings, one file per topic.

Format: Kafka ``name=value`` lines (``retention.ms=60000``), sorted, ``#`` comments
ignored; the whole set of :meth:`LogConfig.to_kafka_props`, defaults included, so the
file alone says how the topic's logs behave.

Layout::

    <data_dir>/topic-configs/<topic>/topic.properties     written by this version
    <data_dir>/<topic>-<partition>/topic.properties       legacy: one copy per partition

The per-topic file is written once per change whatever the partition count (an
AlterConfigs on a 50-partition topic used to cost 50 atomic writes, ~150 fsyncs).  A
directory per topic rather than a file named after it: a topic name may be 249
characters (Kafka's limit) and end in ``.tmp``, and neither may clash with the atomic
write's ``.tmp`` file nor pass the 255-byte name limit.  ``topic-configs`` never parses
as a partition directory (what follows its last ``-`` is not a number).

Reading (:meth:`TopicProperties.read`): the per-topic file when it exists, else the
partition's legacy copy (data dirs written before this layout), else the defaults; an
unreadable file is a WARNING naming it, and the defaults.  After a per-topic write the
legacy copies are unlinked (no fsync: should an unlink be lost in a crash, the per-topic
file still shadows the copy), so a data dir migrates on its first config change or new
partition.  An older Riverbed opening a migrated data dir finds no per-partition file and
opens the logs with the broker defaults until its topic manager re-applies the settings
of ``topics.json`` (the source of truth); no data is affected.

Crash behaviour: each write is atomic (:mod:`riverbed.storage.atomic_file`); a crash
leaves the old or the new settings.  A topic's directory outliving its partitions (a
crash during a deletion) is removed by :meth:`TopicProperties.remove_unused` at the next
start, and would in any case be overwritten by a re-created topic's settings.

Thread-safety: every method may be called from any thread; writes and removals of the
files are serialised by one lock.
"""

from __future__ import annotations

import logging
import shutil
import threading
from collections.abc import Iterable
from pathlib import Path

from riverbed.errors import ConfigError
from riverbed.storage.atomic_file import fsync_dir, write_atomically
from riverbed.storage.config import LogConfig

log = logging.getLogger(__name__)

PROPERTIES_FILE = "topic.properties"
TOPIC_CONFIGS_DIR = "topic-configs"


def render(config: LogConfig) -> str:
    """The file's text for ``config``: every Kafka property, sorted, one a line."""
    return "".join(f"{k}={v}\n" for k, v in sorted(config.to_kafka_props().items()))


def _parse(path: Path, default: LogConfig) -> LogConfig | None:
    """The settings in ``path``; None if there is no such file; ``default`` (and a
    WARNING naming the file) if it cannot be read as properties."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    except (UnicodeDecodeError, OSError) as exc:
        log.warning("ignoring unreadable %s (%s): the broker defaults apply", path, exc)
        return default
    props = {}
    for line in text.splitlines():
        if "=" in line and not line.startswith("#"):
            name, _, value = line.partition("=")
            props[name.strip()] = value.strip()
    try:
        return LogConfig.from_kafka_props(props, default)
    except ConfigError as exc:
        log.warning("ignoring unreadable %s (%s): the broker defaults apply", path, exc)
        return default


class TopicProperties:
    """The ``topic.properties`` files of one data directory (module docstring)."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.root = data_dir / TOPIC_CONFIGS_DIR
        self._lock = threading.Lock()

    def path(self, topic: str) -> Path:
        return self.root / topic / PROPERTIES_FILE

    def read(self, topic: str, partition_dir: Path, default: LogConfig) -> LogConfig:
        """The settings of ``topic`` (per-topic file, else the partition's legacy copy
        in ``partition_dir``, else ``default``)."""
        found = _parse(self.path(topic), default)
        if found is None:
            found = _parse(partition_dir / PROPERTIES_FILE, default)
        return default if found is None else found

    def write(self, topic: str, config: LogConfig, partition_dirs: Iterable[Path]) -> bool:
        """Persist ``config`` for ``topic`` unless the file already says exactly that;
        True if it wrote, and then unlink the legacy copies in ``partition_dirs`` (only
        then: ``partition_dirs`` is not iterated otherwise, so creating a topic's n
        partitions costs O(n), not O(n^2); a legacy copy left by a crash before its unlink
        is never read while the per-topic file exists).  Raises OSError (the previous
        file stays whole)."""
        text = render(config)
        target = self.path(topic)
        with self._lock:
            try:
                wrote = target.read_text() != text
            except (FileNotFoundError, UnicodeDecodeError):
                wrote = True
            if not wrote:
                return False
            self._make_dirs(target.parent)
            write_atomically(target, text.encode())
            for directory in partition_dirs:
                (directory / PROPERTIES_FILE).unlink(missing_ok=True)
        return wrote

    def _make_dirs(self, topic_dir: Path) -> None:
        """Create ``topic-configs/<topic>/`` durably (each new entry's parent fsynced)."""
        for directory, parent in ((self.root, self.data_dir), (topic_dir, self.root)):
            if not directory.is_dir():
                directory.mkdir(exist_ok=True)
                fsync_dir(parent)

    def remove(self, topic: str) -> None:
        """Forget ``topic``'s settings (its last partition was deleted).  Never raises:
        a failure is logged and the next start's :meth:`remove_unused` retries."""
        with self._lock:
            topic_dir = self.root / topic
            try:
                if topic_dir.is_dir():
                    shutil.rmtree(topic_dir)
                    fsync_dir(self.root)
                if self.root.is_dir() and not any(self.root.iterdir()):
                    self.root.rmdir()  # the data dir holds nothing of a topic no more
                    fsync_dir(self.data_dir)
            except OSError:
                log.exception("removing %s failed; the next start removes it", topic_dir)

    def remove_unused(self, topics_in_use: set[str]) -> None:
        """At start: remove the settings of topics without any partition left."""
        if not self.root.is_dir():
            return
        for entry in sorted(self.root.iterdir()):
            if entry.name not in topics_in_use and entry.is_dir():
                log.info("removing the settings of deleted topic %s", entry.name)
                self.remove(entry.name)
