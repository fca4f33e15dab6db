"""A separate writing application for the CDC crash tests: random transactions (inserts,
updates, deletes, key changes, rollbacks) on the tables ``items`` and ``pairs``.

    python sqlite_writer.py DB SEED TRANSACTIONS [SLEEP_IN_TXN_MS [GAP_MS]]

Each transaction is ``BEGIN IMMEDIATE``, 1-6 operations, then COMMIT (80%) or ROLLBACK.
``SLEEP_IN_TXN_MS`` sleeps up to that long inside each transaction, so that a SIGKILL lands
mid-transaction; ``GAP_MS`` (default: the same) up to that long between transactions, as
applications pause (SQLite's locks are not fair: a writer that never pauses starves others).
"""

from __future__ import annotations

import random
import sqlite3
import sys
import time

KEYS = 60


def main() -> None:
    path, seed, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    sleep_s = (int(sys.argv[4]) if len(sys.argv) > 4 else 0) / 1000
    gap_s = (int(sys.argv[5]) / 1000) if len(sys.argv) > 5 else sleep_s
    rng = random.Random(seed)
    conn = sqlite3.connect(path, isolation_level=None, timeout=60)
    # REPLACE deletes a conflicting row; only with recursive triggers does that deletion fire
    # the DELETE trigger (SQLite's rule, see docs/cdc.md)
    conn.execute("PRAGMA recursive_triggers = ON")
    for _ in range(count):
        conn.execute("BEGIN IMMEDIATE")
        for _op in range(rng.randint(1, 6)):
            operation(conn, rng)
        if sleep_s:
            time.sleep(rng.uniform(0, sleep_s))
        conn.execute("COMMIT" if rng.random() < 0.8 else "ROLLBACK")
        if gap_s:
            time.sleep(rng.uniform(0, gap_s))
    conn.close()


def operation(conn: sqlite3.Connection, rng: random.Random) -> None:
    choice = rng.random()
    if rng.random() < 0.7:
        key = rng.randrange(KEYS)
        row = (
            key,
            rng.randrange(-(2**40), 2**40),
            f"v{rng.random()}",
            rng.random() * 1e6,
            rng.randbytes(rng.randrange(0, 8)),
        )
        if choice < 0.2:
            conn.execute("INSERT OR REPLACE INTO items VALUES (?, ?, ?, ?, ?)", row)
        elif choice < 0.35:
            conn.execute(
                "INSERT INTO items VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE "
                "SET n = excluded.n, t = excluded.t",
                row,
            )
        elif choice < 0.75:
            conn.execute("UPDATE items SET n = n + 1, r = ? WHERE id = ?", (rng.random(), key))
        elif choice < 0.9:
            conn.execute("DELETE FROM items WHERE id = ?", (key,))
        else:  # a key change, unless the new key is taken
            conn.execute(
                "UPDATE OR IGNORE items SET id = ? WHERE id = ?", (rng.randrange(KEYS), key)
            )
    else:
        a, b = rng.choice("xyz"), rng.randrange(10)
        if choice < 0.5:
            conn.execute("INSERT OR REPLACE INTO pairs VALUES (?, ?, ?)", (a, b, rng.random()))
        elif choice < 0.8:
            conn.execute("UPDATE pairs SET w = w + 1 WHERE a = ? AND b = ?", (a, b))
        else:
            conn.execute("DELETE FROM pairs WHERE a = ?", (a,))  # several rows at once


if __name__ == "__main__":
    main()
