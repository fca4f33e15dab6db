"""Background scrubbing: verify cold segments before anyone asks for them.

Serving already verifies every batch before it is first returned
(:mod:`riverbed.storage.verify`), but data nobody reads — old segments, a partition
consumers have left — would only show damage when it is finally needed.  The scrubber
thread walks every log of a :class:`~riverbed.storage.manager.LogManager` and advances
the same per-segment watermark, so each byte is still verified once per process whoever
gets there first.

Pacing: one step verifies at most ``step_bytes`` (1 MiB) of one segment under that log's
lock (:meth:`PartitionLog.scrub_step`, about a millisecond, so appends and fetches wait at
most that long), and the thread sleeps between steps to stay under ``bytes_per_s``
(default 16 MiB/s: a 100 GiB data dir is scrubbed in under two hours after a start).  A
pass that finds nothing left sleeps ``idle_s`` before looking again (new segments from
this process are verified as they are written, so only restarts create work).

A damaged batch is logged once at ERROR by the verifier (file, byte, reason) and is then
never served; the scrubber moves on to the next segment.  Nothing is modified on disk.

Thread-safety: :meth:`Scrubber.start` / :meth:`Scrubber.stop` from the owner;
:meth:`Scrubber.run_once` from any one thread (tests).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable

from riverbed.storage.log import PartitionLog

log = logging.getLogger(__name__)

DEFAULT_SCRUB_BYTES_PER_S = 16 << 20
_STEP_BYTES = 1 << 20


class Scrubber:
    """Verifies every segment of ``logs()`` in the background (see the module docstring)."""

    def __init__(
        self,
        logs: Callable[[], Iterable[PartitionLog]],
        *,
        bytes_per_s: int = DEFAULT_SCRUB_BYTES_PER_S,
        step_bytes: int = _STEP_BYTES,
        idle_s: float = 60.0,
    ) -> None:
        self._logs = logs
        self.bytes_per_s = bytes_per_s
        self.step_bytes = step_bytes
        self.idle_s = idle_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.bytes_verified = 0  # since start (metrics, tests)

    def start(self) -> None:
        """Start the thread (no-op when ``bytes_per_s`` is 0: scrubbing disabled)."""
        if self.bytes_per_s <= 0 or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="riverbed-scrubber", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def run_once(self, budget_bytes: int | None = None) -> int:
        """One pass over every log, verifying up to ``budget_bytes`` (all when None) with
        no pacing; returns the bytes verified."""
        done = 0
        for plog in list(self._logs()):
            while budget_bytes is None or done < budget_bytes:
                step = plog.scrub_step(self.step_bytes)
                if step == 0:
                    break
                done += step
        self.bytes_verified += done
        return done

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                worked = self._paced_pass()
            except Exception:
                log.exception("scrubbing failed; retrying after %.0f s", self.idle_s)
                worked = False
            if not worked:
                self._stop.wait(self.idle_s)

    def _paced_pass(self) -> bool:
        worked = False
        for plog in list(self._logs()):
            while not self._stop.is_set():
                step = plog.scrub_step(self.step_bytes)
                if step == 0:
                    break
                worked = True
                self.bytes_verified += step
                self._stop.wait(step / self.bytes_per_s)
            if self._stop.is_set():
                break
        return worked
