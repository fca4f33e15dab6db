"""``riverbed cdc sqlite`` against the contract of issue 11 (docs/cdc.md): topic names,
key and value JSON, op codes, tombstones, type rendering, SIGTERM, bad input."""

from __future__ import annotations

import base64
import sqlite3
import uuid
from pathlib import Path

from cdc_helpers import (
    ConnectorProcess,
    latest_per_key,
    pending_changes,
    read_at_least,
    read_topic,
    riverbed,
    wait_until,
)
from confluent_kafka.admin import AdminClient, ConfigResource

from riverbed.testing.embedded import EmbeddedBroker

SOURCE_FIELDS = [
    "version",
    "connector",
    "name",
    "ts_ms",
    "snapshot",
    "db",
    "sequence",
    "schema",
    "table",
    "seq",
]


def connect(db: Path) -> sqlite3.Connection:
    return sqlite3.connect(db, isolation_level=None, timeout=30)


def prefix() -> str:
    return f"p{uuid.uuid4().hex[:8]}"


def test_snapshot_then_changes_follow_the_debezium_envelope(
    broker: EmbeddedBroker, db: Path
) -> None:
    conn = connect(db)
    conn.execute(
        "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT, score REAL, avatar BLOB, note TEXT)"
    )
    conn.execute(
        "INSERT INTO users VALUES (1, 'ann', 0.1, x'00ff10', NULL), (2, 'bob', 2.5, NULL, 'x')"
    )
    p = prefix()
    topic = f"{p}.main.users"
    connector = ConnectorProcess(db, broker.bootstrap_servers, "--topic-prefix", p)
    try:
        wait_until(
            lambda: len(read_topic(broker.bootstrap_servers, topic)) >= 2, 30, "the snapshot"
        )
        conn.execute("INSERT INTO users VALUES (3, 'cy', 1e300, NULL, 'héllo')")
        conn.execute("UPDATE users SET name = 'bobby' WHERE id = 2")
        conn.execute("DELETE FROM users WHERE id = 1")
        conn.execute("UPDATE users SET id = 20 WHERE id = 2")  # a key change
        records = read_at_least(broker.bootstrap_servers, topic, 9)
        assert connector.terminate() == 0, connector.stderr()
    finally:
        if connector.proc.poll() is None:
            connector.kill()
    assert pending_changes(db) == 0  # everything acknowledged was released

    keys = [k for k, _v in records]
    ops = [None if v is None else v["op"] for _k, v in records]
    assert keys == [
        {"id": 1},
        {"id": 2},
        {"id": 3},
        {"id": 2},
        {"id": 1},
        {"id": 1},
        {"id": 2},
        {"id": 2},
        {"id": 20},
    ]
    assert ops == ["r", "r", "c", "u", "d", None, "d", None, "c"], records
    snapshot = records[0][1]
    assert list(snapshot) == ["before", "after", "source", "op", "ts_ms"]
    assert snapshot["before"] is None
    assert snapshot["after"] == {
        "id": 1,
        "name": "ann",
        "score": 0.1,
        "avatar": base64.b64encode(b"\x00\xff\x10").decode(),
        "note": None,
    }
    source = snapshot["source"]
    assert list(source) == SOURCE_FIELDS
    assert source["connector"] == "sqlite" and source["name"] == p
    assert source["db"] == "app.db" and source["schema"] == "main"
    assert source["table"] == "users"
    assert [v["source"]["snapshot"] for _k, v in records[:3]] == ["first", "last", "false"]
    assert isinstance(snapshot["ts_ms"], int) and isinstance(source["ts_ms"], int)
    insert = records[2][1]
    assert insert["after"] == {
        "id": 3,
        "name": "cy",
        "score": 1e300,
        "avatar": None,
        "note": "héllo",
    }
    update = records[3][1]
    assert update["before"]["name"] == "bob" and update["after"]["name"] == "bobby"
    delete = records[4][1]
    assert delete["before"]["id"] == 1 and delete["after"] is None
    # the key change: d + tombstone on the old key, c on the new one
    assert records[6][1]["before"]["id"] == 2 and records[8][1]["after"]["id"] == 20
    assert latest_per_key(records) == {
        '{"id": 3}': {"id": 3, "name": "cy", "score": 1e300, "avatar": None, "note": "héllo"},
        '{"id": 20}': {"id": 20, "name": "bobby", "score": 2.5, "avatar": None, "note": "x"},
    }

    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    for name in (topic, f"{p}.cdc-offsets"):
        resource = ConfigResource(ConfigResource.Type.TOPIC, name)
        configs = admin.describe_configs([resource])[resource].result(30)
        assert configs["cleanup.policy"].value == "compact"


