"""Delayed deletion of segment files (Kafka's ``file.delete.delay.ms``).

A segment leaves the log in two steps, as in Kafka:

1. **Retire** (under the log's lock): rename its ``.log``, ``.index`` and ``.timeindex``
   to ``<name>.deleted``.  The ``.log`` rename is the one atomic step that removes the
   segment from the log: recovery never loads a ``.deleted`` file and removes every one
   it finds, so a crash at any point leaves the segment either fully in the log or gone.
2. **Delete** once ``file.delete.delay.ms`` has passed (the maintenance thread calls
   :meth:`DeletionQueue.delete_due`): close the segment's file descriptor, unlink.

Why the delay, given that Riverbed's reads copy bytes out under the log's lock (so
closing and unlinking at once would be safe for Fetch)?  The descriptor of a retired
segment stays open until the delete, so a reader that does *not* hold the log's lock -
the cleaner, which ``pread``s segments while appends continue, or a future zero-copy
(``sendfile``) Fetch - never reads a closed descriptor, or worse one the kernel has
already reused for another file.  The rename keeps the directory listing truthful in
the meantime.  A delay of 0 deletes at once (still rename first, so crash-atomic).

Not thread-safe: the owning log's lock guards it.
"""

from __future__ import annotations

from riverbed.storage.segment import LogSegment


class DeletionQueue:
    """Retired segments waiting for their delete time."""

    def __init__(self) -> None:
        self._pending: list[tuple[int, LogSegment]] = []

    def __len__(self) -> int:
        return len(self._pending)

    def retire(self, seg: LogSegment, due_ms: int, now_ms: int) -> None:
        """Rename ``seg``'s files to ``.deleted``; delete them now if ``due_ms <= now_ms``."""
        seg.rename_for_deletion()
        if due_ms <= now_ms:
            seg.delete()
        else:
            self._pending.append((due_ms, seg))

    def delete_due(self, now_ms: int) -> int:
        """Delete the segments whose time has come; returns how many."""
        due = [s for t, s in self._pending if t <= now_ms]
        self._pending = [(t, s) for t, s in self._pending if t > now_ms]
        for seg in due:
            seg.delete()
        return len(due)

    def delete_all(self) -> None:
        """Clean shutdown: delete everything pending now."""
        for _t, seg in self._pending:
            seg.delete()
        self._pending = []

    def close_all(self) -> None:
        """Unclean close: only release the descriptors (recovery removes the files)."""
        for _t, seg in self._pending:
            seg.close()
        self._pending = []
