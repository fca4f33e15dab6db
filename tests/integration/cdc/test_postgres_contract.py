"""``riverbed cdc postgres`` as the contract states it (issue 11, docs/cdc.md): one compacted
topic ``<prefix>.<schema>.<table>`` per table, key = the primary-key columns as JSON, value =
Debezium's envelope; ops r (snapshot), c, u, d (+ tombstone), t; SIGTERM exits 0; the slot's
confirmed LSN moves only past what the broker acknowledged."""

from __future__ import annotations

import base64
from pathlib import Path

import pg_cdc_helpers
from pg_cdc_helpers import (
    ConnectorProcess,
    Database,
    read_topic,
    wait_records,
    wait_streaming,
    wait_until,
)

from riverbed.testing.embedded import EmbeddedBroker

# the module-scoped fixtures, rebound here (importing them by name trips F811)
pg_cluster = pg_cdc_helpers.pg_cluster
broker = pg_cdc_helpers.broker
db = pg_cdc_helpers.db


def _connector(
    tmp_path: Path, db: Database, broker: EmbeddedBroker, prefix: str, *extra: str
) -> ConnectorProcess:
    return ConnectorProcess(
        tmp_path / "connector.log",
        "--dsn",
        db.dsn,
        "--bootstrap-server",
        broker.bootstrap_servers,
        "--topic-prefix",
        prefix,
        "--slot",
        f"slot_{db.name}",
        *extra,
    )


def _topic_config(broker: EmbeddedBroker, topic: str) -> str:
    from confluent_kafka.admin import AdminClient, ConfigResource

    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    resource = ConfigResource("topic", topic)
    configs = admin.describe_configs([resource])[resource].result(30)
    return str(configs["cleanup.policy"].value)


def test_snapshot_then_changes_as_debezium_events(
    tmp_path: Path, db: Database, broker: EmbeddedBroker
) -> None:
    db.execute(
        "CREATE TABLE accounts (id int PRIMARY KEY, owner text, balance numeric(12,2),"
        " opened timestamptz, tags text[], doc jsonb, ref uuid, blob bytea, day date)"
    )
    db.execute(
        "INSERT INTO accounts VALUES (1, 'ann', 10.50, '2024-05-01 12:00:00+00',"
        " '{a,b}', '{\"k\": 1}', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '\\x00ff',"
        " '1970-01-02')"
    )
    prefix = f"p{db.name}"
    topic = f"{prefix}.public.accounts"
    connector = _connector(tmp_path, db, broker, prefix).start()
    try:
        wait_records(broker.bootstrap_servers, topic, 1)
        db.execute("INSERT INTO accounts (id, owner) VALUES (2, 'bob')")
        db.execute("UPDATE accounts SET balance = 11 WHERE id = 1")
        db.execute("DELETE FROM accounts WHERE id = 2")
        db.execute("TRUNCATE accounts")
        records = wait_records(broker.bootstrap_servers, topic, 6)
        connector.assert_alive()
        assert connector.terminate() == 0, connector.log()
    finally:
        connector.close()

    assert _topic_config(broker, topic) == "compact"
    ops = [(key, None if value is None else value["op"]) for key, value in records]
    assert ops == [
        ({"id": 1}, "r"),
        ({"id": 2}, "c"),
        ({"id": 1}, "u"),
        ({"id": 2}, "d"),
        ({"id": 2}, None),
        ({}, "t"),
    ]
    snapshot = records[0][1]
    assert set(snapshot) == {"before", "after", "source", "op", "ts_ms"}
    assert snapshot["before"] is None
    assert snapshot["after"] == {
        "id": 1,
        "owner": "ann",
        "balance": "10.50",
        "opened": "2024-05-01T12:00:00.000000Z",
        "tags": ["a", "b"],
        "doc": '{"k": 1}',
        "ref": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
        "blob": base64.b64encode(b"\x00\xff").decode(),
        "day": 1,
    }
    source = snapshot["source"]
    assert (
        source["connector"],
        source["name"],
        source["db"],
        source["schema"],
        source["table"],
        source["snapshot"],
    ) == ("postgresql", prefix, db.name, "public", "accounts", "last")
    update = records[2][1]
    assert update["after"]["balance"] == "11.00" and update["source"]["snapshot"] == "false"
    assert isinstance(update["source"]["lsn"], int) and isinstance(update["source"]["txId"], int)
    delete = records[3][1]
    assert delete["after"] is None and delete["before"]["id"] == 2

    slot = db.execute(
        "SELECT confirmed_flush_lsn - '0/0'::pg_lsn FROM pg_replication_slots WHERE slot_name = %s",
        (f"slot_{db.name}",),
    )
    truncate_lsn = records[5][1]["source"]["lsn"]
    assert int(slot[0][0]) >= truncate_lsn  # confirmed past the last acknowledged commit
    offsets = read_topic(broker.bootstrap_servers, f"{prefix}.cdc-offsets")
    assert offsets[-1][1]["snapshot_completed"] is True
    assert offsets[-1][1]["lsn"] >= truncate_lsn


