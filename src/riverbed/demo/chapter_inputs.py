"""The chapter demo's inputs and outputs that need no Spark: the ``users`` database and its
mutator, the page-view / login / activity generator, the in-process cache fallback and
reading a topic back.

Record formats (each the input contract of the pipeline module that reads it)::

    pageviews   key user_id   {"user_id": "user-007", "url": "/p/3", "ts": T, "event_time": T}
                              (sessions reads ts, the windows pipeline event_time: same value)
    logins      key user_id   {"user_id": "user-007", "ok": true|false, "ts": T}
    activity    key id        {"user_id": 7, "action": "/p/3", "ts": W}
    users       SQLite table  users(id INTEGER PRIMARY KEY, name TEXT, country TEXT),
                              captured by ``riverbed cdc sqlite`` into riverbed.main.users

``T`` is *simulated* event time (``speedup`` event-time seconds per wall second, from
``start_ms``), so sessions (30 min gap), fraud (5 min) and hourly windows close within a
short run; out-of-order page views are moved back at most :data:`JITTER_MS` (inside the
pipelines' 10-minute watermark delay, so nothing is late).  ``W`` is the *wall clock*:
the enrich join picks the ``users`` row valid at ``W`` by the change's ``source.ts_ms``,
which SQLite's trigger stamps with the wall clock.  ``W`` is at least a second old and
older than every change the connector has not yet delivered (:func:`captured_until`), so
the changes valid at ``W`` are in their topic before the activity is.  Page view n goes to user
``user-%03d`` with id n; every :data:`ACTIVITY_EVERY`-th page view also becomes an activity
of that user's id.

:data:`END_USER` / :data:`END_ID` mark the end-of-input events (:meth:`EventProducer.
finish`): one per stream, 2 h of event time after the last, so every watermark passes all
real events and the pipelines emit their last sessions, alerts and joins.

Thread-safety: :class:`UsersMutator` and :class:`EventProducer` are threads owning their
connection / producer; their counters are read from other threads (ints: atomic enough).
A crash loses at most what the producer had buffered; nothing here is resumed.
"""

from __future__ import annotations

import json
import random
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, cast

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from riverbed.views.change import Change, newest_per_key

MINUTE_MS = 60_000
HOUR_MS = 60 * MINUTE_MS
JITTER_MS = 4 * MINUTE_MS
ACTIVITY_EVERY = 4
END_USER = "~end"
END_ID = -1
END_AHEAD_MS = 2 * HOUR_MS
COUNTRIES = ("uk", "fr", "de", "nz", "us", None)
PAGES = ("/", "/search", "/cart", "/checkout", *(f"/p/{n}" for n in range(12)))


def user_name(uid: int) -> str:
    return f"user-{uid:03d}"


# -- the users table ------------------------------------------------------------------


def create_users_db(path: Path, users: int, rng: random.Random) -> None:
    """A new SQLite database with ``users`` rows 1..``users`` (raises if it exists)."""
    if path.exists():
        raise FileExistsError(str(path))
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT, country TEXT)")
        conn.executemany(
            "INSERT INTO users VALUES (?, ?, ?)",
            [(uid, f"{user_name(uid)}-v0", rng.choice(COUNTRIES)) for uid in range(1, users + 1)],
        )
    conn.close()


class UsersMutator(threading.Thread):
    """Every ``interval_s``: renames a user or moves a country (80 %), deletes one (10 %)
    or re-inserts a deleted one (10 %), one transaction each, until :meth:`stop`."""

    def __init__(self, path: Path, users: int, seed: int, interval_s: float = 0.25) -> None:
        super().__init__(name="riverbed-chapter-users", daemon=True)
        self._path, self._users, self._interval_s = path, users, interval_s
        self._rng = random.Random(seed)
        self._halt = threading.Event()
        self.changes = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        conn = sqlite3.connect(self._path, timeout=30, isolation_level=None)
        deleted: list[int] = []
        version = 0
        try:
            while not self._halt.wait(self._interval_s):
                version += 1
                roll, uid = self._rng.random(), self._rng.randrange(1, self._users + 1)
                if deleted and roll < 0.1:
                    back = deleted.pop(0)
                    conn.execute(
                        "INSERT INTO users VALUES (?, ?, ?)",
                        (back, f"{user_name(back)}-v{version}", self._rng.choice(COUNTRIES)),
                    )
                elif roll < 0.2 and uid not in deleted and self._users - len(deleted) > 1:
                    conn.execute("DELETE FROM users WHERE id = ?", (uid,))
                    deleted.append(uid)
                elif uid not in deleted and roll < 0.6:
                    name = f"{user_name(uid)}-v{version}"
                    conn.execute("UPDATE users SET name = ? WHERE id = ?", (name, uid))
                elif uid not in deleted:
                    country = self._rng.choice(COUNTRIES)
                    conn.execute("UPDATE users SET country = ? WHERE id = ?", (country, uid))
                else:
                    continue
                self.changes += 1
        except BaseException as exc:  # reported by the demo, not raised on this thread
            self.error = exc
        finally:
            conn.close()

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=30)


