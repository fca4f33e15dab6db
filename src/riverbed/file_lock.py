"""An exclusive advisory lock on a file, held for a ``with`` block: how processes that
share a cache directory (built jars, downloaded Kafka, a compiled librdkafka) take turns
building it.  Blocking (``flock(LOCK_EX)``); the lock file is created, with its parent
directories, if missing and never removed (its presence means nothing).  Released on
exit, exceptions included, and by the kernel if the process dies."""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def exclusive_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def maven_repository_lock() -> contextlib.AbstractContextManager[None]:
    """Held around every ``mvn`` run that may download into the local Maven repository
    (``~/.m2``).  Maven 3.8 does not coordinate processes sharing that repository, so two
    that fetch one artifact at once write the same files; this makes them take turns
    (the test suite's pytest-xdist workers, concurrent sessions).  Take it after, never
    before, a cache directory's own lock."""
    return exclusive_lock(Path.home() / ".m2" / ".riverbed-maven.lock")