def test_replica_identity_full_table_and_toast(
    tmp_path: Path, db: Database, broker: EmbeddedBroker
) -> None:
    """No primary key but REPLICA IDENTITY FULL: every column is the key, the old image is
    sent; a TOASTed value an update leaves alone is known from that old image."""
    db.execute("CREATE TABLE notes (k int, body text)")
    db.execute("ALTER TABLE notes REPLICA IDENTITY FULL")
    db.execute("CREATE TABLE docs (id int PRIMARY KEY, n int, body text)")
    db.execute("ALTER TABLE docs ALTER COLUMN body SET STORAGE EXTERNAL")
    prefix = f"p{db.name}"
    connector = _connector(
        tmp_path, db, broker, prefix, "--table", "public.notes", "--table", "public.docs"
    ).start()
    big = "".join(f"{i:08d}" for i in range(20_000))  # 160 kB, stored out of line
    try:
        wait_streaming(broker.bootstrap_servers, prefix)
        db.execute("INSERT INTO notes VALUES (1, 'x')")
        db.execute("UPDATE notes SET body = 'y'")
        db.execute("INSERT INTO docs VALUES (1, 0, %s)", (big,))
        db.execute("UPDATE docs SET n = 1")
        notes = wait_records(broker.bootstrap_servers, f"{prefix}.public.notes", 4)
        docs = wait_records(broker.bootstrap_servers, f"{prefix}.public.docs", 2)
    finally:
        connector.close()
    # the key is the whole row: an update is a delete of the old row and a create
    assert [(k, None if v is None else v["op"]) for k, v in notes] == [
        ({"k": 1, "body": "x"}, "c"),
        ({"k": 1, "body": "x"}, "d"),
        ({"k": 1, "body": "x"}, None),
        ({"k": 1, "body": "y"}, "c"),
    ]
    update = docs[1][1]
    assert update["op"] == "u" and update["after"]["n"] == 1
    assert update["after"]["body"] == "__debezium_unavailable_value"


def test_schema_changes_while_streaming(
    tmp_path: Path, db: Database, broker: EmbeddedBroker
) -> None:
    """ADD COLUMN, DROP COLUMN and a type change: pgoutput re-sends the relation and the
    next events carry the new columns and rendering."""
    db.execute("CREATE TABLE t (id int PRIMARY KEY, a int, b text)")
    prefix = f"p{db.name}"
    topic = f"{prefix}.public.t"
    connector = _connector(tmp_path, db, broker, prefix).start()
    try:
        wait_streaming(broker.bootstrap_servers, prefix)
        db.execute("INSERT INTO t VALUES (1, 1, 'x')")
        db.execute("ALTER TABLE t ADD COLUMN c jsonb DEFAULT '{}'")
        db.execute("INSERT INTO t VALUES (2, 2, 'y', '[1]')")
        db.execute("ALTER TABLE t DROP COLUMN b")
        db.execute("ALTER TABLE t ALTER COLUMN a TYPE numeric(5,1)")
        db.execute("UPDATE t SET a = 2.5 WHERE id = 2")
        records = wait_records(broker.bootstrap_servers, topic, 3)
    finally:
        connector.close()
    afters = [value["after"] for _key, value in records]
    assert afters == [
        {"id": 1, "a": 1, "b": "x"},
        {"id": 2, "a": 2, "b": "y", "c": "[1]"},
        {"id": 2, "a": "2.5", "c": "[1]"},
    ]