def test_restart_resumes_where_it_stopped(broker: EmbeddedBroker, db: Path) -> None:
    conn = connect(db)
    conn.execute("CREATE TABLE kv (k TEXT, region TEXT, v INTEGER, PRIMARY KEY (region, k))")
    conn.execute("INSERT INTO kv VALUES ('a', 'eu', 1)")
    p = prefix()
    topic = f"{p}.main.kv"
    first = ConnectorProcess(db, broker.bootstrap_servers, "--topic-prefix", p)
    wait_until(lambda: read_topic(broker.bootstrap_servers, topic), 30, "the snapshot")
    assert first.terminate() == 0, first.stderr()
    conn.execute("UPDATE kv SET v = 2")  # while the connector is down
    second = ConnectorProcess(db, broker.bootstrap_servers, "--topic-prefix", p)
    try:
        records = read_at_least(broker.bootstrap_servers, topic, 2)
        assert second.terminate() == 0, second.stderr()
    finally:
        if second.proc.poll() is None:
            second.kill()
    assert [(k, v["op"]) for k, v in records] == [
        ({"region": "eu", "k": "a"}, "r"),
        ({"region": "eu", "k": "a"}, "u"),
    ]
    assert records[1][1]["after"]["v"] == 2


def test_add_column_recreates_the_triggers(broker: EmbeddedBroker, db: Path) -> None:
    conn = connect(db)
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT)")
    p = prefix()
    topic = f"{p}.main.t"
    connector = ConnectorProcess(db, broker.bootstrap_servers, "--topic-prefix", p, "--table", "t")
    try:
        conn.execute("INSERT INTO t VALUES (1, 'x')")
        wait_until(lambda: read_topic(broker.bootstrap_servers, topic), 30, "the insert")
        conn.execute("ALTER TABLE t ADD COLUMN b INTEGER DEFAULT 7")
        wait_until(
            lambda: (
                "'b', CASE"
                in "".join(
                    r[0]
                    for r in conn.execute("SELECT sql FROM sqlite_schema WHERE type = 'trigger'")
                )
            ),
            30,
            "new triggers",
        )
        conn.execute("UPDATE t SET b = 8 WHERE id = 1")
        records = read_at_least(broker.bootstrap_servers, topic, 3)
        assert connector.terminate() == 0, connector.stderr()
    finally:
        if connector.proc.poll() is None:
            connector.kill()
    # the re-snapshot with the new column, then the update
    assert [v["op"] for _k, v in records[1:]] == ["r", "u"]
    assert records[1][1]["after"] == {"id": 1, "a": "x", "b": 7}
    assert records[2][1]["before"] == {"id": 1, "a": "x", "b": 7}
    assert records[2][1]["after"] == {"id": 1, "a": "x", "b": 8}


def test_tables_created_or_recreated_while_running(broker: EmbeddedBroker, db: Path) -> None:
    conn = connect(db)
    conn.execute("CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT)")
    p = prefix()
    connector = ConnectorProcess(db, broker.bootstrap_servers, "--topic-prefix", p)
    try:
        wait_until(lambda: "capturing" in connector.stderr(), 30, "the connector")
        conn.execute("CREATE TABLE b (id INTEGER PRIMARY KEY, v TEXT)")
        conn.execute("INSERT INTO b VALUES (1, 'new table')")  # before or after its triggers
        conn.execute("DROP TABLE a")
        conn.execute("CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT)")
        conn.execute("INSERT INTO a VALUES (2, 'again')")
        b_records = read_at_least(broker.bootstrap_servers, f"{p}.main.b", 1)
        a_records = read_at_least(broker.bootstrap_servers, f"{p}.main.a", 1)
        conn.execute("UPDATE a SET v = 'later'")
        a_records = read_at_least(broker.bootstrap_servers, f"{p}.main.a", 2)
        assert connector.terminate() == 0, connector.stderr()
    finally:
        if connector.proc.poll() is None:
            connector.kill()
    assert latest_per_key(b_records) == {'{"id": 1}': {"id": 1, "v": "new table"}}
    assert latest_per_key(a_records) == {'{"id": 2}': {"id": 2, "v": "later"}}


