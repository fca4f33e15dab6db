"""``riverbed cdc postgres`` refuses bad input in one line with a non-zero exit, and creates
nothing (no slot, no publication, no topic): wrong DSN or password, ``wal_level`` not
logical, no REPLICATION privilege, a table without a primary key, a slot in use."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pg_cdc_helpers
import pytest
from pg_cdc_helpers import ENTRY, ConnectorProcess, Database, wait_streaming

from riverbed.testing.embedded import EmbeddedBroker
from riverbed.testing.postgres_cluster import PostgresCluster, postgres_bin_dir

# the module-scoped fixtures, rebound here (importing them by name trips F811)
pg_cluster = pg_cdc_helpers.pg_cluster
broker = pg_cdc_helpers.broker
db = pg_cdc_helpers.db


def _run(*args: str) -> tuple[int, str]:
    done = subprocess.run(
        [*ENTRY, *args], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stderr.strip()


def _assert_nothing_created(db: Database, broker: EmbeddedBroker, prefix: str) -> None:
    from confluent_kafka.admin import AdminClient

    assert (
        db.execute("SELECT slot_name FROM pg_replication_slots WHERE database = current_database()")
        == []
    )
    assert db.execute("SELECT pubname FROM pg_publication") == []
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    topics = admin.list_topics(timeout=10).topics
    assert not [t for t in topics if t.startswith(prefix + ".")]


def _one_line_error(code: int, stderr: str, *needles: str) -> None:
    assert code != 0
    assert len(stderr.splitlines()) == 1, stderr
    assert stderr.startswith("riverbed: error: "), stderr
    for needle in needles:
        assert needle in stderr, stderr


def test_wrong_password_and_unreachable_server(db: Database, broker: EmbeddedBroker) -> None:
    wrong = db.dsn.replace("password=riverbed", "password=nope")
    code, err = _run("--dsn", wrong, "--bootstrap-server", broker.bootstrap_servers)
    _one_line_error(code, err, "password authentication failed")
    code, err = _run(
        "--dsn",
        "host=127.0.0.1 port=1 user=x dbname=x connect_timeout=3",
        "--bootstrap-server",
        broker.bootstrap_servers,
    )
    _one_line_error(code, err, "cannot connect to PostgreSQL")
    code, err = _run("--dsn", "not a dsn", "--bootstrap-server", broker.bootstrap_servers)
    _one_line_error(code, err, "--dsn")


def test_table_without_primary_key(db: Database, broker: EmbeddedBroker) -> None:
    db.execute("CREATE TABLE logs (line text)")
    prefix = f"p{db.name}"
    code, err = _run(
        "--dsn",
        db.dsn,
        "--bootstrap-server",
        broker.bootstrap_servers,
        "--topic-prefix",
        prefix,
        "--slot",
        f"s_{db.name}",
    )
    _one_line_error(code, err, "'public.logs' has no primary key", "REPLICA IDENTITY FULL")
    code, err = _run(
        "--dsn",
        db.dsn,
        "--bootstrap-server",
        broker.bootstrap_servers,
        "--topic-prefix",
        prefix,
        "--table",
        "public.missing",
    )
    _one_line_error(code, err, "'public.missing' does not exist")
    _assert_nothing_created(db, broker, prefix)


def test_role_without_replication_privilege(db: Database, broker: EmbeddedBroker) -> None:
    db.execute("CREATE TABLE t (id int PRIMARY KEY)")
    role = f"r_{db.name}"
    db.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'pw'")
    db.execute(f"GRANT SELECT ON t TO {role}")
    dsn = db.cluster.dsn(user=role, password="pw", dbname=db.name)
    prefix = f"p{db.name}"
    code, err = _run(
        "--dsn", dsn, "--bootstrap-server", broker.bootstrap_servers, "--topic-prefix", prefix
    )
    _one_line_error(code, err, "no REPLICATION privilege", f"ALTER ROLE {role} WITH REPLICATION")
    db.execute(f"ALTER ROLE {role} WITH REPLICATION")
    db.execute(f"REVOKE SELECT ON t FROM {role}")
    code, err = _run(
        "--dsn", dsn, "--bootstrap-server", broker.bootstrap_servers, "--topic-prefix", prefix
    )
    _one_line_error(code, err, "may not read 'public.t'", f"GRANT SELECT ON public.t TO {role}")
    db.execute(f"GRANT SELECT ON t TO {role}")
    code, err = _run(
        "--dsn", dsn, "--bootstrap-server", broker.bootstrap_servers, "--topic-prefix", prefix
    )
    _one_line_error(
        code,
        err,
        "cannot create publication",
        "CREATE PUBLICATION riverbed_publication FOR TABLE public.t",
    )
    _assert_nothing_created(db, broker, prefix)


def test_slot_in_use(tmp_path: Path, db: Database, broker: EmbeddedBroker) -> None:
    db.execute("CREATE TABLE t (id int PRIMARY KEY)")
    prefix = f"p{db.name}"
    args = (
        "--dsn",
        db.dsn,
        "--bootstrap-server",
        broker.bootstrap_servers,
        "--topic-prefix",
        prefix,
        "--slot",
        f"s_{db.name}",
    )
    first = ConnectorProcess(tmp_path / "first.log", *args).start()
    try:
        wait_streaming(broker.bootstrap_servers, prefix)
        code, err = _run(*args)
        _one_line_error(code, err, "is in use")
        first.assert_alive()
    finally:
        first.close()


@pytest.fixture
def replica_cluster(tmp_path: Path) -> Iterator[PostgresCluster]:
    if postgres_bin_dir() is None:
        pytest.skip("PostgreSQL binaries not installed")
    with PostgresCluster.create(tmp_path, settings={"wal_level": "replica"}) as cluster:
        yield cluster


def test_wal_level_not_logical(replica_cluster: PostgresCluster, broker: EmbeddedBroker) -> None:
    replica_cluster_db = replica_cluster.dsn()
    code, err = _run(
        "--dsn",
        replica_cluster_db,
        "--bootstrap-server",
        broker.bootstrap_servers,
        "--topic-prefix",
        "walcheck",
    )
    _one_line_error(
        code, err, "wal_level is 'replica'", "wal_level = logical", "restart PostgreSQL"
    )


def test_foreign_slot_and_publication_without_the_table(
    db: Database, broker: EmbeddedBroker
) -> None:
    """A slot riverbed holds no position for is not taken over (nor dropped); a publication
    that exists without a captured table is named with the ALTER PUBLICATION to run."""
    db.execute("CREATE TABLE t (id int PRIMARY KEY)")
    db.execute("CREATE TABLE u (id int PRIMARY KEY)")
    slot = f"s_{db.name}"
    db.execute("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')", (slot,))
    prefix = f"p{db.name}"
    base = (
        "--dsn",
        db.dsn,
        "--bootstrap-server",
        broker.bootstrap_servers,
        "--topic-prefix",
        prefix,
    )
    code, err = _run(*base, "--slot", slot)
    _one_line_error(code, err, f"replication slot {slot!r} exists", "pg_drop_replication_slot")
    assert db.execute("SELECT 1 FROM pg_replication_slots WHERE slot_name = %s", (slot,))
    db.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
    db.execute("CREATE PUBLICATION only_t FOR TABLE t")
    code, err = _run(*base, "--slot", slot, "--publication", "only_t")
    _one_line_error(code, err, "does not publish 'public.u'", "ALTER PUBLICATION only_t ADD")
    code, err = _run(*base, "--slot", "Bad-Slot")
    _one_line_error(code, err, "invalid --slot")