def test_schemas_enable_wraps_key_and_value(
    tmp_path: Path, db: Database, broker: EmbeddedBroker
) -> None:
    db.execute("CREATE TABLE t (id bigint PRIMARY KEY, at timestamp, tags int[])")
    db.execute("INSERT INTO t VALUES (1, '1970-01-01 00:00:01', '{1}')")
    prefix = f"p{db.name}"
    connector = _connector(tmp_path, db, broker, prefix, "--schemas-enable").start()
    try:
        wait_streaming(broker.bootstrap_servers, prefix)
        db.execute("UPDATE t SET tags = '{1,2}'")
        records = wait_records(broker.bootstrap_servers, f"{prefix}.public.t", 2)
    finally:
        connector.close()
    for key, value in records:
        assert key["payload"] == {"id": 1}
        assert key["schema"]["fields"] == [{"type": "int64", "optional": False, "field": "id"}]
        assert value["payload"]["after"]["at"] == 1_000_000
        fields = {f["field"]: f for f in value["schema"]["fields"][1]["fields"]}
        assert fields["at"]["name"] == "io.debezium.time.MicroTimestamp"
        assert fields["tags"]["type"] == "array"
        assert fields["tags"]["items"]["type"] == "int32"
    assert [v["payload"]["op"] for _k, v in records] == ["r", "u"]


def test_slot_advances_over_writes_to_other_tables(
    tmp_path: Path, db: Database, broker: EmbeddedBroker
) -> None:
    """Writes the connector does not capture still let the slot's confirmed LSN move on
    (no WAL kept for nothing), while the captured table is idle."""
    db.execute("CREATE TABLE t (id int PRIMARY KEY)")
    db.execute("CREATE TABLE other (id int PRIMARY KEY)")
    prefix = f"p{db.name}"
    slot = f"slot_{db.name}"
    connector = _connector(tmp_path, db, broker, prefix, "--table", "public.t").start()
    try:
        wait_streaming(broker.bootstrap_servers, prefix)
        db.execute("INSERT INTO other SELECT generate_series(1, 1000)")
        ((target,),) = db.execute("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn")

        def confirmed() -> bool:
            rows = db.execute(
                "SELECT confirmed_flush_lsn - '0/0'::pg_lsn "
                "FROM pg_replication_slots WHERE slot_name = %s",
                (slot,),
            )
            return int(rows[0][0]) >= int(target)

        wait_until(confirmed, 30, "the slot to confirm past the uncaptured writes")
        connector.assert_alive()
    finally:
        connector.close()
    assert read_topic(broker.bootstrap_servers, f"{prefix}.public.t") == []


def test_snapshot_markers_first_true_last(
    tmp_path: Path, db: Database, broker: EmbeddedBroker
) -> None:
    db.execute("CREATE TABLE t (id int PRIMARY KEY)")
    db.execute("INSERT INTO t SELECT generate_series(1, 3)")
    prefix = f"p{db.name}"
    connector = _connector(tmp_path, db, broker, prefix).start()
    try:
        records = wait_records(broker.bootstrap_servers, f"{prefix}.public.t", 3)
    finally:
        connector.close()
    assert [v["source"]["snapshot"] for _k, v in records] == ["first", "true", "last"]
    assert sorted(k["id"] for k, _v in records) == [1, 2, 3]