def test_schemas_enable_wraps_key_and_value(broker: EmbeddedBroker, db: Path) -> None:
    conn = connect(db)
    conn.execute("CREATE TABLE s (id INTEGER PRIMARY KEY, name VARCHAR(20), data BLOB)")
    conn.execute("INSERT INTO s VALUES (1, 'n', x'01')")
    p = prefix()
    connector = ConnectorProcess(
        db, broker.bootstrap_servers, "--topic-prefix", p, "--schemas-enable"
    )
    try:
        records = wait_until(
            lambda: read_topic(broker.bootstrap_servers, f"{p}.main.s"), 30, "the snapshot"
        )
        assert connector.terminate() == 0, connector.stderr()
    finally:
        if connector.proc.poll() is None:
            connector.kill()
    key, value = records[0]
    assert key["payload"] == {"id": 1}
    assert key["schema"]["name"] == f"{p}.main.s.Key"
    assert key["schema"]["fields"] == [{"type": "int64", "optional": False, "field": "id"}]
    assert value["payload"]["after"] == {"id": 1, "name": "n", "data": "AQ=="}
    assert value["schema"]["name"] == f"{p}.main.s.Envelope"
    fields = {f["field"]: f for f in value["schema"]["fields"]}
    assert [f["type"] for f in fields["after"]["fields"]] == ["int64", "string", "bytes"]


def test_one_connector_per_database(broker: EmbeddedBroker, db: Path) -> None:
    conn = connect(db)
    conn.execute("CREATE TABLE one (id INTEGER PRIMARY KEY)")
    p = prefix()
    first = ConnectorProcess(db, broker.bootstrap_servers, "--topic-prefix", p)
    try:
        wait_until(lambda: "capturing" in first.stderr(), 30, "the first connector")
        rc, _out, err = riverbed(
            "cdc",
            "sqlite",
            "--db",
            str(db),
            "--topic-prefix",
            p,
            "--bootstrap-server",
            broker.bootstrap_servers,
        )
        assert rc == 1 and len(err.strip().splitlines()) == 1, err
        assert "another riverbed cdc connector" in err
        assert first.terminate() == 0, first.stderr()
    finally:
        if first.proc.poll() is None:
            first.kill()


def _objects(db: Path) -> list[str]:
    conn = sqlite3.connect(db)
    try:
        return [r[0] for r in conn.execute("SELECT name FROM sqlite_schema ORDER BY name")]
    finally:
        conn.close()


def test_bad_input_is_one_line_and_creates_nothing(
    broker: EmbeddedBroker, tmp_path: Path, db: Path
) -> None:
    missing = tmp_path / "nope.db"
    rc, _out, err = riverbed(
        "cdc", "sqlite", "--db", str(missing), "--bootstrap-server", broker.bootstrap_servers
    )
    assert rc == 1 and len(err.strip().splitlines()) == 1, err
    assert "does not exist" in err and not missing.exists()

    conn = connect(db)
    conn.execute("CREATE TABLE keyed (id INTEGER PRIMARY KEY)")
    conn.execute("CREATE TABLE loose (a TEXT, b TEXT)")
    before = _objects(db)
    rc, _out, err = riverbed(
        "cdc", "sqlite", "--db", str(db), "--bootstrap-server", broker.bootstrap_servers
    )
    assert rc == 1 and len(err.strip().splitlines()) == 1, err
    assert "'loose' has no primary key" in err and "PRIMARY KEY" in err
    rc, _out, err = riverbed(
        "cdc",
        "sqlite",
        "--db",
        str(db),
        "--table",
        "ghost",
        "--bootstrap-server",
        broker.bootstrap_servers,
    )
    assert rc == 1 and "no table 'ghost'" in err, err

    rc, _out, err = riverbed(
        "cdc", "sqlite", "--db", str(db), "--table", "keyed", "--bootstrap-server", "127.0.0.1:1"
    )
    assert rc == 1 and len(err.strip().splitlines()) == 1, err
    assert "cannot reach" in err
    assert _objects(db) == before  # no trigger, no change table

    not_sqlite = tmp_path / "text.db"
    not_sqlite.write_text("hello, I am not a database\n" * 100)
    rc, _out, err = riverbed(
        "cdc", "sqlite", "--db", str(not_sqlite), "--bootstrap-server", broker.bootstrap_servers
    )
    assert rc == 1 and len(err.strip().splitlines()) == 1, err
