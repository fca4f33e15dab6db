"""``riverbed cdc sqlite --outbox-table outbox``: an order service writes its order and an
outbox row in one transaction; the connector routes each committed outbox insert to
``outbox.event.<aggregatetype>`` (key = aggregateid, value = payload as is, header ``id``),
emits nothing for rolled-back transactions or deletes of outbox rows, and after a SIGKILL
and restart every committed event is there, de-duplicable by its ``id`` header (~20 s)."""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from outbox_helpers import ConnectorProcess, read_events, topics, wait_events, wait_until

from riverbed.testing.embedded import EmbeddedBroker


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(tmp_path_factory.mktemp("outbox-broker")) as embedded:
        yield embedded


SCHEMA = """
CREATE TABLE orders (id TEXT PRIMARY KEY, customer TEXT NOT NULL, total INTEGER NOT NULL);
CREATE TABLE outbox (
    id TEXT PRIMARY KEY, aggregatetype TEXT NOT NULL, aggregateid TEXT NOT NULL,
    type TEXT NOT NULL, payload TEXT NOT NULL
);
"""


class OrderService:
    """The application: an order and its event, in one SQLite transaction."""

    def __init__(self, path: Path) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None, timeout=60)

    def place(self, order_id: str, total: int, *, commit: bool = True, purge: bool = False) -> str:
        event_id = str(uuid.uuid4())
        payload = json.dumps({"orderId": order_id, "total": total}, separators=(",", ":"))
        self.conn.execute("BEGIN IMMEDIATE")
        self.conn.execute("INSERT INTO orders VALUES (?, 'ada', ?)", (order_id, total))
        self.conn.execute(
            "INSERT INTO outbox VALUES (?, 'order', ?, 'OrderCreated', ?)",
            (event_id, order_id, payload),
        )
        if purge:  # the usual pattern: the outbox row is deleted in the same transaction
            self.conn.execute("DELETE FROM outbox WHERE id = ?", (event_id,))
        self.conn.execute("COMMIT" if commit else "ROLLBACK")
        return event_id


def test_outbox_sqlite_routes_committed_events_across_a_kill(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    db = tmp_path / "orders.db"
    setup = sqlite3.connect(db)
    setup.executescript(SCHEMA)
    setup.close()
    service = OrderService(db)
    committed: dict[str, tuple[str, int]] = {}  # event id -> (order id, total)
    committed[service.place("o-0", 10)] = ("o-0", 10)  # before the connector: snapshot

    bootstrap = broker.bootstrap_servers
    args = (
        "sqlite",
        "--db",
        str(db),
        "--bootstrap-server",
        bootstrap,
        "--topic-prefix",
        "shop",
        "--table",
        "orders",
        "--outbox-table",
        "outbox",
        "--outbox-header",
        "type:eventType",
    )
    log = tmp_path / "connector.log"
    connector = ConnectorProcess(log, *args).start()
    try:
        # triggers installed: from here on even a purged outbox row is captured
        wait_until(lambda: "capturing" in connector.log(), 120, "the connector's start")
        for n in range(1, 21):
            order = f"o-{n}"
            rolled_back = n % 5 == 0
            event_id = service.place(order, n * 10, commit=not rolled_back, purge=n % 2 == 0)
            if not rolled_back:
                committed[event_id] = (order, n * 10)
        wait_events(bootstrap, "outbox.event.order", len(committed))
        connector.kill()
        for n in range(21, 31):
            order = f"o-{n}"
            committed[service.place(order, n * 10, purge=True)] = (order, n * 10)
        connector = ConnectorProcess(log, *args).start()
        wait_until(
            lambda: (
                {e.headers["id"].decode() for e in read_events(bootstrap, "outbox.event.order")}
                == set(committed)
            ),
            90,
            "every committed event after the restart",
        )
        assert connector.terminate() == 0, connector.log()
    finally:
        connector.close()

    events = read_events(bootstrap, "outbox.event.order")
    by_id = {}
    for event in events:  # duplicates only of events not yet acknowledged at the kill
        by_id.setdefault(event.headers["id"].decode(), event)
    assert set(by_id) == set(committed)
    for event_id, event in by_id.items():
        order, total = committed[event_id]
        assert event.key == order.encode()
        assert (
            event.value
            == json.dumps({"orderId": order, "total": total}, separators=(",", ":")).encode()
        )
        assert event.headers["eventType"] == b"OrderCreated"
    # per aggregate, events in commit order (one event per order here: order of first sight)
    orders = [int(e.key.decode()[2:]) for e in events if e.key is not None]
    firsts = list(dict.fromkeys(orders))
    assert firsts == sorted(firsts)
    # the outbox table's own change topic is replaced by the routed events
    names = topics(bootstrap)
    assert "shop.main.orders" in names
    assert not read_events(bootstrap, "shop.main.outbox")
