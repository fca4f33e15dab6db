"""Changes per second applied by each derived-view store (riverbed.views, docs/views.md).

    .venv/bin/python bench/bench_views.py [--changes 50000] [--keys 5000] [--batch 500]

Builds a Debezium changelog in memory (inserts, updates, deletes with tombstones over
``--keys`` ids), decodes it once, then applies it in ``--batch``-sized batches -- one
local transaction each, offsets included -- to a SQLite FTS5 search view, a Redis cache
view (a private ``redis-server`` on a free port, no persistence), a DuckDB analytics
view and, when installed, a tantivy search view, each in a temporary directory.
Prints changes/s per store for the live apply and for a replay of the same changes
(all skipped by the offset rule).  No broker: this is the stores' side of
``riverbed views run``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import redis

from riverbed.testing.broker_process import free_port, wait_until
from riverbed.views import Change, View, decode_record
from riverbed.views.analytics import AnalyticsView
from riverbed.views.cache import CacheView
from riverbed.views.search import SearchView


def changelog(changes: int, keys: int) -> list[Change]:
    rng = random.Random(1)
    live: dict[int, dict[str, object]] = {}
    out: list[Change] = []
    offset = 0
    while len(out) < changes:
        i = rng.randrange(keys)
        key = json.dumps({"id": i}).encode()
        if i in live and rng.random() < 0.2:
            value: bytes | None = json.dumps(
                {"before": live.pop(i), "after": None, "op": "d"}
            ).encode()
            for v in (value, None):
                c = decode_record("bench", 0, offset, key, v)
                assert c is not None
                out.append(c)
                offset += 1
            continue
        row = {"id": i, "name": f"user {i} {rng.choice(['river', 'delta', 'basin'])}", "n": offset}
        c = decode_record(
            "bench",
            0,
            offset,
            key,
            json.dumps({"before": live.get(i), "after": row, "op": "u"}).encode(),
        )
        assert c is not None
        live[i] = row
        out.append(c)
        offset += 1
    return out


def timed(view: View, changes: list[Change], batch: int) -> float:
    start = time.perf_counter()
    for i in range(0, len(changes), batch):
        view.apply(changes[i : i + batch])
    return len(changes) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--changes", type=int, default=50_000)
    parser.add_argument("--keys", type=int, default=5_000)
    parser.add_argument("--batch", type=int, default=500)
    args = parser.parse_args()
    changes = changelog(args.changes, args.keys)
    server = shutil.which("redis-server")
    if server is None:
        raise SystemExit("redis-server is not installed (scripts/setup installs it)")
    with tempfile.TemporaryDirectory(prefix="bench-views-") as tmp:
        root = Path(tmp)
        port = free_port()
        with open(root / "redis.log", "wb") as log:
            proc = subprocess.Popen(
                [
                    server,
                    "--port",
                    str(port),
                    "--bind",
                    "127.0.0.1",
                    "--dir",
                    tmp,
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        url = f"redis://127.0.0.1:{port}/0"
        try:
            wait_until(lambda: _pong(url), 60, "redis-server")
            views: dict[str, View] = {
                "search (SQLite FTS5)": SearchView(root / "search.db"),
                "cache (Redis)": CacheView(url),
                "analytics (DuckDB)": AnalyticsView(root / "analytics.duckdb"),
            }
            try:
                from riverbed.views.tantivy_search import TantivySearchView

                views["search (tantivy)"] = TantivySearchView(root / "tantivy")
            except ModuleNotFoundError:
                print("tantivy not installed (the 'tantivy' extra): skipped")
            print(
                f"{len(changes)} changes over {args.keys} keys, batches of {args.batch}, "
                f"load {os.getloadavg()[0]:.1f}"
            )
            for name, view in views.items():
                live = timed(view, changes, args.batch)
                replay = timed(view, changes, args.batch)
                print(
                    f"{name:22} {live:>10,.0f} changes/s applied  "
                    f"{replay:>10,.0f} changes/s replayed (skipped)"
                )
                view.close()
        finally:
            proc.kill()
            proc.wait(timeout=30)


def _pong(url: str) -> bool:
    try:
        return bool(redis.Redis.from_url(url).ping())
    except redis.ConnectionError:
        return False


if __name__ == "__main__":
    main()
