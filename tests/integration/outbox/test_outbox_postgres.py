"""``riverbed cdc postgres --outbox-table public.outbox`` against a private PostgreSQL 15
cluster: an order service inserts its order and an outbox row (jsonb payload) in one
transaction, usually deleting the outbox row in the same transaction (logical decoding still
sees the insert).  Exactly the committed events reach ``outbox.event.order`` (key =
aggregateid, value = the payload's JSON text, header ``id``); rolled-back transactions emit
nothing; after a SIGKILL and a restart the events are complete and de-duplicable by their
``id`` header (~25 s)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from outbox_helpers import ConnectorProcess, read_events, wait_events, wait_until

from riverbed.testing.embedded import EmbeddedBroker
from riverbed.testing.postgres_cluster import PostgresCluster, postgres_bin_dir


@pytest.fixture(scope="module")
def pg_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresCluster]:
    if postgres_bin_dir() is None:
        pytest.skip("PostgreSQL binaries not installed (scripts/setup: apt-get install postgresql)")
    cluster = PostgresCluster.create(tmp_path_factory.mktemp("outbox-pg"))
    yield cluster
    cluster.close()


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(tmp_path_factory.mktemp("outbox-pg-broker")) as running:
        yield running


SCHEMA = """
CREATE TABLE orders (id text PRIMARY KEY, customer text NOT NULL, total int NOT NULL);
CREATE TABLE outbox (
    id uuid PRIMARY KEY, aggregatetype text NOT NULL, aggregateid text NOT NULL,
    type text NOT NULL, payload jsonb NOT NULL
);
"""


class OrderService:
    """The application: an order and its event in one PostgreSQL transaction."""

    def __init__(self, dsn: str) -> None:
        import psycopg2

        self.conn: Any = psycopg2.connect(dsn)

    def place(self, order_id: str, total: int, *, commit: bool = True, purge: bool = True) -> str:
        event_id = str(uuid.uuid4())
        payload = json.dumps({"orderId": order_id, "total": total})
        with self.conn.cursor() as cur:
            cur.execute("INSERT INTO orders VALUES (%s, 'ada', %s)", (order_id, total))
            cur.execute(
                "INSERT INTO outbox VALUES (%s, 'order', %s, 'OrderCreated', %s)",
                (event_id, order_id, payload),
            )
            if purge:
                cur.execute("DELETE FROM outbox WHERE id = %s", (event_id,))
        if commit:
            self.conn.commit()
        else:
            self.conn.rollback()
        return event_id


def test_outbox_postgres_routes_committed_events_across_a_kill(
    pg_cluster: PostgresCluster, broker: EmbeddedBroker, tmp_path: Path
) -> None:
    import psycopg2

    admin = psycopg2.connect(pg_cluster.dsn())
    admin.autocommit = True
    name = f"db_{uuid.uuid4().hex[:10]}"
    with admin.cursor() as cur:
        cur.execute(f"CREATE DATABASE {name}")
    admin.close()
    dsn = pg_cluster.dsn(dbname=name)
    setup = psycopg2.connect(dsn)
    setup.autocommit = True
    with setup.cursor() as cur:
        cur.execute(SCHEMA)
    setup.close()

    service = OrderService(dsn)
    committed: dict[str, tuple[str, int]] = {}
    committed[service.place("o-0", 10, purge=False)] = ("o-0", 10)  # snapshot read: routed

    bootstrap = broker.bootstrap_servers
    args = (
        "postgres",
        "--dsn",
        dsn,
        "--bootstrap-server",
        bootstrap,
        "--topic-prefix",
        "shop",
        "--slot",
        f"slot_{name}",
        "--table",
        "public.orders",
        "--outbox-table",
        "public.outbox",
    )
    log = tmp_path / "connector.log"
    connector = ConnectorProcess(log, *args).start()
    try:
        wait_until(lambda: "capturing" in connector.log(), 120, "the connector's start")
        for n in range(1, 21):
            rolled_back = n % 4 == 0
            event_id = service.place(f"o-{n}", n * 10, commit=not rolled_back, purge=n % 3 != 0)
            if not rolled_back:
                committed[event_id] = (f"o-{n}", n * 10)
        wait_events(bootstrap, "outbox.event.order", len(committed))
        connector.kill()
        for n in range(21, 31):  # while the connector is down: held by the slot
            committed[service.place(f"o-{n}", n * 10)] = (f"o-{n}", n * 10)
        connector = ConnectorProcess(log, *args).start()
        wait_until(
            lambda: (
                {e.headers["id"].decode() for e in read_events(bootstrap, "outbox.event.order")}
                == set(committed)
            ),
            120,
            "every committed event after the restart",
        )
        assert connector.terminate() == 0, connector.log()
    finally:
        connector.close()
        service.conn.close()

    events = read_events(bootstrap, "outbox.event.order")
    by_id: dict[str, Any] = {}
    for event in events:
        by_id.setdefault(event.headers["id"].decode(), event)
    assert set(by_id) == set(committed)  # nothing rolled back, nothing lost
    for event_id, event in by_id.items():
        order, total = committed[event_id]
        assert event.key == order.encode()
        assert json.loads(event.value) == {"orderId": order, "total": total}  # jsonb text
    assert not read_events(bootstrap, "shop.public.outbox")
    assert read_events(bootstrap, "shop.public.orders")