def captured_until(path: Path) -> Callable[[], int]:
    """A function answering "every change of the database at ``path`` stamped at or before
    this time (epoch ms) has been acknowledged by the broker": the connector deletes a
    change row only once acknowledged, so it is just before the oldest row left in the
    change table (now when there is none).  Opens its own connection on first call (from
    the calling thread)."""
    from riverbed.cdc.sqlite.triggers import CHANGES

    local = threading.local()

    def until() -> int:
        conn = getattr(local, "conn", None)
        if conn is None:
            conn = local.conn = sqlite3.connect(path, timeout=30, isolation_level=None)
        row = conn.execute(f"SELECT MIN(ts_ms) FROM {CHANGES}").fetchone()
        now_ms = int(time.time() * 1000)
        return now_ms if row is None or row[0] is None else min(now_ms, int(row[0]) - 1)

    return until


def wait_changes_captured(path: Path, timeout_s: float, alive: Callable[[], bool]) -> bool:
    """Wait until the connector has acknowledged every change of the database at ``path``
    (its change table is empty: a row is deleted only once the broker acknowledged it), at
    most ``timeout_s``, while ``alive()``; True when drained.  Call once the writers have
    stopped: changes written after the last poll are otherwise left for a later run."""
    from riverbed.cdc.sqlite.triggers import CHANGES

    deadline = time.monotonic() + timeout_s
    with sqlite3.connect(path, timeout=30, isolation_level=None) as conn:
        while True:
            (pending,) = conn.execute(f"SELECT COUNT(*) FROM {CHANGES}").fetchone()
            if pending == 0:
                return True
            if time.monotonic() >= deadline or not alive():
                return False
            time.sleep(0.1)


# -- the event generator --------------------------------------------------------------


