"""Where the demo's noise goes: one log file in the data dir, nothing on the terminal.

A newcomer should see only the demo's own output.  Everything else -- Spark's log4j lines,
JVM warnings, Python worker tracebacks, librdkafka's ``%3|...`` lines, Python logging --
is appended to ``<data dir>/demo.log``:

* :func:`stderr_to` points file descriptor 2 of this process at the log for the whole
  run, so whatever any library or child process writes to stderr lands there; the
  terminal's stderr comes back when the block ends (also on Ctrl-C and on errors), before
  the CLI prints its one-line message.
* :func:`stdout_to` does the same for descriptor 1, only around the JVM's start: the
  JVM (and the Python workers it forks later) inherit it, while the demo keeps printing
  to the terminal.
* :func:`spark_log_options` points the JVM at this package's ``log4j2.properties``
  *before* it starts (WARN and above, to its stderr -- the log).
* :data:`KAFKA_LOGGER` is the ``logger`` for confluent-kafka clients: librdkafka's log
  lines become Python log records instead of stderr writes.

Log line format: ``HH:MM:SS.mmm LEVEL source: message`` (JVM lines carry ``jvm``).
Not thread-safe to enter from several threads at once (descriptors are per process);
one demo per process.  A crash leaves the log as far as it was written, which is the
point: its last lines are what the CLI prints when the demo fails.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from importlib import resources
from pathlib import Path

LOG_NAME = "demo.log"
FAILURE_MARK = "riverbed demo failed"
"""The message of the log record (with traceback) the runner writes when the demo fails."""
KAFKA_LOGGER = logging.getLogger("riverbed.demo.librdkafka")
_FORMAT = "%(asctime)s.%(msecs)03d %(levelname)s %(name)s: %(message)s"


def run_cleanups(
    cleanups: Sequence[tuple[str, Callable[[], object]]], logger: logging.Logger
) -> None:
    """Call each ``(name, cleanup)`` of ``cleanups`` in reverse order (last started, first
    stopped).  A cleanup raising an ``Exception`` is logged to ``logger`` as the warning
    ``stopping <name> failed`` (with traceback) and the others still run; a
    ``BaseException`` (Ctrl-C) propagates at once."""
    for name, cleanup in reversed(cleanups):
        try:
            cleanup()
        except Exception:
            logger.warning("stopping %s failed", name, exc_info=True)


def log_path(data_dir: Path) -> Path:
    """The demo's log file in ``data_dir``."""
    return data_dir / LOG_NAME


def log4j2_config() -> Path:
    """This package's ``log4j2.properties`` as a file path (package data)."""
    path = Path(str(resources.files("riverbed.demo").joinpath("log4j2.properties")))
    if not path.is_file():
        raise FileNotFoundError(f"package data missing: {path}")
    return path


def spark_log_options() -> dict[str, str]:
    """SparkSession settings that make the JVM log with :func:`log4j2_config` from its start."""
    return {"spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{log4j2_config()}"}


@contextlib.contextmanager
def _descriptor_to(fd: int, path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    saved = os.dup(fd)
    try:
        os.dup2(target, fd)
        yield
    finally:
        os.dup2(saved, fd)
        os.close(saved)
        os.close(target)


@contextlib.contextmanager
def stderr_to(path: Path, level: int = logging.INFO) -> Iterator[None]:
    """Descriptor 2 and Python logging (``level`` and above) append to ``path`` in the block."""
    sys.stderr.flush()
    root = logging.getLogger()
    handler = logging.FileHandler(path, mode="a", encoding="utf-8", delay=False)
    handler.setFormatter(logging.Formatter(_FORMAT, datefmt="%H:%M:%S"))
    previous_level = root.level
    with _descriptor_to(2, path):
        root.addHandler(handler)
        root.setLevel(level)
        try:
            yield
        finally:
            root.removeHandler(handler)
            root.setLevel(previous_level)
            handler.close()
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.flush()


@contextlib.contextmanager
def stdout_to(path: Path) -> Iterator[None]:
    """Descriptor 1 appends to ``path`` in the block (for child processes started in it)."""
    sys.stdout.flush()
    with _descriptor_to(1, path):
        yield


def tail(
    path: Path, lines: int = 12, max_bytes: int = 64 * 1024, until: str | None = FAILURE_MARK
) -> list[str]:
    """The last ``lines`` non-blank lines of ``path`` before the last line containing ``until``.

    With the default ``until``, that is what the log said *before* the demo's own failure
    record and traceback: the cause (a JVM error, a broker warning), not the stack.
    Reads at most ``max_bytes`` from the end; no file gives ``[]``.
    """
    try:
        with path.open("rb") as file:
            file.seek(0, os.SEEK_END)
            file.seek(max(0, file.tell() - max_bytes))
            text = file.read().decode("utf-8", errors="replace")
    except OSError:
        return []
    found = [line for line in text.splitlines() if line.strip()]
    if until is not None:
        marks = [i for i, line in enumerate(found) if until in line]
        if marks:
            found = found[: marks[-1]]
    return found[-lines:]