class EventProducer(threading.Thread):
    """Produces page views at ``rate`` per wall second (with logins and activities) until
    :meth:`stop`; :meth:`finish` then writes the end-of-input events and flushes.

    Users are active in turns: every 20 minutes of event time a new half of them is drawn,
    so sessions end (30 min gap) while the run goes on.  Each active user logs in now and
    then; one login burst in :data:`FRAUD_EVERY` is three failures then a success within
    three minutes (a fraud alert), some others only two failures (no alert).
    """

    FRAUD_EVERY = 6

    def __init__(
        self,
        kafka: Mapping[str, object],
        users: int,
        rate: float,
        speedup: float,
        seed: int,
        start_ms: int,
        captured_until: Callable[[], int] | None = None,
    ) -> None:
        super().__init__(name="riverbed-chapter-events", daemon=True)
        self._captured_until = captured_until
        self._producer = Producer(cast(dict[str, Any], {**kafka, "linger.ms": 20}))
        self._users, self._rate = users, rate
        self._step_ms = max(1, int(speedup * 1000 / rate))
        self._rng = random.Random(seed)
        self._halt = threading.Event()
        self.event_ms = start_ms
        self.max_ts = {"pageviews": start_ms, "logins": start_ms}
        self.produced = {"pageviews": 0, "logins": 0, "activity": 0}
        self.end_ms: dict[str, int] = {}
        self._active: list[int] = []
        self._turn_ms = -1
        self._bursts = 0
        self.errors: list[str] = []

    def _send(self, topic: str, key: str, value: dict[str, Any]) -> None:
        def delivered(err: KafkaError | None, _msg: object) -> None:
            if err is not None:
                self.errors.append(str(err))

        while True:
            try:
                self._producer.produce(
                    topic,
                    json.dumps(value, separators=(",", ":")).encode(),
                    key.encode(),
                    on_delivery=delivered,
                )
                break
            except BufferError:
                self._producer.poll(0.1)
        self.produced[topic] += 1
        if topic in self.max_ts:
            self.max_ts[topic] = max(self.max_ts[topic], int(value["ts"]))

    def _turn(self) -> None:
        turn = self.event_ms // (20 * MINUTE_MS)
        if turn != self._turn_ms:
            self._turn_ms = turn
            everyone = list(range(1, self._users + 1))
            self._active = sorted(self._rng.sample(everyone, max(1, len(everyone) // 2)))

    def _one(self, n: int) -> None:
        rng = self._rng
        self.event_ms += self._step_ms
        self._turn()
        uid = rng.choice(self._active)
        ts = self.event_ms - (rng.randrange(JITTER_MS) if rng.random() < 0.1 else 0)
        url = rng.choice(PAGES)
        view = {"user_id": user_name(uid), "url": url, "ts": ts, "event_time": ts}
        self._send("pageviews", user_name(uid), view)
        if n % ACTIVITY_EVERY == 0:
            activity = {"user_id": uid, "action": url, "ts": self._activity_ms()}
            self._send("activity", str(uid), activity)
        if rng.random() < 0.05:
            self._login_burst(uid)

    def _activity_ms(self) -> int:
        """An activity's time: one second ago, or just before the oldest change the CDC
        connector has not released yet (see :func:`captured_until_ms`), whichever is
        earlier -- so every users change at or before it is already in the topic and the
        join's answer does not depend on how the topics' reads interleave."""
        now_ms = int(time.time() * 1000) - 1000
        if self._captured_until is None:
            return now_ms
        return min(now_ms, self._captured_until())

    def _login_burst(self, uid: int) -> None:
        self._bursts += 1
        fraud = self._bursts % self.FRAUD_EVERY == 0
        failures = 3 if fraud else self._rng.choice((0, 0, 1, 2))
        ts = self.event_ms
        for _ in range(failures):
            self._send("logins", user_name(uid), {"user_id": user_name(uid), "ok": False, "ts": ts})
            ts += self._rng.randrange(10_000, MINUTE_MS)
        self._send("logins", user_name(uid), {"user_id": user_name(uid), "ok": True, "ts": ts})

    def run(self) -> None:
        started = time.monotonic()
        n = 0
        while not self._halt.is_set():
            due = int((time.monotonic() - started) * self._rate)
            while n < due and not self._halt.is_set():
                n += 1
                self._one(n)
            self._producer.poll(0)
            self._halt.wait(0.02)

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=30)

    def finish(self, timeout_s: float = 30.0) -> int:
        """After :meth:`stop`: flush, then write the end-of-input events (so each is the
        last record of its stream to be acknowledged) and flush again; records them in
        :attr:`end_ms`; returns the records not delivered (0 when all were acknowledged)."""
        self._producer.flush(timeout_s)
        self.end_ms["pageviews"] = self.max_ts["pageviews"] + END_AHEAD_MS
        self.end_ms["logins"] = max(self.max_ts["logins"], self.max_ts["pageviews"]) + END_AHEAD_MS
        self.end_ms["activity"] = int(time.time() * 1000) + END_AHEAD_MS
        end_view = self.end_ms["pageviews"]
        self._send(
            "pageviews",
            END_USER,
            {"user_id": END_USER, "url": "/", "ts": end_view, "event_time": end_view},
        )
        end_login = {"user_id": END_USER, "ok": True, "ts": self.end_ms["logins"]}
        self._send("logins", END_USER, end_login)
        end_activity = {"user_id": END_ID, "action": "/", "ts": self.end_ms["activity"]}
        self._send("activity", str(END_ID), end_activity)
        return int(self._producer.flush(timeout_s))


# -- the cache fallback ---------------------------------------------------------------


class MemoryCacheView:
    """The cache view in this process (a dict) when no Redis is given: the same
    :class:`~riverbed.views.change.View` contract, gone when the demo ends."""

    def __init__(self) -> None:
        self._rows: dict[str, dict[str, Any]] = {}
        self._marks: dict[tuple[str, int], int] = {}
        self._lock = threading.Lock()

    def apply(self, changes: list[Change]) -> int:
        with self._lock:
            latest, self._marks = newest_per_key(changes, self._marks)
            for key, change in latest.items():
                if change.row is None:
                    self._rows.pop(key, None)
                else:
                    self._rows[key] = change.row
            return len(latest)

    def high_water_offsets(self) -> dict[tuple[str, int], int]:
        with self._lock:
            return dict(self._marks)

    def snapshot(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            return dict(sorted(self._rows.items()))

    def close(self) -> None:
        pass


# -- reading back ---------------------------------------------------------------------


def read_topic(
    kafka: Mapping[str, object], topic: str, timeout_s: float = 60.0
) -> list[tuple[bytes | None, Any]]:
    """Every committed record of ``topic`` up to its current end (read_committed), per
    partition in offset order: ``(key, parsed JSON value or None for a tombstone)``.
    Raises :class:`TimeoutError` when the end is not reached within ``timeout_s``."""
    consumer = Consumer(
        cast(
            dict[str, Any],
            {
                **kafka,
                "group.id": f"riverbed-chapter-read-{uuid.uuid4()}",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
            },
        )
    )
    try:
        metadata = consumer.list_topics(topic, timeout=timeout_s).topics[topic]
        partitions = sorted(metadata.partitions)
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout_s)[1]
            for p in partitions
        }
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions if ends[p] > 0])
        out: dict[int, list[tuple[bytes | None, Any]]] = {p: [] for p in partitions}
        deadline = time.monotonic() + timeout_s
        pending = {p for p in partitions if ends[p] > 0}
        while pending:
            if time.monotonic() > deadline:
                raise TimeoutError(f"reading topic {topic} did not reach its end")
            for message in consumer.consume(500, 0.2):
                if message.error() is not None:
                    continue
                raw = message.value()
                out[int(message.partition() or 0)].append(
                    (message.key(), None if raw is None else json.loads(raw))
                )
            positions = consumer.position([TopicPartition(topic, p) for p in pending])
            pending = {tp.partition for tp in positions if tp.offset < ends[tp.partition]}
        return [record for p in partitions for record in out[p]]
    finally:
        consumer.close()
